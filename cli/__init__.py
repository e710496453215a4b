# this folder is the package prior.cli (prior/cli links here); under its folder name it would load a second copy
if __name__ != "prior.cli":
    raise ImportError(f"{__name__!r} is part of prior: import prior.cli instead")

from prior.cli import recipe as _recipe

_recipe.install()  # errors below the CLI print `prior build …` lines and read flags from here on
