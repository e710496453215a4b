from prior.cli import recipe as _recipe

_recipe.install()  # errors below the CLI print `prior build …` lines and read flags from here on
