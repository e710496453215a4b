"""A small, fast reader of WordNet's database files (WNDB: ``index.*``, ``data.*``, ``*.exc``)
that answers like nltk 3.10's ``WordNetCorpusReader`` for what the Wu-Palmer feature asks.

Why: a build worker used to spend ~3.6 s on WordNet before its first matrix: ``import nltk``
(1.7 s, nltk imports most of itself) and nltk's reader load (1.9 s: every line of the four index
files parsed into dicts of Python ints, data.adj scanned for satellites). This reader parses
nothing up front: opening it maps the four data files (well under a millisecond); the first
lookup of a part of speech reads that index file and splits it into its lines (≈ 15 ms for all
four); a synset's data line is parsed when the synset is first asked for. No nltk import.

How lookups work: WNDB index files are sorted by lemma (WordNet's own C library binary-searches
them), so a lemma is found by bisecting the file's lines for ``b"<lemma> "``. That is exact only
where the file is what it should be, which is checked when the file is read: printable ASCII and
``\\n`` line ends only (so lines and tokens split as nltk's readline and ``str.split`` split
them), header lines (leading space) first, every other line strictly greater than the one before.
A file that fails the check is read nltk's way instead (decoded, ``splitlines``, a dict from the
first token of each line to the line; the last line wins, as in nltk's dict).

What it answers, equal to nltk (``tests/test_resources_wndb.py`` compares the two on the same
files; the slow test covers every lemma of every index file under every part of speech):

- ``synsets(lemma, pos=None)``: lower-cased, then nltk's ``_morphy(form, pos,
  check_exceptions=True)``: the form itself first, then either its exception-list entries or
  (when it has none) the detachment rules' results, kept in order without duplicates and only
  where the index has them for that part of speech; ``pos=None`` runs over n, v, a, r (nltk's
  ``POS_LIST``); ``pos="a"`` lists satellites too (their ``pos()`` is ``"s"``), ``pos="s"``
  only satellites (every adjective lemma counts as present for ``"s"``, with its satellites,
  possibly none, as nltk's index map has it).
- synset names as nltk derives them: the first lemma lower-cased, the synset's own part of
  speech (``s`` for satellites) and the 1-based position of its offset in that lemma's index
  list, where a satellite counts among satellites only (``able.s.03``).
- ``synset(name)`` with nltk's indexing (``dog.n.00`` is the last sense, as ``list[-1]``) and
  nltk's error messages, as :class:`WordNetError`; ``get_version()`` from data.adj as nltk reads
  it (the first ``Word[nN]et <version> Copyright``; ``None`` when there is none).
- per synset ``hypernyms()`` and ``instance_hypernyms()`` in nltk's order. nltk keeps a
  synset's pointers of one kind in a ``set`` and lists the set, so its order follows the
  process's string-hash seed; this reader builds the same set (same tuples, added in the file's
  order) and lists it, which gives the same order in the same process. ``lemmas()`` /
  ``lemma_names()`` (syntactic markers such as ``(a)`` stripped by nltk's regex) and per lemma
  ``antonyms()``, whose pointers nltk keys by (source lemma *name*, symbol): kept that way.
- Synsets and lemmas compare and hash by name, as nltk's do.

Differences, on damaged files only: nltk validates every index line when it loads and warns
(returning ``None``) for an offset with no synset line; here a malformed line is reported when
it is first used, and every damage is a :class:`~prior.errors.ResourceError` that names
the file and the line or offset. Verb frames and glosses are not read.

Synsets are interned per reader (one object per data file and offset) and immutable once
parsed. Lookups are safe from several threads: files are loaded under a lock, and a race to
parse the same synset keeps one result.
"""

from __future__ import annotations

import mmap
import operator
import os
import re
import threading
from bisect import bisect_left
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

from prior.errors import PriorError, ResourceError

POS_LIST = ("n", "v", "a", "r")  # nltk's POS_LIST: the order of synsets(lemma) without pos
FILE_OF_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
REQUIRED_FILES = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb",
                  "index.adj", "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc")
# nltk's MORPHOLOGICAL_SUBSTITUTIONS (morphy(7WN)'s detachment rules), in nltk's order.
SUBSTITUTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
SUBSTITUTIONS["s"] = SUBSTITUTIONS["a"]
_MARKER = re.compile(r"(.*?)(\([^()]*\))?$")  # nltk's split of "name(marker)"
_VERSION = re.compile(rb"Word[nN]et (\d+\+?|\d+\.\d+) Copyright")  # nltk's get_version pattern
_PLAIN = bytes(range(0x20, 0x7F)) + b"\n"  # printable ASCII and \n
_UNSET = object()


class WordNetError(PriorError, LookupError):
    """A synset name that WordNet does not have (nltk's ``WordNetError`` cases), or an unknown
    part of speech."""


def _file_error(path: Path, where: str, problem: str) -> ResourceError:
    return ResourceError(f"WordNet file {path}, {where}: {problem}")


class _Named:
    """Equality, order and hash by name, as nltk's ``_WordNetObject`` (lemmas and synsets
    compare with each other by name too)."""

    __slots__ = ()
    _name: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Named):
            return NotImplemented
        return self._name == other._name

    def __lt__(self, other: _Named) -> bool:
        return self._name < other._name

    def __hash__(self) -> int:
        return hash(self._name)


class Lemma(_Named):
    """One word form of a synset (nltk's ``Lemma``: ``name()``, ``synset()``, ``antonyms()``)."""

    __slots__ = ("_name", "_synset", "_syntactic_marker")

    def __init__(self, synset: Synset, name: str, syntactic_marker: str | None) -> None:
        self._synset = synset
        self._name = name
        self._syntactic_marker = syntactic_marker

    def name(self) -> str:
        return self._name

    def synset(self) -> Synset:
        return self._synset

    def syntactic_marker(self) -> str | None:
        """``"(a)"``, ``"(p)"`` or ``"(ip)"`` for some adjectives, else None."""
        return self._syntactic_marker

    def related(self, symbol: str) -> list[Lemma]:
        """Lemmas this lemma points to with a lexical pointer ``symbol``, in the file's order."""
        return self._synset._lemma_related(self._name, symbol)

    def antonyms(self) -> list[Lemma]:
        return self._synset._lemma_related(self._name, "!")

    def __repr__(self) -> str:
        return f"Lemma('{self._synset._name}.{self._name}')"


class Synset(_Named):
    """One synset (nltk's ``Synset``, the part the Wu-Palmer feature uses), parsed from its data
    line when the reader is first asked for it; get synsets from a :class:`WndbReader`."""

    __slots__ = (
        "_lemma_names",
        "_lemma_pointers",
        "_lemmas",
        "_name",
        "_offset",
        "_pointers",
        "_pos",
        "_reader",
        "_related_cache",
    )

    def __init__(self, reader: WndbReader, offset: int, pos: str, lemmas: list[tuple[str, str | None]],
                 pointers: dict[str, list[tuple[str, int]]],
                 lemma_pointers: dict[tuple[str, str], list[tuple[str, int, int]]], name: str) -> None:
        self._reader = reader
        self._offset = offset
        self._pos = pos
        self._name = name
        self._lemmas = [Lemma(self, lemma, marker) for lemma, marker in lemmas]
        self._lemma_names = [lemma for lemma, _ in lemmas]
        self._pointers = pointers
        self._lemma_pointers = lemma_pointers
        self._related_cache: dict[str, tuple[Synset, ...]] = {}

    def name(self) -> str:
        return self._name

    def pos(self) -> str:
        return self._pos

    def offset(self) -> int:
        return self._offset

    def lemmas(self) -> list[Lemma]:
        return list(self._lemmas)

    def lemma_names(self) -> list[str]:
        return list(self._lemma_names)

    def related(self, symbol: str) -> list[Synset]:
        """Synsets this synset points to with a semantic pointer ``symbol`` (``@`` hypernym,
        ``@i`` instance hypernym, ``~`` hyponym, ``&`` similar to, …), in nltk's order."""
        found = self._related_cache.get(symbol)
        if found is None:
            targets: set[tuple[str, int]] = set()
            for target in self._pointers.get(symbol, ()):
                targets.add(target)  # one add at a time, as nltk builds its set: same order
            get = self._reader.synset_from_pos_and_offset
            found = self._related_cache[symbol] = tuple(get(pos, offset) for pos, offset in targets)
        return list(found)

    def hypernyms(self) -> list[Synset]:
        return self.related("@")

    def instance_hypernyms(self) -> list[Synset]:
        return self.related("@i")

    def _lemma_related(self, lemma_name: str, symbol: str) -> list[Lemma]:
        get = self._reader.synset_from_pos_and_offset
        out = []
        for pos, offset, index in self._lemma_pointers.get((lemma_name, symbol), ()):
            target = get(pos, offset)
            try:
                out.append(target._lemmas[index])
            except IndexError:
                raise _file_error(self._reader._data_path(self._pos), f"offset {self._offset}",
                                  f"pointer {symbol!r} to lemma {index + 1} of {target._name}, which has "
                                  f"{len(target._lemmas)}") from None
        return out

    def __repr__(self) -> str:
        return f"Synset('{self._name}')"


class _Index:
    """One ``index.<pos>`` file: lemma -> (line number, line)."""

    __slots__ = ("_dict", "_lines", "_start", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = _read_bytes(path)
        self._lines: list[bytes] = []
        self._start = 0
        self._dict: dict[str, tuple[int, str]] | None = None
        if not raw.translate(None, _PLAIN):  # plain: nothing left once those bytes are deleted
            lines = raw.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            start = 0
            while start < len(lines) and lines[start][:1] == b" ":
                start += 1
            body, after = islice(lines, start, None), islice(lines, start + 1, None)
            if (start == len(lines) or lines[start]) and all(map(operator.lt, body, after)):
                self._lines, self._start = lines, start
                return
        # Not sorted plain ASCII: nltk's own reading of the file.
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _file_error(path, f"byte {exc.start}", "not UTF-8") from None
        table: dict[str, tuple[int, str]] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if line.startswith(" "):
                continue
            tokens = line.split()
            if not tokens:
                raise _file_error(path, f"line {number}", "empty line")
            table[tokens[0]] = (number, line)
        self._dict = table

    @property
    def sorted(self) -> bool:
        """True when lookups bisect the file's lines (it passed the check), False for a dict."""
        return self._dict is None

    def find(self, lemma: str) -> tuple[int, str] | None:
        """The (1-based line number, line) of ``lemma``'s entry, or None."""
        if self._dict is not None:
            return self._dict.get(lemma)
        if not lemma or " " in lemma or not lemma.isascii():
            return None  # the file is plain ASCII, and a lemma is one token
        key = lemma.encode("ascii") + b" "
        lines = self._lines
        i = bisect_left(lines, key, self._start)
        if i == len(lines) or not lines[i].startswith(key):
            return None
        while i + 1 < len(lines) and lines[i + 1].startswith(key):
            i += 1  # the same lemma twice: nltk's dict keeps the last line
        return i + 1, lines[i].decode("ascii")



def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ResourceError(f"WordNet file {path} cannot be read: {exc}") from None


def _map(path: Path) -> mmap.mmap | bytes:
    try:
        with path.open("rb") as fh:
            try:
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError):  # an empty file, or a file system without mmap
                return fh.read()
    except OSError as exc:
        raise ResourceError(f"WordNet file {path} cannot be read: {exc}") from None


class WndbReader:
    """WordNet from a directory of WNDB files, answering as nltk's reader does (module
    docstring). Get one with :func:`open_wndb`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        missing = [name for name in REQUIRED_FILES if not (self.directory / name).is_file()]
        if missing:
            raise ResourceError(
                f"WordNet file {self.directory / missing[0]} is missing"
                + (f" (and {', '.join(missing[1:])})" if len(missing) > 1 else "")
                + f"; a WordNet dict directory holds {', '.join(REQUIRED_FILES)}")
        self._lock = threading.Lock()
        self._data = {pos: _map(self._data_path(pos)) for pos in POS_LIST}
        self._indexes: dict[str, _Index] = {}
        self._exceptions: dict[str, dict[str, list[str]]] = {}
        self._offsets: dict[tuple[str, str], tuple[int, ...]] = {}  # found (lemma, pos) only
        self._synsets: dict[tuple[str, int], Synset] = {}           # (file pos, offset)
        self._version: object = _UNSET

    def __repr__(self) -> str:
        return f"WndbReader({str(self.directory)!r})"

    # -- files ----------------------------------------------------------------------------------
    def _data_path(self, pos: str) -> Path:
        return self.directory / f"data.{FILE_OF_POS[pos]}"

    def _index(self, pos: str) -> _Index:
        index = self._indexes.get(pos)
        if index is None:
            with self._lock:
                index = self._indexes.get(pos)
                if index is None:
                    index = self._indexes[pos] = _Index(self.directory / f"index.{FILE_OF_POS[pos]}")
        return index

    def _exception_map(self, pos: str) -> dict[str, list[str]]:
        """nltk's ``_exception_map[pos]``: inflected form -> base forms (the last line wins)."""
        if pos == "s":
            pos = "a"  # satellites share the adjectives' list, as in nltk
        table = self._exceptions.get(pos)
        if table is None:
            if pos not in FILE_OF_POS:
                raise WordNetError(f"unknown part of speech {pos!r}: use one of n, v, a, s, r")
            path = self.directory / f"{FILE_OF_POS[pos]}.exc"
            with self._lock:
                table = self._exceptions.get(pos)
                if table is None:
                    try:
                        text = _read_bytes(path).decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise _file_error(path, f"byte {exc.start}", "not UTF-8") from None
                    table = {}
                    for number, line in enumerate(text.splitlines(), start=1):
                        terms = line.split()
                        if not terms:
                            raise _file_error(path, f"line {number}", "empty line")
                        table[terms[0]] = terms[1:]
                    self._exceptions[pos] = table
        return table

    def get_version(self) -> str | None:
        """The database version as nltk's ``get_version`` reads it from data.adj ("3.0")."""
        if self._version is _UNSET:
            match = _VERSION.search(self._data["a"])
            self._version = match.group(1).decode("ascii") if match else None
        return self._version  # type: ignore[return-value]

    # -- index ----------------------------------------------------------------------------------
    def _index_offsets(self, lemma: str, pos: str) -> tuple[int, ...] | None:
        """nltk's ``_lemma_pos_offset_map[lemma][pos]``: the synset offsets of ``lemma`` in the
        index of ``pos`` (``s``: those of the adjective index that are satellites, in its order);
        None when the index has no such entry."""
        key = (lemma, pos)
        found = self._offsets.get(key)
        if found is not None:
            return found
        if pos == "s":
            adjective = self._index_offsets(lemma, "a")
            if adjective is None:
                return None
            found = tuple(o for o in adjective if self._is_satellite(o))
        else:
            entry = self._index(pos).find(lemma)
            if entry is None:
                return None
            found = self._parse_index_line(pos, *entry)
        self._offsets[key] = found
        return found

    def _parse_index_line(self, pos: str, number: int, line: str) -> tuple[int, ...]:
        """The offsets of an index line, checked as nltk checks them."""
        tokens = line.split()
        try:
            if tokens[1] != ("a" if pos == "s" else pos):
                raise ValueError(f"part of speech {tokens[1]!r} in the index of {pos!r}")
            n_synsets = int(tokens[2])
            if n_synsets <= 0:
                raise ValueError(f"synset count {n_synsets}")
            n_pointers = int(tokens[3])
            at = 4 + n_pointers
            n_senses = int(tokens[at])
            if n_senses != n_synsets:
                raise ValueError(f"sense count {n_senses} differs from synset count {n_synsets}")
            offsets = tuple(int(t) for t in tokens[at + 2:at + 2 + n_synsets])
            if len(offsets) != n_synsets:
                raise ValueError(f"{n_synsets} synset offsets announced, {len(offsets)} found")
        except (ValueError, IndexError) as exc:
            raise _file_error(self._index(pos).path, f"line {number}",
                              f"malformed index line ({exc})") from None
        return offsets

    def _is_satellite(self, offset: int) -> bool:
        """Whether the adjective synset line at ``offset`` has type ``s`` (nltk's satellite set)."""
        head = bytes(self._data["a"][offset:offset + 40]).split(None, 3)
        if len(head) < 3 or head[0] != f"{offset:08d}".encode():
            raise _file_error(self._data_path("a"), f"offset {offset}",
                              "the index points here, but no synset line starts here")
        return head[2] == b"s"

    # -- morphy and lookups ---------------------------------------------------------------------
    def _has(self, form: str, pos: str) -> bool:
        # nltk keeps an ADJ_SAT entry, possibly empty, for every lemma of index.adj
        return self._index("a" if pos == "s" else pos).find(form) is not None

    def _morphy(self, form: str, pos: str) -> list[str]:
        """nltk's ``_morphy(form, pos, check_exceptions=True)``."""
        exceptions = self._exception_map(pos)
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
        """nltk's ``morphy``: the first base form of ``form`` (over n, v, a, r when ``pos`` is
        None), or None."""
        for p in (pos,) if pos else POS_LIST:
            analyses = self._morphy(form, p)
            if analyses:
                return analyses[0]
        return None

    def synsets(self, lemma: str, pos: str | Iterable[str] | None = None) -> list[Synset]:
        """The synsets of a word, exactly as nltk's ``synsets(lemma, pos)`` lists them."""
        get = self.synset_from_pos_and_offset
        return [get(p, offset) for p, offset in self.synset_addresses(lemma, pos)]

    def synset_addresses(self, lemma: str, pos: str | Iterable[str] | None = None) -> list[tuple[str, int]]:
        """(part of speech asked, offset) of each of ``synsets(lemma, pos)``, in its order,
        without reading the synsets' data lines."""
        lemma = lemma.lower()
        out: list[tuple[str, int]] = []
        for p in POS_LIST if pos is None else pos:
            for form in self._morphy(lemma, p):
                out.extend((p, offset) for offset in self._index_offsets(form, p) or ())
        return out

    def synset(self, name: str) -> Synset:
        """A synset by nltk name (``dog.n.01``), as nltk's ``synset(name)`` finds it."""
        try:
            lemma, pos, number = name.lower().rsplit(".", 2)
            index = int(number) - 1
        except ValueError:
            raise WordNetError(f"{name!r} is not a synset name like 'dog.n.01'") from None
        offsets = self._index_offsets(lemma, pos) if pos in FILE_OF_POS else None
        if offsets is None:
            raise WordNetError(f"No lemma {lemma!r} with part of speech {pos!r}")
        try:
            offset = offsets[index]
        except IndexError:
            n = len(offsets)
            raise WordNetError(f"Lemma {lemma!r} with part of speech {pos!r} only has {n} "
                               f"{'sense' if n == 1 else 'senses'}") from None
        synset = self.synset_from_pos_and_offset(pos, offset)
        if pos == "s" and synset._pos == "a":
            raise WordNetError("Adjective satellite requested but only plain adjective found "
                               f"for lemma {lemma!r}")
        if not (synset._pos == pos or (pos == "a" and synset._pos == "s")):
            raise _file_error(self._data_path(pos), f"offset {offset}",
                              f"index.{FILE_OF_POS[pos]} lists a synset of part of speech {synset._pos!r}")
        return synset

    # -- data lines -----------------------------------------------------------------------------
    def synset_from_pos_and_offset(self, pos: str, offset: int) -> Synset:
        """The synset at byte ``offset`` of the data file of ``pos`` (interned)."""
        file_pos = "a" if pos == "s" else pos
        synset = self._synsets.get((file_pos, offset))
        if synset is None:
            if file_pos not in self._data:
                raise WordNetError(f"unknown part of speech {pos!r}: use one of n, v, a, s, r")
            synset = self._synsets.setdefault((file_pos, offset), self._parse_synset(file_pos, offset))
        return synset

    def _parse_synset(self, file_pos: str, offset: int) -> Synset:
        """nltk's ``_synset_from_pos_and_line`` for the line at ``offset`` (no frames, no gloss)."""
        path = self._data_path(file_pos)
        where = f"offset {offset}"
        data = self._data[file_pos]
        end = data.find(b"\n", offset) if offset >= 0 else -1
        try:
            text = bytes(data[max(offset, 0):end if end >= 0 else len(data)]).decode("utf-8")
        except UnicodeDecodeError:
            raise _file_error(path, where, "not UTF-8") from None
        lines = text.splitlines()  # nltk's readline ends a line at any str.splitlines boundary
        text = lines[0] if lines else ""
        expected = "0" * (8 - len(str(offset))) + str(offset)
        if text[:8] != expected or not text[:8].isalnum():
            raise _file_error(path, where, "no synset line starts here")
        parts = text.strip().split("|")
        if len(parts) != 2:
            raise _file_error(path, where, f"a synset line has one '|', this one has {len(parts) - 1}")
        tokens = parts[0].split()
        try:
            pos = tokens[2]
            if pos != file_pos and not (file_pos == "a" and pos == "s"):
                raise ValueError(f"part of speech {pos!r} in data.{FILE_OF_POS[file_pos]}")
            int(tokens[1])  # lexicographer file number
            n_lemmas = int(tokens[3], 16)
            lemmas: list[tuple[str, str | None]] = []
            for i in range(n_lemmas):
                word = tokens[4 + 2 * i]
                int(tokens[5 + 2 * i], 16)  # lex_id
                match = _MARKER.match(word)
                lemmas.append(match.groups() if match else (word, None))  # type: ignore[arg-type]
            if not lemmas:
                raise ValueError("no lemmas")
            at = 4 + 2 * n_lemmas
            n_pointers = int(tokens[at])
            pointers: dict[str, list[tuple[str, int]]] = {}
            lemma_pointers: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
            for i in range(at + 1, at + 1 + 4 * n_pointers, 4):
                symbol, target, target_pos, ids = tokens[i:i + 4]  # ValueError when the line ends
                if ids == "0000":
                    pointers.setdefault(symbol, []).append((target_pos, int(target)))
                else:
                    source = lemmas[int(ids[:2], 16) - 1][0]
                    lemma_pointers.setdefault((source, symbol), []).append(
                        (target_pos, int(target), int(ids[2:], 16) - 1))
        except (ValueError, IndexError) as exc:
            raise _file_error(path, where, f"malformed synset line ({exc})") from None
        # nltk's canonical name: first lemma, own part of speech, its place in the index list.
        head = lemmas[0][0].lower()
        listed = self._index_offsets(head, pos)
        if listed is None or offset not in listed:
            raise _file_error(path, where, f"index.{FILE_OF_POS[pos]} does not list this synset under "
                                           f"its first lemma {head!r}")
        name = f"{head}.{pos}.{listed.index(offset) + 1:02d}"
        return Synset(self, offset, pos, lemmas, pointers, lemma_pointers, name)


_readers: dict[str, WndbReader] = {}
_readers_lock = threading.Lock()


def open_wndb(directory: str | os.PathLike[str]) -> WndbReader:
    """The reader of a WNDB directory (``data.noun``, ``index.noun``, ``noun.exc``, …), opened
    once per process and resolved directory; raises `ResourceError` naming a missing file."""
    key = str(Path(directory).expanduser().resolve())
    with _readers_lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = WndbReader(key)
    return reader
