"""A small, fast reader of WordNet's database files (WNDB: ``index.*``, ``data.*``, ``*.exc``)
that answers like nltk's ``WordNetCorpusReader`` for what the Wu-Palmer feature asks of it.

Why: a build worker used to spend ~3.6 s on WordNet before its first matrix: ``import nltk``
(1.7 s, nltk imports most of itself) and nltk's reader load (1.9 s: every index line parsed
into Python ints up front, and data.adj scanned for satellites). This reader keeps each index
file as a dict of raw lines (0.09 s for all four), maps the data files, and parses a line only
when it is asked for: opening it costs a tenth of a second and no nltk import.

What it answers, equal to nltk 3.10 (tests/test_resources_wndb.py compares the two, over every
lemma of every index file in the slow test):

- ``synsets(lemma, pos=None)``: lower-cased, nltk's ``_morphy`` with exception lists (the
  exception forms replace the detachment rules, the form itself is always tried first, forms
  kept in order without duplicates and only where the index has them for that part of speech),
  parts of speech in nltk's order n, v, a, r; with ``pos="a"`` satellites come too (their
  ``pos()`` is ``"s"``), with ``pos="s"`` only satellites.
- synset names as nltk makes them: the first lemma lower-cased, the synset's own part of
  speech (``s`` for satellites) and the 1-based position of its offset in that lemma's index
  list, where a satellite counts among satellites only (``able.s.03``).
- ``synset(name)``, ``get_version()``, and per synset ``hypernyms()``, ``instance_hypernyms()``,
  ``lemmas()`` / ``lemma_names()`` (syntactic markers such as ``(a)`` stripped) and per lemma
  ``antonyms()``.

One difference, on purpose: nltk keeps a synset's pointers in a ``set``, so the order of
``hypernyms()`` varies with the process's hash seed; here it is the file's order. Wu-Palmer does
not depend on that order.

Synsets are interned per reader (one object per offset) and immutable once parsed; lookups are
safe from several threads (a race parses a line twice and keeps one result).
"""

from __future__ import annotations

import mmap
import os
import re
import threading
from pathlib import Path

from featurestore.errors import ResourceError

POS_LIST = ("n", "v", "a", "r")
FILE_OF_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
# WordNet's detachment rules (morphy(7WN)), in nltk's order; satellites use the adjective rules.
SUBSTITUTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
SUBSTITUTIONS["s"] = SUBSTITUTIONS["a"]
_MARKER = re.compile(r"(.*?)(\([^()]*\))?$")
_VERSION = re.compile(rb"WordNet (\d+|\d+\.\d+) Copyright")


class Lemma:
    """A word form of a synset."""

    __slots__ = ("_name", "synset", "_pointers")

    def __init__(self, name: str, synset: Synset) -> None:
        self._name = name
        self.synset = synset
        self._pointers: dict[str, list[tuple[str, int, int]]] = {}

    def name(self) -> str:
        return self._name

    def antonyms(self) -> list[Lemma]:
        """The antonyms (pointer ``!``) in the data file's order, like nltk's."""
        reader = self.synset._reader
        return [reader.synset_from_pos_and_offset(pos, offset).lemmas()[index]
                for pos, offset, index in self._pointers.get("!", [])]

    def __repr__(self) -> str:
        return f"Lemma('{self.synset.name()}.{self._name}')"


class Synset:
    """One synset, parsed from its data line on first use."""

    __slots__ = ("_reader", "_offset", "_pos", "_lemmas", "_pointers", "_name")

    def __init__(self, reader: WndbReader, pos: str, offset: int, lemmas: list[Lemma],
                 pointers: dict[str, list[tuple[str, int]]]) -> None:
        self._reader = reader
        self._pos = pos
        self._offset = offset
        self._lemmas = lemmas
        self._pointers = pointers
        self._name = ""

    def name(self) -> str:
        return self._name

    def pos(self) -> str:
        return self._pos

    def offset(self) -> int:
        return self._offset

    def lemmas(self) -> list[Lemma]:
        return list(self._lemmas)

    def lemma_names(self) -> list[str]:
        return [lemma._name for lemma in self._lemmas]

    def _related(self, symbol: str) -> list[Synset]:
        get = self._reader.synset_from_pos_and_offset
        return [get(pos, offset) for pos, offset in self._pointers.get(symbol, [])]

    def hypernyms(self) -> list[Synset]:
        return self._related("@")

    def instance_hypernyms(self) -> list[Synset]:
        return self._related("@i")

    def __repr__(self) -> str:
        return f"Synset('{self._name}')"


class WndbReader:
    """WordNet from a directory of WNDB files (see module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._index: dict[str, dict[str, bytes]] = {}
        self._exceptions: dict[str, dict[str, list[str]]] = {}
        self._data: dict[str, mmap.mmap | bytes] = {}
        self._offsets: dict[tuple[str, str], list[int]] = {}  # (lemma, pos) -> synset offsets
        self._synsets: dict[tuple[str, int], Synset] = {}  # (file pos, offset) -> synset
        for pos in POS_LIST:
            name = FILE_OF_POS[pos]
            self._index[pos] = self._read_index(f"index.{name}")
            self._exceptions[pos] = self._read_exceptions(f"{name}.exc")
            self._data[pos] = self._map(f"data.{name}")
        self._exceptions["s"] = self._exceptions["a"]
        self._version = self._read_version()

    # -- files ----------------------------------------------------------------------------------
    def _path(self, name: str) -> Path:
        path = self.directory / name
        if not path.is_file():
            raise ResourceError(f"WordNet file {path} is missing")
        return path

    def _read_index(self, name: str) -> dict[str, bytes]:
        """lemma -> its raw index line; license lines (leading space) are skipped."""
        raw = self._path(name).read_bytes()
        out: dict[str, bytes] = {}
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line or line[:1] == b" ":
                continue
            lemma, sep, _ = line.partition(b" ")
            if not sep:
                raise ResourceError(f"{self.directory / name}, line {number}: not an index line: {line[:80]!r}")
            out[lemma.decode("utf-8")] = line
        return out

    def _read_exceptions(self, name: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for line in self._path(name).read_text(encoding="utf-8").splitlines():
            terms = line.split()
            if terms:
                out[terms[0]] = terms[1:]
        return out

    def _map(self, name: str) -> mmap.mmap | bytes:
        path = self._path(name)
        with path.open("rb") as fh:
            try:
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError):  # empty file or a file system without mmap
                return path.read_bytes()

    def _read_version(self) -> str:
        match = _VERSION.search(bytes(self._data["a"][:4000]))
        return match.group(1).decode("ascii") if match else "unknown"

    def get_version(self) -> str:
        """The database version from data.adj's header, as nltk reads it ("3.0")."""
        return self._version

    # -- index --------------------------------------------------------------------------------
    def _index_offsets(self, lemma: str, pos: str) -> list[int]:
        """Offsets of ``lemma`` in the index of ``pos`` (``s``: the adjective index's satellites,
        in the index's order); [] when absent."""
        key = (lemma, pos)
        found = self._offsets.get(key)
        if found is not None:
            return found
        if pos == "s":
            found = [o for o in self._index_offsets(lemma, "a") if self._is_satellite(o)]
        else:
            line = self._index[pos].get(lemma)
            found = [] if line is None else self._parse_index_line(line, pos)
        self._offsets[key] = found
        return found

    def _parse_index_line(self, line: bytes, pos: str) -> list[int]:
        try:
            tokens = line.split()
            n_synsets = int(tokens[2])
            n_pointers = int(tokens[3])
            start = 4 + n_pointers + 2  # pointer symbols, sense_cnt, tagsense_cnt
            offsets = [int(t) for t in tokens[start:start + n_synsets]]
            if len(offsets) != n_synsets or n_synsets <= 0:
                raise ValueError(f"{n_synsets} synsets announced, {len(offsets)} found")
        except (ValueError, IndexError) as exc:
            raise ResourceError(f"{self.directory / ('index.' + FILE_OF_POS[pos])}: bad line for "
                                f"{tokens[0].decode('utf-8', 'replace')!r}: {exc}") from None
        return offsets

    def _has(self, lemma: str, pos: str) -> bool:
        if pos == "s":
            return lemma in self._index["a"]  # nltk keeps an ADJ_SAT entry (maybe empty) for every adjective
        return lemma in self._index[pos]

    def _is_satellite(self, offset: int) -> bool:
        data = self._data["a"]
        return data[offset + 12:offset + 14] == b"s "

    # -- morphy and lookups ---------------------------------------------------------------------
    def _morphy(self, form: str, pos: str) -> list[str]:
        """nltk's ``_morphy(form, pos, check_exceptions=True)``."""
        exceptions = self._exceptions[pos]
        if form in exceptions:
            forms = exceptions[form]
        else:
            forms = [form[: -len(old)] + new for old, new in SUBSTITUTIONS[pos] if form.endswith(old)]
        result: list[str] = []
        for candidate in [form, *forms]:
            if candidate not in result and self._has(candidate, pos):
                result.append(candidate)
        return result

    def morphy(self, form: str, pos: str | None = None) -> str | None:
        """The first base form, as nltk's ``morphy``: over n, v, a, r when ``pos`` is None."""
        forms = [f for p in (POS_LIST if pos is None else (pos,)) for f in self._morphy(form, p)]
        return forms[0] if forms else None

    def synsets(self, lemma: str, pos: str | None = None) -> list[Synset]:
        """The synsets of a word, exactly as nltk's ``synsets(lemma, pos)`` lists them."""
        lemma = lemma.lower()
        out = []
        for p in POS_LIST if pos is None else pos:
            for form in self._morphy(lemma, p):
                out.extend(self.synset_from_pos_and_offset(p, offset) for offset in self._index_offsets(form, p))
        return out

    def synset(self, name: str) -> Synset:
        """A synset by nltk name (``dog.n.01``)."""
        try:
            lemma, pos, number = name.lower().rsplit(".", 2)
            index = int(number) - 1
        except ValueError:
            raise ResourceError(f"{name!r} is not a synset name like dog.n.01") from None
        if pos not in FILE_OF_POS or not self._has(lemma, pos):
            raise ResourceError(f"WordNet has no lemma {lemma!r} with part of speech {pos!r}")
        offsets = self._index_offsets(lemma, pos)
        if not 0 <= index < len(offsets):
            raise ResourceError(f"lemma {lemma!r} with part of speech {pos!r} has {len(offsets)} "
                                f"sense{'s' if len(offsets) != 1 else ''}, not {index + 1}")
        synset = self.synset_from_pos_and_offset(pos, offsets[index])
        if pos == "s" and synset._pos != "s":
            raise ResourceError(f"adjective satellite requested but only plain adjective found for lemma {lemma!r}")
        return synset

    # -- data lines ---------------------------------------------------------------------------
    def synset_from_pos_and_offset(self, pos: str, offset: int) -> Synset:
        file_pos = "a" if pos == "s" else pos
        key = (file_pos, offset)
        synset = self._synsets.get(key)
        if synset is None:
            synset = self._parse_synset(file_pos, offset)
            synset = self._synsets.setdefault(key, synset)
        return synset

    def _parse_synset(self, file_pos: str, offset: int) -> Synset:
        data = self._data[file_pos]
        where = f"{self.directory / ('data.' + FILE_OF_POS[file_pos])} at offset {offset}"
        end = data.find(b"\n", offset)
        line = bytes(data[offset:end if end >= 0 else len(data)]).decode("utf-8")
        columns = line.split("|", 1)[0].split()
        try:
            if int(columns[0]) != offset:
                raise ValueError(f"the line there starts with {columns[0]!r}")
            ss_type = columns[2]
            n_lemmas = int(columns[3], 16)
            lemmas_raw = columns[4:4 + 2 * n_lemmas:2]
            at = 4 + 2 * n_lemmas
            n_pointers = int(columns[at])
            pointer_columns = columns[at + 1:at + 1 + 4 * n_pointers]
            if len(lemmas_raw) != n_lemmas or len(pointer_columns) != 4 * n_pointers:
                raise ValueError("line shorter than its counts announce")
        except (ValueError, IndexError) as exc:
            raise ResourceError(f"{where}: malformed synset line: {exc}") from None
        synset = Synset(self, ss_type, offset, [], {})
        for raw in lemmas_raw:
            match = _MARKER.match(raw)
            synset._lemmas.append(Lemma(match.group(1) if match else raw, synset))
        for i in range(n_pointers):
            symbol, target, target_pos, ids = pointer_columns[4 * i:4 * i + 4]
            if ids == "0000":
                synset._pointers.setdefault(symbol, []).append((target_pos, int(target)))
            else:
                source = synset._lemmas[int(ids[:2], 16) - 1]
                source._pointers.setdefault(symbol, []).append((target_pos, int(target), int(ids[2:], 16) - 1))
        head = synset._lemmas[0]._name.lower()
        try:
            number = self._index_offsets(head, ss_type).index(offset) + 1
        except ValueError:
            raise ResourceError(f"{where}: the index of {ss_type!r} does not list this synset under its "
                                f"first lemma {head!r}") from None
        synset._name = f"{head}.{ss_type}.{number:02d}"
        return synset


_readers: dict[str, WndbReader] = {}
_lock = threading.Lock()


def open_wndb(directory: str | os.PathLike[str]) -> WndbReader:
    """The reader of a WNDB directory, opened once per process and directory."""
    key = str(Path(directory).resolve())
    with _lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = WndbReader(key)
    return reader
