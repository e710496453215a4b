"""A parser spec: what ``--parser``, ``parser=`` and a store's parses records name, as
``NAME`` or ``NAME:ARG`` (``biaffine``, ``biaffine:<model>``, ``spacy``, ``spacy:<package>``).

The one place the text is split (:meth:`ParserSpec.parse`) and the one place a spec is judged
for trust (:meth:`ParserSpec.loads_code`): a spec a store or a checkpoint recorded is data, and
may be used only where it loads no pickle. It lives in the shared root because two layers judge
specs: the store, whose records name them (`prior.featurestore.selection` reads a parses
record's spec and marks a recorded one that loads code), and the pipeline, which loads parsers;
which names exist and how a parser is loaded is the pipeline's (`prior.pipeline.parsers`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from prior.errors import PriorError

__all__ = ["ParserSpec", "ParserSpecError", "loads_code"]

_PACKAGE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class ParserSpecError(PriorError, ValueError):
    """A parser spec that is not ``NAME`` or ``NAME:ARG`` (an empty name or argument)."""


@dataclass(frozen=True)
class ParserSpec:
    """A parsed parser spec: ``name`` (the backend) and ``arg`` (what follows the first ``:``;
    None when there is no ``:``). ``str()`` gives the text back."""

    name: str
    arg: str | None = None

    @classmethod
    def parse(cls, text: str) -> ParserSpec:
        """The spec ``text`` names; :class:`ParserSpecError` (one line) when the name or the
        argument after ``:`` is empty. Whether the name is a known parser is not judged here."""
        name, sep, arg = text.partition(":")
        if not name or (sep and not arg):
            why = "no parser name" if not name else "nothing after ':'"
            raise ParserSpecError(f"parser spec {text!r} is malformed ({why}); write NAME or NAME:ARG, e.g. "
                                  "biaffine, biaffine:<model dir, file or supar name>, spacy, spacy:<spaCy package>")
        return cls(name, arg if sep else None)

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    def loads_code(self) -> bool:
        """Whether loading this parser would load something that can run code (a supar file or
        a published supar model name: a pickle), judged from the text and one directory test,
        opening no file. ``spacy``, ``spacy:<package name>``, ``biaffine`` (the shipped model)
        and ``biaffine:<directory>`` (a model exported as safetensors + JSON) do not."""
        if self.name == "spacy":
            return self.arg is not None and not _PACKAGE_NAME.fullmatch(self.arg)
        if self.name in ("biaffine", "biaffine-int8"):
            return self.arg is not None and not Path(self.arg).expanduser().is_dir()
        return True


def loads_code(spec: str) -> bool:
    """Whether the ``--parser`` value ``spec`` would load something that can run code
    (:meth:`ParserSpec.loads_code`); a malformed spec counts as one that does. A spec a store
    or a checkpoint recorded may be used only when this is false."""
    try:
        return ParserSpec.parse(spec).loads_code()
    except ParserSpecError:
        return True

