"""User code in every command, without editing the package.

- ``--code FILE.py`` (any command, repeatable; as spaCy's ``--code``) imports the file before the
  command runs, so the ``register_feature_set`` / ``register_model`` calls in it take effect.
  Each file is imported once per process, as a module named after its stem, and its folder is
  appended to ``sys.path`` so that the processes of a local Dask cluster import it by that name
  too (a remote cluster's workers need the file on their own path, or an installed package).
- Entry points of an installed distribution, read once when the command starts:

  - group ``prior.features``: ``NAME = "pkg.module:factory"``, a feature-set factory
    ``(BuildOptions) -> list[Feature]`` (``prior build --features NAME``); imported when a build
    asks for NAME;
  - group ``prior.models``: ``NAME = "pkg.module:ModelClass"``, a `PriorBertModel` subclass
    whose ``model_name`` is NAME (``prior train NAME-mini``); imported when first used.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from prior.errors import PriorError

CODE_FLAG = "--code"
FEATURE_GROUP = "prior.features"
MODEL_GROUP = "prior.models"
_entry_points_loaded = False


class CodeError(PriorError):
    """A ``--code`` file or an entry point that cannot be imported or registered."""


def import_code(path: str | Path) -> ModuleType:
    """Import the Python file ``path`` as the module named by its stem (once per process: a
    second call with the same file returns the first module)."""
    file = Path(path).expanduser().resolve()
    if not file.is_file() or file.suffix != ".py":
        raise CodeError(f"{CODE_FLAG} {path}: no such Python file; give the path of a .py file")
    name = file.stem
    known = sys.modules.get(name)
    if known is not None:
        if getattr(known, "__file__", None) and Path(str(known.__file__)).resolve() == file:
            return known
        raise CodeError(f"{CODE_FLAG} {path}: a module named {name!r} is imported already; rename the file")
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise CodeError(f"{CODE_FLAG} {path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in user code becomes one line
        del sys.modules[name]
        raise CodeError(f"{CODE_FLAG} {path}: importing it failed: {type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")) from None
    _importable_by_name(file)
    return module


def _importable_by_name(file: Path) -> None:
    """Dask worker processes receive a ``--code`` file's objects by reference (module and
    name) and import the module themselves: its folder goes at the end of ``sys.path``, which
    the local cluster's processes inherit."""
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.append(folder)


def split_code_args(args: Sequence[str], command: Any = None) -> tuple[list[str], list[str]]:
    """(files of every ``--code FILE`` / ``--code=FILE`` the user typed as an option, the other
    arguments), anywhere on the line before a ``--``.

    ``command``: the click command (group) the line is for. A token that is the value of
    another option (``--dataset --code=x.py``) is that option's value, never a ``--code``: the
    options of ``command`` and of each subcommand named on the line say which take a value.
    Without ``command`` every option is taken to be a flag."""
    files: list[str] = []
    rest: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg == "--":
            rest.extend(items[i:])
            break
        if arg == CODE_FLAG:
            if i + 1 >= len(items):
                raise CodeError(f"{CODE_FLAG} needs a file: {CODE_FLAG} FILE.py")
            files.append(items[i + 1])
            i += 2
            continue
        if arg.startswith(CODE_FLAG + "="):
            files.append(arg.split("=", 1)[1])
            i += 1
            continue
        rest.append(arg)
        if arg.startswith("-") and _takes_value(command, arg) and i + 1 < len(items):
            rest.append(items[i + 1])  # that option's value, whatever it looks like
            i += 2
            continue
        if not arg.startswith("-") and command is not None:
            command = getattr(command, "commands", {}).get(arg, command)  # a subcommand's own options
        i += 1
    return files, rest


def _takes_value(command: Any, token: str) -> bool:
    """Whether ``token`` is an option of ``command`` that reads the next token as its value
    (not a flag, not ``--name=value``)."""
    if command is None or (token.startswith("--") and "=" in token):
        return False
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", None) == "option" and token in (*param.opts, *param.secondary_opts):
            return not getattr(param, "is_flag", False) and not getattr(param, "count", False)
    return False


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=group))


def load_entry_points(force: bool = False) -> list[str]:
    """Register every ``prior.features`` and ``prior.models`` entry point (once per process
    unless ``force``); returns the names registered. Nothing is imported until used."""
    global _entry_points_loaded
    if _entry_points_loaded and not force:
        return []
    _entry_points_loaded = True
    features, models = _entry_points(FEATURE_GROUP), _entry_points(MODEL_GROUP)
    if not features and not models:
        return []
    from prior.pipeline.features.registry import FEATURE_SETS, register_feature_set
    from prior.trainers.models import MODELS

    names: list[str] = []
    for ep in features:
        if ep.name in FEATURE_SETS:
            continue  # built in, or registered by an earlier load
        register_feature_set(ep.name, _lazy_factory(ep))
        names.append(f"{FEATURE_GROUP}:{ep.name}")
    for ep in models:
        if ep.name in MODELS:
            continue
        if ":" not in ep.value:
            raise CodeError(f"entry point {MODEL_GROUP} {ep.name} = {ep.value!r} names no class; "
                            "write it as 'package.module:ModelClass'")
        MODELS[ep.name] = ep.value  # prior.trainers.models.model_class imports it when first used
        names.append(f"{MODEL_GROUP}:{ep.name}")
    return names


def _lazy_factory(ep: metadata.EntryPoint) -> Callable[[Any], list[Any]]:
    def factory(options: Any) -> list[Any]:
        try:
            loaded = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in becomes one line
            raise CodeError(f"entry point {FEATURE_GROUP} {ep.name} = {ep.value!r} cannot be imported: "
                            f"{type(exc).__name__}: {exc}") from None
        return list(loaded(options))

    return factory


def load_user_code(args: Sequence[str], command: Any = None) -> list[str]:
    """What the ``prior`` command does first: the entry points, then each ``--code`` file the
    user typed (:func:`split_code_args`); returns ``args`` without the ``--code`` options."""
    files, rest = split_code_args(args, command)
    load_entry_points()
    for file in files:
        import_code(file)
    return rest
