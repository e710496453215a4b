"""One pair's feature matrix, for a person to check at a glance (`prior show`).

``pair_view`` finds a pair of a dataset by row number or pair key (a unique prefix of at
least 6 characters will do) and returns its words and matrices: a pair feature (``wup``;
``dep``, DAFA's M_F through the view of that name, or an ablation view such as
``dep-no-trigram`` or ``dep-no-trigram-no-tfidf``, whose matrix column is also ``dep``)
gives one n×m matrix, rows = words of A, columns = words of B; a sentence feature given as
matrices (``sdoi``) gives A's n×n and B's m×m masks. ``format_pair`` prints them as text and
``plot_pair`` draws the heatmaps the papers show (matplotlib's Agg canvas: no display
needed, no global backend switched).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from prior.errors import NotFoundError, PriorError
from prior.featurestore.selection import Request, entries_line
from prior.featurestore.splits import read_splits
from prior.layouts.views import VIEWS

if TYPE_CHECKING:
    from prior.featurestore.store import EntryInfo, Store

#: splits in the order a dataset lists them; any other split comes after these, by name
SPLIT_ORDER = ("train", "dev", "trial", "validation", "dev_matched", "dev_mismatched", "test",
               "test_matched", "test_mismatched")


@dataclass
class Panel:
    """One heatmap: a matrix with the words labelling its rows and columns."""

    title: str
    rows: list[str]
    cols: list[str]
    matrix: np.ndarray


@dataclass
class PairView:
    dataset: str
    split: str
    row: int
    pair_key: str
    feature: str
    text_a: str
    text_b: str
    label: Any
    entries: list[EntryInfo] = field(default_factory=list)  # the store entries the matrices come from
    note: str = ""  # how the split was chosen, when it was not given
    panels: list[Panel] = field(default_factory=list)

    @property
    def entry_line(self) -> str:
        """The entries shown, each as spec, key prefix and its non-default options."""
        return entries_line(self.entries)


def split_order(splits: Sequence[str]) -> list[str]:
    """Splits in a dataset's usual order (train, dev, …, test), others after them by name."""
    rank = {name: i for i, name in enumerate(SPLIT_ORDER)}
    return sorted(splits, key=lambda s: (rank.get(s, len(rank)), s))


def _find_pair(store: Store, dataset: str, pair: str, split: str | None) -> tuple[str, Any, str]:
    """(split, the pair's row of ``store.split_rows``, a note on how the split was chosen) for a
    row number or a (prefix of a) key. A row number without a split is looked up in the only
    split, or in the first split in the dataset's order (the note says which). The rows are the
    checked read's: a split that lacks rows is a `ShortSplitError` naming the build that
    restores them, never "no such row" or "no such key"."""
    held = read_splits(store)
    present = split_order([s for d, s in held if d == dataset])
    if not present:
        known = ", ".join(sorted({d for d, _ in held})) or "none"
        raise NotFoundError(f"{store.location} has no dataset {dataset!r} (present: {known})")
    if split is not None and split not in present:
        raise NotFoundError(f"{dataset} has no split {split!r} in {store.location} "
                            f"(present: {', '.join(present)})")
    note = ""
    if pair.isdigit():
        if split is None:
            split = present[0]
            if len(present) > 1:
                note = f"split {split} (of {', '.join(present)}; --split picks another)"
        rows = store.split_rows(dataset, split).rows
        hit = rows.filter(rows["row"] == int(pair))
        if hit.height == 0:
            raise NotFoundError(f"{dataset}/{split} has no row {pair} "
                                f"(rows {rows['row'].min()!s}–{rows['row'].max()!s})")
        return split, hit.row(0, named=True), note
    if len(pair) < 6:
        raise PriorError(f"pair key {pair!r} is too short: give a row number or at least 6 "
                         "characters of the key")
    splits = [split] if split else present
    found = []
    for s in splits:
        rows = store.split_rows(dataset, s).rows
        hit = rows.filter(rows["pair_key"].str.starts_with(pair))
        found += [(s, r) for r in hit.iter_rows(named=True)]
    keys = {r["pair_key"] for _, r in found}
    if not found:
        raise NotFoundError(f"no pair of {dataset} ({', '.join(splits)}) has a key starting {pair!r}")
    if len(keys) > 1:
        raise PriorError(f"pair key prefix {pair!r} matches {len(keys)} pairs; give more characters")
    return found[0][0], found[0][1], note


def _skipped(store: Store, dataset: str, split: str, row: Any, feature: str, parse: str | None) -> PriorError:
    """Why ``row`` has no ``feature``: its build skipped one of its sentences (too long for the
    parser, or the parser failed on it), so it has no parse."""
    skipped = store.skipped_sentences(parse) if parse is not None else {}
    reason = skipped.get(row["key_a"]) or skipped.get(row["key_b"]) or "its sentences have no parse"
    hint = "; a build with a higher --max-words parses it" if "limit" in reason else ""
    return PriorError(f"row {row['row']} of {dataset}/{split} was skipped at build ({reason}): it has no parse and "
                      f"no {feature} to show{hint}")


def _matrix(value: Any, rows: int, cols: int) -> np.ndarray:
    return np.asarray(value, dtype=np.float64).reshape(rows, cols)


def pair_view(store: Store, dataset: str, pair: str, feature: str, *, split: str | None = None,
              request: Request | None = None) -> PairView:
    """The words and matrices of one pair (module docstring), from the entry that ``request``
    picks (default: the feature's default entry; `prior.featurestore.selection`)."""
    split, row, note = _find_pair(store, dataset, pair, split)
    entries = store.select(feature, request, dataset=dataset, split=split)
    df = store.frame(feature, dataset=dataset, split=split, entry=entries[0].key)
    df = df.filter(df["row"] == row["row"])
    if df.is_empty():  # the frame leaves out the pairs whose build skipped a sentence
        raise _skipped(store, dataset, split, row, feature, entries[0].parse)
    rec = df.row(0, named=True)
    words_a, words_b = list(rec["words_a"] or []), list(rec["words_b"] or [])
    registered = VIEWS.get(feature)
    column = registered.column if registered is not None and registered.column else feature
    view = PairView(dataset=dataset, split=split, row=int(rec["row"]), pair_key=rec["pair_key"],
                    feature=feature, text_a=rec["text_a"], text_b=rec["text_b"], label=rec["label"],
                    entries=entries, note=note)
    if column in rec:
        view.panels.append(Panel(f"{feature}: A × B", words_a, words_b,
                                 _matrix(rec[column], len(words_a), len(words_b))))
    elif f"{feature}_a" in rec and f"{feature}_b" in rec:
        for side, words in (("a", words_a), ("b", words_b)):
            arr = np.asarray(rec[f"{feature}_{side}"], dtype=np.float64)
            if arr.ndim == 1:
                view.panels.append(Panel(f"{feature}: {side.upper()}", [feature], words,
                                         arr.reshape(1, -1)))
            else:
                view.panels.append(Panel(f"{feature}: {side.upper()} × {side.upper()}", words, words,
                                         arr.reshape(len(words), len(words))))
    else:
        shown = [c for c in df.columns if c.startswith(feature)]
        raise PriorError(f"the {feature!r} frame has no matrix column {feature!r} or "
                         f"{feature}_a/{feature}_b (columns: {shown})")
    return view


def _cell(x: float) -> str:
    if x == 0:
        return "."
    return f"{x:.2f}" if abs(x) < 100 else f"{x:.0f}"


def format_matrix(panel: Panel, *, width: int = 7) -> str:
    """The matrix as text: row words on the left, column words (cut to ``width``) on top."""
    left = max([len(w) for w in panel.rows] + [4])
    head = " " * (left + 1) + " ".join(f"{w[:width]:>{width}}" for w in panel.cols)
    lines = [panel.title, head]
    for word, values in zip(panel.rows, panel.matrix):
        lines.append(f"{word:<{left}} " + " ".join(f"{_cell(float(v)):>{width}}" for v in values))
    return "\n".join(lines)


def format_pair(view: PairView) -> str:
    out = [f"{view.dataset}/{view.split} row {view.row} (pair {view.pair_key}), label {view.label}"]
    if view.note:
        out.append(view.note)
    out += [f"from {view.entry_line}", f"A: {view.text_a}", f"B: {view.text_b}", ""]
    for panel in view.panels:
        out += [format_matrix(panel), ""]
    return "\n".join(out).rstrip() + "\n"


def plot_pair(view: PairView, path: str | os.PathLike[str], *, dpi: int = 120) -> Path:
    """Heatmaps of the view's matrices to an image file (format from the suffix, e.g. .png)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PriorError("--plot needs matplotlib: pip install 'prior[plot]'") from exc
    panels: Sequence[Panel] = view.panels
    widths = [max(2.5, 0.38 * len(p.cols) + 1.6) for p in panels]
    height = max(2.5, 0.38 * max(len(p.rows) for p in panels) + 1.8)
    fig = Figure(figsize=(sum(widths) + 0.5, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False, width_ratios=widths)[0]
    for ax, panel in zip(axes, panels):
        image = ax.imshow(panel.matrix, cmap="Blues", aspect="auto",
                          vmin=min(0.0, float(panel.matrix.min(initial=0.0))))
        ax.set_xticks(range(len(panel.cols)), panel.cols, rotation=90, fontsize=8)
        ax.set_yticks(range(len(panel.rows)), panel.rows, fontsize=8)
        ax.set_title(panel.title, fontsize=9)
        if panel.matrix.size <= 400:
            top = float(panel.matrix.max(initial=0.0))
            for (i, j), v in np.ndenumerate(panel.matrix):
                if v:
                    ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=6,
                            color="white" if top and v > 0.6 * top else "black")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(f"{view.dataset}/{view.split} row {view.row}: {view.feature}\n{view.entry_line}", fontsize=9)
    fig.tight_layout()
    out = Path(path).expanduser()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=dpi)
    except (OSError, ValueError) as exc:  # an unwritable place, an image format matplotlib lacks
        raise PriorError(f"--plot {path}: cannot write the image ({getattr(exc, 'strerror', None) or exc})") from None
    return out
