"""The store's tree: folders where folders belong and files where files belong.

A store's root holds the file ``STORE.json`` and the folders ``catalog/``, ``segments/`` and
``leases/`` (`prior.featurestore.segments`, `prior.featurestore.lease`). A folder made where a
file belongs, or a file where a folder belongs (by hand, by a copy gone wrong), is found here
and named in one line, never met as a traceback deeper down:

- ``STORE.json``, ``catalog/`` or ``segments/`` of the wrong kind hold (or should hold) what the
  store committed: nothing removes them; ``verify`` reports them and ``gc`` and ``build``
  refuse, saying what to restore;
- ``leases/`` of the wrong kind, a lease file that is a folder or a lease's claims that are a
  file hold only what running builds write: ``gc`` removes them (a lease that cannot be read is
  dead, `prior.featurestore.lease`), ``verify`` says so, ``build`` refuses until then.

Deeper down the checks are where the reads are: a catalog entry that is not a file is a
damaged record (`prior.featurestore.catalog`), a committed file that is a folder is a damaged
segment (`prior.featurestore.checked`, ``verify``), an uncommitted ``segments/`` entry of any
kind is a leftover ``gc`` removes.
"""

from __future__ import annotations

from dataclasses import dataclass

from prior.featurestore.catalog import CATALOG, SEGMENTS
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS
from prior.featurestore.lease import LEASES

STORE_FILE = "STORE.json"


@dataclass(frozen=True)
class Misplaced:
    """A path of the wrong kind: ``removable`` when ``gc`` may remove it (it holds no committed data)."""

    path: str
    problem: str
    removable: bool

    def line(self, location: str) -> str:
        fix = ("`prior store gc` removes it" if self.removable else
               "nothing removes it: put back what belongs there (from a copy of the store), or build into a new store")
        return f"{self.path} in the store at {location} {self.problem}; {fix}"


def _kind(fs: StoreFS, rel: str) -> str | None:
    """"file", "folder" or None (absent); a link is left to the link checks (`StoreFS.inside`)."""
    if not fs.inside(rel) or not fs.exists(rel):
        return None
    return "file" if fs.is_file(rel) else "folder"


def misplaced(fs: StoreFS) -> list[Misplaced]:
    """Every path of the wrong kind among the store's own (module docstring)."""
    out = []
    if _kind(fs, STORE_FILE) == "folder":
        out.append(Misplaced(STORE_FILE, "is a folder where the store's format file belongs", False))
    for folder, removable in ((CATALOG, False), (SEGMENTS, False), (LEASES, True)):
        if _kind(fs, folder) == "file":
            out.append(Misplaced(folder, "is a file where a folder belongs", removable))
    if _kind(fs, LEASES) == "folder":
        for name in fs.listdir(LEASES):
            rel = f"{LEASES}/{name}"
            kind = _kind(fs, rel)
            if name.endswith(".json") and kind == "folder":
                out.append(Misplaced(rel, "is a folder where a lease file belongs (the lease counts as dead)", True))
            elif "." not in name and kind == "file":
                out.append(Misplaced(rel, "is a file where a lease's claims folder belongs", True))
    return out


def check_tree(fs: StoreFS) -> None:
    """`StoreError` in one line when the store holds a path of the wrong kind (what a build
    checks before it writes)."""
    if found := misplaced(fs):
        more = f" (and {len(found) - 1} more: `prior store verify` lists them)" if len(found) > 1 else ""
        raise StoreError(found[0].line(fs.url) + more)


__all__ = ["STORE_FILE", "Misplaced", "check_tree", "misplaced"]
