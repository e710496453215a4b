"""WordNet 3.0 for nltk, online or offline.

`load_wordnet()` returns nltk's WordNet corpus reader, found in this order:

1. nltk's normal data path already has ``corpora/wordnet`` (or ``wordnet.zip``): the usual
   online setup, ``python -m nltk.downloader wordnet``. Used as it is.
2. A configured directory: the ``directory`` argument, else env ``PRIOR_WORDNET_DIR``. It may be
   an nltk data root (holding ``corpora/wordnet``), an nltk corpus dir or a bare WordNet
   ``dict`` dir (``data.noun``, ``index.noun``, …, as Princeton and Debian ship it).
3. Debian's ``/usr/share/wordnet`` (package ``wordnet-base``).

A bare dict dir (2 or 3) is copied, with a generated ``lexnames`` file (Debian ships none),
into a private nltk data root ``$PRIOR_HOME/nltk_data/corpora/wordnet/`` (PRIOR_HOME defaults
to ``$XDG_CACHE_HOME/prior``, i.e. ``~/.cache/prior``; resolved at call time). That root is put
on ``nltk.data.path``. Copying is needed because nltk ≥ 3.10 refuses corpus roots writable by
other accounts (such as anything under /tmp) and symlinks that leave the data root.

``lexnames`` is the 45-line table of the lexnames(5WN) man page: parsed from
``/usr/share/man/man5/lexnames.5WN.gz`` when present, else from the same table embedded here.

`load_wordnet_fast()` is what build workers use: the same files through
:mod:`prior.pipeline.resources.wndb`, which answers exactly as nltk does without importing nltk. It
opens in under a millisecond and reads an index file on its first lookup (≈ 0.03 s for all
four), where ``import nltk`` plus `load_wordnet()` cost 2.3–3.6 s per process.

`wordnet_version()` gives ``"wordnet-<version>:<hash>"`` (blake2b over the data and index files)
for feature fingerprints.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from prior.errors import ResourceError
from prior.paths import prior_home

ENV_DIR = "PRIOR_WORDNET_DIR"
DEBIAN_DIR = Path("/usr/share/wordnet")
LEXNAMES_MAN = Path("/usr/share/man/man5/lexnames.5WN.gz")
INSTALL_HINT = (
    "Install WordNet 3.0 one of these ways:\n"
    "  apt-get install -y --no-install-recommends wordnet-base   (Debian/Ubuntu, offline mirror);\n"
    "  python -m nltk.downloader wordnet                          (needs network);\n"
    f"or point {ENV_DIR} at a WordNet dict directory (data.noun, index.noun, …)."
)

# Files nltk's WordNetCorpusReader reads (lexnames is generated when absent).
REQUIRED_FILES = (
    "data.noun", "data.verb", "data.adj", "data.adv",
    "index.noun", "index.verb", "index.adj", "index.adv",
    "noun.exc", "verb.exc", "adj.exc", "adv.exc",
)
OPTIONAL_FILES = ("index.sense", "cntlist.rev", "cntlist", "frames.vrb", "sents.vrb",
                  "sentidx.vrb", "lexnames", "LICENSE", "citation.bib")
HASHED_FILES = ("data.noun", "data.verb", "data.adj", "data.adv",
                "index.noun", "index.verb", "index.adj", "index.adv")

# The table of lexnames(5WN), WordNet 3.0: number, lexicographer file name.
LEXNAMES_TABLE = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl",
)
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_MAN_ROW = re.compile(r"^(\d\d)\t\s*((?:adj|adv|noun|verb)\.[A-Za-z]+)\s*\t")

_lock = threading.Lock()
_version_cache: dict[str, str] = {}


def private_nltk_root() -> Path:
    """The nltk data root that holds our private copy: ``$PRIOR_HOME/nltk_data``."""
    return prior_home() / "nltk_data"


def lexnames_lines(man_page: Path | None = LEXNAMES_MAN) -> list[str]:
    """The 45 lines of WordNet's ``lexnames`` file: ``NN<TAB>name<TAB>category``.

    Parsed from the lexnames(5WN) man page when it exists and yields exactly the 45 rows
    numbered 00–44; else built from the embedded table (the same content).
    """
    names: list[str] | None = None
    if man_page is not None and man_page.is_file():
        try:
            with gzip.open(man_page, "rt", encoding="utf-8", errors="replace") as fh:
                rows = [m.groups() for m in map(_MAN_ROW.match, fh) if m]
            if [int(num) for num, _ in rows] == list(range(len(LEXNAMES_TABLE))):
                names = [name for _, name in rows]
        except OSError:
            names = None
    if names is None:
        names = list(LEXNAMES_TABLE)
    return [f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}" for i, name in enumerate(names)]


def _is_dict_dir(path: Path) -> bool:
    return all((path / name).is_file() for name in REQUIRED_FILES)


def _make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o755)


def install_private_copy(source: Path, root: Path | None = None) -> Path:
    """Copy a WordNet dict dir into ``<root>/corpora/wordnet`` (+ lexnames); return root.

    Idempotent: an existing complete copy of the same files (same sizes) is reused. The copy
    is written to a temporary sibling and renamed into place, so a crash leaves no half copy;
    installers in several processes take turns (a lock file beside it), and one that finds a
    complete copy once it has the lock leaves it alone.
    Directories are 0755 and files 0644, as nltk requires of a data root.
    """
    root = private_nltk_root() if root is None else root
    target = root / "corpora" / "wordnet"
    present = [name for name in REQUIRED_FILES + OPTIONAL_FILES if (source / name).is_file()]

    def complete() -> bool:
        return target.is_dir() and (target / "lexnames").is_file() and all(
            (target / name).is_file()
            and (target / name).stat().st_size == (source / name).stat().st_size
            for name in present)

    if complete():
        return root
    _make_private_dir(root)
    _make_private_dir(root / "corpora")
    with file_lock(root / "corpora" / ".prior-install.lock"):
        if not complete():  # another process may have installed it while we waited
            _install(source, present, root, target, complete)
    return root


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes on the lock file ``path``: build workers install the
    private copy (and build WordNet's hierarchy table) at the same time.

    Without it a second installer could move a complete copy aside, to put its own in place,
    while a third process was reading it (seen as a missing data.noun in a 2-worker build).
    Where ``fcntl`` is missing (Windows) nothing is serialised.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install(source: Path, present: list[str], root: Path, target: Path, complete: Callable[[], bool]) -> None:
    """Copy into a staging directory, then rename it into place (under `file_lock`)."""
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=root / "corpora"))
    try:
        os.chmod(staging, 0o755)
        for name in present:
            shutil.copyfile(source / name, staging / name)
            os.chmod(staging / name, 0o644)
        if not (staging / "lexnames").is_file():
            (staging / "lexnames").write_text("\n".join(lexnames_lines()) + "\n", encoding="ascii")
            os.chmod(staging / "lexnames", 0o644)
        if target.exists():  # an incomplete or outdated copy: move it aside, then drop it
            old = Path(tempfile.mkdtemp(prefix=".wordnet-old-", dir=root / "corpora"))
            with contextlib.suppress(FileNotFoundError):  # another process moved it first
                os.replace(target, old / "wordnet")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError:
            if not complete():  # else another process installed the same copy concurrently
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _nltk_has_wordnet(paths: list[str] | None = None) -> bool:
    import nltk

    for resource in ("corpora/wordnet", "corpora/wordnet.zip/wordnet/"):
        try:
            nltk.data.find(resource, paths=paths)
            return True
        except LookupError:
            continue
    return False


def _add_to_nltk_path(root: Path) -> None:
    import nltk

    entry = str(root)
    if entry not in nltk.data.path:
        nltk.data.path.insert(0, entry)


def _configured_root(directory: str | os.PathLike[str] | None) -> Path | None:
    """The nltk data root for a configured directory, installing a private copy if needed."""
    configured = directory if directory is not None else os.environ.get(ENV_DIR) or None
    if configured is None:
        return None
    path = Path(configured).expanduser()
    if (path / "corpora" / "wordnet").is_dir() or (path / "corpora" / "wordnet.zip").is_file():
        return path
    if path.name == "wordnet" and path.parent.name == "corpora" and _is_dict_dir(path):
        return path.parent.parent
    if _is_dict_dir(path):
        return install_private_copy(path)
    raise ResourceError(
        f"WordNet directory {path} (from {'the directory argument' if directory is not None else ENV_DIR}) "
        f"holds neither corpora/wordnet nor the WordNet dict files {', '.join(REQUIRED_FILES)}.\n"
        + INSTALL_HINT
    )


def wordnet_root(directory: str | os.PathLike[str] | None = None) -> Any:
    """nltk's path pointer to the WordNet files, found (or installed as a private copy) but not
    loaded: cheap, so that a feature's parameters can name the database without loading it.

    Order: nltk's data path as it is; ``directory`` or ``$PRIOR_WORDNET_DIR``; Debian's
    /usr/share/wordnet. Raises `ResourceError` with install commands when none has WordNet.
    """
    import nltk

    with _lock:
        if not _nltk_has_wordnet():
            root = _configured_root(directory)
            if root is None:
                if _is_dict_dir(DEBIAN_DIR):
                    root = install_private_copy(DEBIAN_DIR)
                else:
                    raise ResourceError(
                        "WordNet 3.0 was not found on nltk's data path "
                        f"({', '.join(map(str, nltk.data.path))}), in ${ENV_DIR} or in {DEBIAN_DIR}.\n"
                        + INSTALL_HINT
                    )
            _add_to_nltk_path(root)
            if not _nltk_has_wordnet([str(root)]):
                raise ResourceError(
                    f"nltk refuses or cannot find corpora/wordnet under {root} (it must be owned by "
                    "this account and not writable by group or others: chmod -R go-w).\n" + INSTALL_HINT
                )
        for resource in ("corpora/wordnet", "corpora/wordnet.zip/wordnet/"):
            try:
                return nltk.data.find(resource)
            except LookupError:
                continue
    raise ResourceError("nltk lost track of WordNet after finding it.\n" + INSTALL_HINT)


_reader: Any = None


def _reader_class() -> type:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class WordNet30Reader(WordNetCorpusReader):
        """nltk's reader without its 3.0 → 3.0 sense map.

        nltk 3.10's reader builds ``map30`` on every load by comparing ``get_version()`` ("3.0")
        with the corpus *name* ("wordnet"), which never match, so it reads index.sense twice to
        map WordNet 3.0 onto itself: ~60% of the load time (4.4 of 7.6 s measured). The map
        is used only by the multilingual (OMW) lookups, which treat ``None`` as "no mapping
        needed": exactly right when the database is 3.0. Other versions keep nltk's map.
        """

        def map_wn(self, version: str = "wordnet") -> Any:
            if self.get_version() == "3.0":
                return None
            return super().map_wn(version)

    return WordNet30Reader


def load_wordnet(directory: str | os.PathLike[str] | None = None) -> Any:
    """nltk's WordNet corpus reader (a ``WordNetCorpusReader``), loaded once per process
    (seconds) from the files :func:`wordnet_root` finds; the same object on every call."""
    global _reader
    root = wordnet_root(directory)
    with _lock:
        if _reader is None:
            from nltk.corpus.reader import CorpusReader
            from nltk.corpus.util import LazyCorpusLoader

            omw = LazyCorpusLoader("omw-2.0", CorpusReader, r".*/wn-data-.*\.tab", encoding="utf8")
            try:
                _reader = _reader_class()(root, omw)
            except (LookupError, OSError) as exc:
                raise ResourceError(f"nltk could not load WordNet: {exc}\n" + INSTALL_HINT) from exc
    return _reader


def wndb_dir(directory: str | os.PathLike[str] | None = None) -> Path | None:
    """The plain directory of WordNet files that nltk would read, or ``None`` (zipped corpus):
    :func:`wordnet_files_dir`, else, where nltk is already imported, the directory behind
    :func:`wordnet_root`'s pointer."""
    files = wordnet_files_dir(directory)
    if files is None and "nltk" in sys.modules:
        path = getattr(wordnet_root(directory), "path", None)
        if path is not None and _is_dict_dir(Path(path)):
            files = Path(path)
    return files


class NltkWordNet:
    """nltk's WordNet reader with the one question `WndbReader` answers from its index files
    alone: ``synset_addresses(lemma, pos)``, the (pos, offset) of ``synsets(lemma, pos)`` in
    order. Everything else is nltk's reader."""

    def __init__(self, wn: Any) -> None:
        self.wn = wn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wn, name)

    def synset_addresses(self, lemma: str, pos: str | None = None) -> list[tuple[str, int]]:
        return [(s.pos(), s.offset()) for s in self.wn.synsets(lemma, pos=pos)]


def load_wordnet_fast(directory: str | os.PathLike[str] | None = None) -> tuple[Any, str]:
    """A WordNet reader and :func:`wordnet_version`'s id of its files, as fast as possible:
    :class:`~prior.pipeline.resources.wndb.WndbReader` (no nltk import; ≈ 0.04 s with the content
    hash) over the files nltk would read, else nltk's reader (a zipped corpus) as
    :class:`NltkWordNet`. Both answer the Wu-Palmer feature's questions identically
    (tests/test_resources_wndb.py)."""
    files = wndb_dir(directory)
    if files is None:
        wn = load_wordnet(directory)
        return NltkWordNet(wn), wordnet_version(wn)
    from prior.pipeline.resources.wndb import open_wndb

    wn = open_wndb(files)
    return wn, wordnet_version(wn)


def nltk_default_paths() -> list[Path]:
    """nltk's data path in its order ($NLTK_DATA first), computed without importing nltk."""
    env = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    home = [Path("~/nltk_data").expanduser()]
    prefix = [Path(sys.prefix) / sub for sub in ("nltk_data", "share/nltk_data", "lib/nltk_data")]
    system = [Path(p) for p in ("/usr/share/nltk_data", "/usr/local/share/nltk_data",
                                "/usr/lib/nltk_data", "/usr/local/lib/nltk_data")]
    return env + home + prefix + system


def wordnet_files_dir(directory: str | os.PathLike[str] | None = None) -> Path | None:
    """The directory of WordNet dict files that :func:`wordnet_root` would pick, found from the
    file system alone (no nltk import); ``None`` where only nltk can tell (a zipped corpus, a
    data path changed at run time): callers then fall back to :func:`wordnet_root`."""
    import importlib.util

    if "nltk" in sys.modules or importlib.util.find_spec("nltk") is None:
        return None  # nltk loaded: its (possibly modified) data path decides
    for root in nltk_default_paths():
        if (root / "corpora" / "wordnet").is_dir():
            candidate = root / "corpora" / "wordnet"
            return candidate if _is_dict_dir(candidate) else None
        if (root / "corpora" / "wordnet.zip").exists():
            return None
    configured = directory if directory is not None else os.environ.get(ENV_DIR) or None
    if configured is not None:
        path = Path(configured).expanduser()
        for candidate in (path / "corpora" / "wordnet", path):
            if _is_dict_dir(candidate):
                return candidate
        return None
    private = private_nltk_root() / "corpora" / "wordnet"
    if _is_dict_dir(private):
        return private
    return DEBIAN_DIR if _is_dict_dir(DEBIAN_DIR) else None


def _read_version(open_file: Any) -> str:
    with open_file("data.adj") as fh:
        for _ in range(40):
            line = fh.readline()
            line = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            if match := re.search(r"WordNet (\d+|\d+\.\d+) Copyright", line):
                return match.group(1)
    return "unknown"


def _content_id(open_file: Any) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in HASHED_FILES:
        h.update(name.encode("ascii") + b"\x00")
        with open_file(name) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk if isinstance(chunk, bytes) else chunk.encode("utf-8"))
    return f"wordnet-{_read_version(open_file)}:{h.hexdigest()}"


def reader_files(wn: Any) -> Any:
    """Where a loaded reader's database files are: our WNDB reader's directory (a Path), or
    nltk's root (a path pointer, possibly into a zip)."""
    directory = getattr(wn, "directory", None)
    return directory if isinstance(directory, Path) else wn.root


def file_opener(location: Any) -> Callable[[str], IO[bytes]]:
    """Opens a database file by name, binary: in a directory, or through an nltk root pointer."""
    if isinstance(location, Path):
        return lambda name: (location / name).open("rb")
    return lambda name: location.join(name).open()


def wordnet_version(wn: Any | None = None, directory: str | os.PathLike[str] | None = None) -> str:
    """``"wordnet-<version>:<blake2b-16 of data.* and index.* files>"``.

    Identifies the database content for feature fingerprints; computed once per process from
    the files (of ``wn``'s directory or root when given, else of the directory :func:`wordnet_files_dir`
    finds, else of :func:`wordnet_root`), without loading WordNet or, where the files are plain
    files, importing nltk (which costs seconds: this runs on every build, no-op ones included).
    Content-based, so the same database gives the same id wherever it is installed. The
    version is read from data.adj's header as nltk's ``get_version`` does.
    """
    location = (wordnet_files_dir(directory) or wordnet_root(directory)) if wn is None else reader_files(wn)
    key = str(location)
    if key not in _version_cache:
        _version_cache[key] = _content_id(file_opener(location))
    return _version_cache[key]
