"""What a feature segment holds, as records: an entry (`EntryInfo`: what was computed, with
which parameters, from which parse), an entry's items in memory (`FeatureData`), and a resource
table (`Resource`: an IDF table, a vocabulary). Plain data; `prior.featurestore.segments` reads
and writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from prior.errors import NotFoundError
from prior.featurestore import keys as keymod
from prior.featurestore.errors import StoreError
from prior.featurestore.recipe import Recipe, read_recorded
from prior.layouts.kinds import Layout
from prior.layouts.kinds import from_json as layout_from_json
from prior.layouts.kinds import to_json as layout_json
from prior.layouts.ragged import Ragged


@dataclass(frozen=True)
class EntryInfo:
    """A feature entry: what was computed, with which parameters, from which parse.

    ``options`` are the build options (``prior build -o FEATURE.NAME=VALUE``) whose values
    differ from the feature's defaults: ``{}`` marks the entry a build without ``-o`` makes,
    the one reads pick when no parameters are given (`prior.featurestore.selection`). ``built_by``
    is the ``--features`` name of the build that makes the entry (``dep`` makes ``tfidf``).
    ``recipe`` is what of a build makes this entry again (its feature, non-default options and
    input files: `prior.featurestore.recipe`), for the build an error names.
    ``layout`` says what the values are (`prior.layouts.kinds`), so readers need no feature names.
    None of these is part of the key: the key is ``name@version`` + params + parse.
    """

    key: str
    name: str
    version: int
    params: dict[str, Any]
    parse: str | None
    scope: str  # "sentence" | "pair"
    components: tuple[str, ...]
    layout: Layout
    options: dict[str, Any] = field(default_factory=dict)
    built_by: str | None = None
    recipe: Recipe | None = None

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def is_default(self) -> bool:
        """Made by a build without options for its feature."""
        return not self.options

    def target(self) -> dict[str, Any]:
        out = {"entry": self.key, "name": self.name, "version": self.version, "params": self.params,
               "parse": self.parse, "scope": self.scope, "components": list(self.components),
               "options": dict(self.options), "layout": layout_json(self.layout)}
        if self.built_by is not None:
            out["built_by"] = self.built_by
        if self.recipe is not None:
            out["recipe"] = self.recipe.to_dict()
        return out

    @classmethod
    def from_target(cls, t: Mapping[str, Any]) -> EntryInfo:
        try:
            layout = layout_from_json(t["layout"])
        except (TypeError, ValueError) as exc:
            raise StoreError(f"entry {t.get('entry')}: its recorded layout is unusable ({exc})") from None
        return cls(key=t["entry"], name=t["name"], version=int(t["version"]), params=dict(t["params"]),
                   parse=t["parse"], scope=t["scope"], components=tuple(t["components"]), layout=layout,
                   options=dict(t["options"]), built_by=t.get("built_by"), recipe=read_recorded(t))


def make_entry(name: str, version: int, params: Mapping[str, Any], parse: str | None, scope: str,
               components: Sequence[str], *, layout: Layout, options: Mapping[str, Any] | None = None,
               built_by: str | None = None, recipe: Recipe | None = None) -> EntryInfo:
    """An entry record: its key from name, version, params and parse (`prior.featurestore.keys`);
    ``layout``: what its values are (`prior.layouts.kinds`), which every reader goes by."""
    if scope not in ("sentence", "pair"):
        raise StoreError(f"feature {name}: scope must be 'sentence' or 'pair', not {scope!r}")
    if layout.scope != scope:
        raise StoreError(f"feature {name}: a {layout.kind} layout is per {layout.scope}, not per {scope}")
    return EntryInfo(key=keymod.entry_key(name, version, params, parse), name=name, version=version,
                     params=dict(params), parse=parse, scope=scope, components=tuple(components), layout=layout,
                     options=dict(options or {}), built_by=built_by, recipe=recipe)


@dataclass
class FeatureData:
    """Every committed item of one entry, in memory: per component one `Ragged` array.

    ``get(key)`` returns component → array views (no copies). A key written twice (two
    concurrent builds) resolves to its first committed copy.
    """

    entry: EntryInfo
    keys: np.ndarray
    index: dict[str, int]
    components: dict[str, Ragged]

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: str) -> bool:
        return key in self.index

    def array(self, component: str, i: int) -> np.ndarray:
        return self.components[component].get(i)

    def get(self, key: str) -> dict[str, np.ndarray]:
        try:
            i = self.index[key]
        except KeyError:
            raise NotFoundError(f"{self.entry.spec} (entry {self.entry.key}) has no item for key {key}") from None
        return {comp: self.array(comp, i) for comp in self.entry.components}

    def positions(self, keys: Sequence[str]) -> np.ndarray:
        """Row of each key in this table, -1 where absent."""
        return np.fromiter((self.index.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))


@dataclass(frozen=True)
class Resource:
    kind: str
    key: str
    table: pa.Table
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
