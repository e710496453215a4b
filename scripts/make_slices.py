"""Recreate the bundled dataset slices in data/ from the full copies in ../shared/data.

    .venv/bin/python scripts/make_slices.py                       # source: <repo>/../shared/data
    .venv/bin/python scripts/make_slices.py --source /work/shared/data --out data

Every slice is a run of whole lines cut from an official file, bytes unchanged (BOM, CRLF,
missing final newline and all), under the official file name, so the official readers are
what reads them. The source files are checked against the sha256 recorded in their
SOURCE.md before cutting. Each data/<name>/SOURCE.md is written from the cut rules below,
the counts read back with prior.pipeline.datasets, and the source folder's SOURCE.md (copied
verbatim as the provenance and license section).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# (first line, last line), 1-based inclusive, of the source file.
Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Cut:
    file: str  # same name in source and slice
    ranges: Ranges = ()
    sha256: str = ""  # of the full source file, from the source SOURCE.md
    keep: Callable[[int, bytes], bool] | None = None  # line filter instead of ranges
    rule: str = ""  # human-readable rule for SOURCE.md


@dataclass(frozen=True)
class Folder:
    name: str
    license: str
    cuts: tuple[Cut, ...]
    copies: tuple[str, ...] = ()  # license/readme files copied whole
    splits: tuple[tuple[str, str], ...] = ()  # (dataset name, split) read back for counts
    note: str = ""


def _head(n: int) -> Ranges:
    return ((1, n),)


def _sick_full_filter() -> Callable[[int, bytes], bool]:
    """Header + the first 100 TRAIN, 50 TRIAL and 100 TEST rows of SICK.txt, in file order."""
    quota = {b"TRAIN": 100, b"TRIAL": 50, b"TEST": 100}

    def keep(number: int, raw: bytes) -> bool:
        if number == 1:
            return True
        tag = raw.rstrip(b"\r\n").split(b"\t")[-1]
        if quota.get(tag, 0) > 0:
            quota[tag] -= 1
            return True
        return False

    return keep


def folders() -> tuple[Folder, ...]:
    nc = "non-commercial use only"
    return (
        Folder("snli", "CC BY-SA 4.0 (Bowman et al. 2015)", (
            Cut("snli_1.0_dev.partial.jsonl", _head(300),
                "d28f65fc66b8943787b53ff1db0a8e69a9ca86ebafd1a140c741323402f3cf34",
                rule="lines 1-300 (a prefix of official dev)"),
            Cut("snli_1.0_test.partial.jsonl", _head(300),
                "032b2d5720d402c7c521fb92363ba0d435839ad1bb822308ddec5b247be0482e",
                rule="lines 1-300"),
        ), splits=(("snli", "dev"), ("snli", "test")),
            note="There is no SNLI train file here (none could be obtained). The demo trains on "
                 "the dev slice and evaluates on the test slice; never report numbers on these "
                 "slices as SNLI results."),
        Folder("mrpc", f"Microsoft Research Shared Source License, {nc}", (
            Cut("msr_paraphrase_train.txt", _head(201),
                "f3d26d73bb3510032f80836e2e81cf32c71863f8dd6151aa80a125c2c799a557",
                rule="header + the first 200 data lines (lines 1-201)"),
            Cut("msr_paraphrase_test.txt", _head(201),
                "51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
                rule="header + the first 200 data lines (lines 1-201)"),
        ), copies=("Microsoft Shared Source License.htm",),
            splits=(("mrpc", "train"), ("mrpc", "test")),
            note="Modified files (as the license asks us to say): these two files are cut to "
                 "their first 201 lines by scripts/make_slices.py (2026-11-22); nothing else "
                 "changed."),
        Folder("stsb", "scores CC BY-SA 4.0; texts per source, MSR-derived text "
                       f"(MSRpar, MSRvid) {nc} (see LICENSE.txt)", (
            Cut("sts-train.csv", _head(200),
                "0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82",
                rule="lines 1-200 (no header in this format)"),
            Cut("sts-dev.csv", _head(200),
                "5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234",
                rule="lines 1-200"),
            Cut("sts-test.csv", _head(200),
                "affe45928a66ee5a708531233c95b7dacbbdc57f974f002a3d32ea0180cf816a",
                rule="lines 1-200"),
        ), copies=("LICENSE.txt",),
            splits=(("stsb", "train"), ("stsb", "dev"), ("stsb", "test"))),
        Folder("sick", f"CC BY-NC-SA 3.0, {nc}", (
            Cut("SICK_train.txt", _head(201),
                "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e",
                rule="header + the first 200 data lines"),
            Cut("SICK_trial.txt", _head(101),
                "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56",
                rule="header + the first 100 data lines"),
            Cut("SICK_test_annotated.txt", _head(201),
                "2b8aa806658d6fc23c6824c83776c2d4fee7556000817b5ec0f982861413b7d0",
                rule="header + the first 200 data lines"),
            Cut("SICK.txt", (), "1539c2d059809b5bd40694e26d8121cc85b6b496f91c7b40f2fc83bbd7dcd957",
                keep=None, rule="header + the first 100 TRAIN, 50 TRIAL and 100 TEST rows "
                                "(by SemEval_set), in file order"),
        ), copies=("readme.txt",),
            splits=(("sick", "train"), ("sick", "trial"), ("sick", "test"),
                    ("sick-r", "train"), ("sick-r", "trial"), ("sick-r", "test")),
            note="The named dataset reads the SemEval files first; SICK.txt is read when "
                 "given as path= (read_split('sick', 'train', path='data/sick/SICK.txt'))."),
        Folder("rte", "not stated in the files; RTE challenge data via GLUE (see provenance)", (
            Cut("train.tsv", _head(201),
                "41e3a9b063433392343fad9e962cf2f58b681c78d8f71592f4186f0837246c5c",
                rule="header + the first 200 data lines"),
            Cut("dev.tsv", _head(201),
                "80230dfa1347282e7b532b06a1004a76a710087541189bf874223ddf0e3819fb",
                rule="header + the first 200 data lines"),
            Cut("test.tsv", _head(101),
                "6e33f09b5c2bfd5fd5fde217070f3dd49e484e33b9752b5864cf36fc421a213f",
                rule="header + the first 100 data lines (unlabelled)"),
        ), splits=(("rte", "train"), ("rte", "dev"), ("rte", "test"))),
        Folder("qnli", "per source: SQuAD v1.1 text, CC BY-SA 4.0 (see provenance)", (
            Cut("dev.tsv", _head(201),
                "763e95932dd3578251de71582e06829015f9c3815a518c751dc537219b159de4",
                rule="header + the first 200 data lines"),
            Cut("test.tsv", _head(101),
                "6d856264e292fa7a7bc7b8e182efa1454ffd9532733c12ad813017dd5b377a5a",
                rule="header + the first 100 data lines (unlabelled)"),
        ), splits=(("qnli", "dev"), ("qnli", "test"))),
        Folder("twitterurl", f"CC BY-NC-SA 3.0, {nc}, and the Twitter Terms of Service", (
            Cut("Twitter_URL_Corpus_test.txt", ((1, 420), (10361, 10370)),
                "c5a751420ee34a7f4bb503a913ce5a56768c58da8f0ced843a1a40f3b82fcfd9",
                rule="lines 1-420 (these include blank lines and records whose 4th field is "
                     "text, not a URL) and lines 10361-10370 (the 10 records with an extra "
                     "empty field before the URL)"),
        ), copies=("README.upstream.md",), splits=(("twitterurl", "test"),)),
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cut(src: Path, dst: Path, c: Cut) -> int:
    keep = c.keep or (_sick_full_filter() if c.file == "SICK.txt" else None)
    out = []
    with open(src, "rb") as f:
        for number, raw in enumerate(f, start=1):
            take = keep(number, raw) if keep else any(a <= number <= b for a, b in c.ranges)
            if take:
                out.append(raw)
    dst.write_bytes(b"".join(out))
    return len(out)


def source_md(folder: Folder, source: Path, out: Path, lines: dict[str, int]) -> str:
    from prior.pipeline.datasets import read_split

    rows = []
    for c in folder.cuts:
        rows.append(f"| {c.file} | {c.rule} | {lines[c.file]} | "
                    f"`{sha256(source / folder.name / c.file)[:16]}…` | "
                    f"`{sha256(out / folder.name / c.file)[:16]}…` |")
    counts = []
    for name, split in folder.splits:
        d = read_split(name, split, path=out / folder.name)
        skipped = "; ".join(f"{n} × {r}" for r, n in d.skip_counts().items()) or "none"
        if d.label_kind == "class":
            by = {lab: sum(1 for p in d.pairs if p.label == lab) for lab in d.labels}
            dist = " / ".join(f"{k} {v}" for k, v in by.items())
        elif d.label_kind == "score":
            vals = [float(p.label) for p in d.pairs if p.label is not None]
            dist = f"scores {min(vals):g}–{max(vals):g}"
        else:
            dist = "unlabelled"
        counts.append(f"| `{name}` | {split} | {d.path.name if d.path else ''} | {len(d.pairs)} "
                      f"| {dist} | {skipped} |")
    upstream = (source / folder.name / "SOURCE.md").read_text(encoding="utf-8")
    upstream = "\n".join(("##" + ln) if ln.startswith("#") else ln for ln in upstream.splitlines())
    copies = ", ".join(folder.copies) or "none"
    return f"""# {folder.name}: bundled slice

**License: {folder.license}.** Provenance and the full license statement are below.

A small slice of the full copy in `../shared/data/{folder.name}/` for the demo and fast tests.
Bytes are unchanged: each file is whole lines of the official file, under its official name.
{folder.note}

## How it was cut
`.venv/bin/python scripts/make_slices.py --source ../shared/data --out data`
(see that script for the exact rules; it checks each source file's sha256 first).
Files copied whole: {copies}.

| file | lines taken from the source file | lines | source sha256 | slice sha256 |
| --- | --- | --- | --- | --- |
{chr(10).join(rows)}

## Counts (read back with `prior.pipeline.datasets.read_split`)
| dataset | split | file | pairs | labels | skipped |
| --- | --- | --- | --- | --- | --- |
{chr(10).join(counts)}

## Provenance of the full files (their SOURCE.md, verbatim; headings one level down)

{upstream}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=REPO / "data")
    args = ap.parse_args(argv)
    if not args.source.is_dir():
        print(f"no source directory {args.source}; pass --source", file=sys.stderr)
        return 2
    for folder in folders():
        dst_dir = args.out / folder.name
        dst_dir.mkdir(parents=True, exist_ok=True)
        lines = {}
        for c in folder.cuts:
            src = args.source / folder.name / c.file
            if c.sha256 and sha256(src) != c.sha256:
                print(f"{src}: sha256 differs from its SOURCE.md; not cutting", file=sys.stderr)
                return 1
            lines[c.file] = cut(src, dst_dir / c.file, c)
        for name in folder.copies:
            shutil.copyfile(args.source / folder.name / name, dst_dir / name)
        text = source_md(folder, args.source, args.out, lines)
        (dst_dir / "SOURCE.md").write_text(text, encoding="utf-8")
        size = sum(p.stat().st_size for p in dst_dir.iterdir())
        print(f"{folder.name}: {sum(lines.values())} lines, {size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
