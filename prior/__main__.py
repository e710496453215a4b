"""``python -m prior``: the ``prior`` command."""

from prior.cli.main import main

if __name__ == "__main__":
    main()
