"""The `prior` CLI run in-process, for tests: the output of a command that must succeed, or of
one that must fail with a given exit code."""

from __future__ import annotations

from typer.testing import CliRunner

from prior.cli.main import app

runner = CliRunner()


def _invoke(args: tuple[object, ...], input: str | None) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args], input=input)
    return result.exit_code, result.output


def cli(*args: object, input: str | None = None) -> str:
    """The output of ``prior *args``, which must exit 0."""
    code, output = _invoke(args, input)
    assert code == 0, output
    return output


def cli_error(*args: object, code: int = 1) -> str:
    """The output of ``prior *args``, which must exit with ``code``."""
    got, output = _invoke(args, None)
    assert got == code, output
    return output


def one_line_error(*args: object) -> str:
    """The one line of ``prior *args``, which must fail with ``error: …`` and nothing else."""
    output = cli_error(*args)
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]
