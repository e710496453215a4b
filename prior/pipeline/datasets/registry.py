"""The named datasets: their splits, the file names each split may have, labels and readers.

For each split, ``files`` lists file names to look for, in order of preference, inside a
dataset folder (see resolve.py for which folders are searched). ``folders`` are the folder
names a dataset may have under a data directory: ours first, then the names the official
archives unpack to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prior.errors import NotFoundError
from prior.hints import option
from prior.pipeline.datasets import formats as F
from prior.pipeline.datasets import labels as L


@dataclass(frozen=True)
class HubSource:
    """Where a split lives on the Hugging Face hub (used only if `datasets` is installed)."""

    path: str
    config: str | None
    text_a: str
    text_b: str
    label: str
    splits: dict[str, str]  # our split -> hub split


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    folders: tuple[str, ...]
    files: dict[str, tuple[str, ...]]  # split -> candidate file names, preferred first
    reader: F.Reader
    scheme: L.LabelScheme
    aliases: dict[str, str] = field(default_factory=dict)  # other split name -> ours
    hub: HubSource | None = None

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self.files)

    def split_name(self, split: str) -> str:
        """Our name for ``split`` (aliases such as "validation" accepted)."""
        name = self.aliases.get(split, split)
        if name not in self.files:
            known = sorted(set(self.files) | set(self.aliases))
            raise NotFoundError(f"dataset {self.name!r} has no split {split!r}; "
                                f"its splits are {list(self.files)} (also accepted: "
                                f"{[a for a in known if a not in self.files]})")
        return name


def _glue_hub(config: str, a: str, b: str, label: str = "label",
              splits: dict[str, str] | None = None) -> HubSource:
    return HubSource("nyu-mll/glue", config, a, b, label,
                     splits or {"train": "train", "dev": "validation", "test": "test"})


_SICK_FILES: dict[str, tuple[str, ...]] = {
    "train": ("SICK_train.txt", "SICK.txt"),
    "trial": ("SICK_trial.txt", "SICK.txt"),
    "test": ("SICK_test_annotated.txt", "SICK.txt"),
}
_DEV = {"validation": "dev"}

SPECS: dict[str, DatasetSpec] = {s.name: s for s in (
    DatasetSpec(
        "snli", "SNLI 1.0 (Bowman et al. 2015)", ("snli", "snli_1.0"),
        {s: (f"snli_1.0_{s}.jsonl", f"snli_1.0_{s}.txt", f"snli_1.0_{s}.partial.jsonl")
         for s in ("train", "dev", "test")},
        F.read_nli, L.SNLI, _DEV,
        HubSource("stanfordnlp/snli", None, "premise", "hypothesis", "label",
                  {"train": "train", "dev": "validation", "test": "test"})),
    DatasetSpec(
        "mnli", "MultiNLI 1.0 (Williams et al. 2018)", ("mnli", "multinli_1.0", "multinli"),
        {s: (f"multinli_1.0_{s}.jsonl", f"multinli_1.0_{s}.txt")
         for s in ("train", "dev_matched", "dev_mismatched")},
        F.read_nli, L.SNLI,
        {"validation_matched": "dev_matched", "validation_mismatched": "dev_mismatched"},
        _glue_hub("mnli", "premise", "hypothesis", splits={
            "train": "train", "dev_matched": "validation_matched",
            "dev_mismatched": "validation_mismatched"})),
    DatasetSpec(
        "qqp", "Quora Question Pairs (GLUE)", ("qqp", "QQP"),
        {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",),
         "all": ("quora_duplicate_questions.tsv",)},
        F.read_qqp, L.QQP, _DEV, _glue_hub("qqp", "question1", "question2")),
    DatasetSpec(
        "mrpc", "Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005)", ("mrpc", "MRPC"),
        {"train": ("msr_paraphrase_train.txt",), "test": ("msr_paraphrase_test.txt",)},
        F.read_mrpc, L.MRPC, {},
        _glue_hub("mrpc", "sentence1", "sentence2", splits={"train": "train", "test": "test"})),
    DatasetSpec(
        "stsb", "STS Benchmark (Cer et al. 2017)", ("stsb", "STS-B", "stsbenchmark"),
        {s: (f"sts-{s}.csv", f"original/sts-{s}.tsv", f"{s}.tsv")
         for s in ("train", "dev", "test")},
        F.read_stsb, L.STSB, _DEV, _glue_hub("stsb", "sentence1", "sentence2")),
    DatasetSpec(
        "qnli", "QNLI v2 (GLUE)", ("qnli", "QNLI"),
        {s: (f"{s}.tsv",) for s in ("train", "dev", "test")},
        F.read_qnli, L.GLUE_ENTAIL, _DEV, _glue_hub("qnli", "question", "sentence")),
    DatasetSpec(
        "rte", "RTE (GLUE: RTE1-3, RTE5)", ("rte", "RTE"),
        {s: (f"{s}.tsv",) for s in ("train", "dev", "test")},
        F.read_rte, L.GLUE_ENTAIL, _DEV, _glue_hub("rte", "sentence1", "sentence2")),
    DatasetSpec(
        "sick", "SICK, entailment (Marelli et al. 2014)", ("sick", "SICK"), _SICK_FILES,
        F.sick("entailment"), L.SICK, {"dev": "trial", "validation": "trial"}),
    DatasetSpec(
        "sick-r", "SICK, relatedness score 1-5 (Marelli et al. 2014)", ("sick", "SICK"),
        _SICK_FILES, F.sick("relatedness"), L.SICK_R, {"dev": "trial", "validation": "trial"}),
    DatasetSpec(
        "scitail", "SciTail 1.0 (Khot et al. 2018), tsv_format",
        ("scitail", "SciTailV1.1/tsv_format", "SciTailV1/tsv_format", "tsv_format"),
        {s: (f"scitail_1.0_{s}.tsv", f"tsv_format/scitail_1.0_{s}.tsv")
         for s in ("train", "dev", "test")},
        F.read_scitail, L.SCITAIL, _DEV,
        HubSource("allenai/scitail", "tsv_format", "premise", "hypothesis", "label",
                  {"train": "train", "dev": "validation", "test": "test"})),
    DatasetSpec(
        "twitterurl", "Twitter-URL paraphrase corpus (Lan et al. 2017)",
        ("twitterurl", "Twitter-URL-Corpus"),
        {s: (f"Twitter_URL_Corpus_{s}.txt",) for s in ("train", "test")},
        F.read_twitter_url, L.TWITTER),
)}


#: usable pairs of each split of the full releases whose slices are bundled (read from the
#: release files with these readers; SNLI's from its published counts, its full files not being
#: bundled anywhere): a build that reads a bundled slice says how much of the split it is
RELEASE_PAIRS: dict[tuple[str, str], int] = {
    ("snli", "dev"): 9842, ("snli", "test"): 9824,
    ("mrpc", "train"): 4076, ("mrpc", "test"): 1725,
    ("stsb", "train"): 5749, ("stsb", "dev"): 1500, ("stsb", "test"): 1379,
    ("qnli", "dev"): 5463, ("qnli", "test"): 5463,
    ("rte", "train"): 2490, ("rte", "dev"): 277, ("rte", "test"): 3000,
    **{(name, split): n for name in ("sick", "sick-r") for split, n in (("train", 4500), ("trial", 500),
                                                                        ("test", 4927))},
    ("twitterurl", "test"): 9334,
}


def get_spec(name: str) -> DatasetSpec:
    """The spec of a named dataset; NotFoundError listing the known names otherwise."""
    spec = SPECS.get(name.lower()) if isinstance(name, str) else None
    if spec is None:
        raise NotFoundError(f"unknown dataset {name!r}; known datasets: {sorted(SPECS)}. "
                            f"For any other CSV/TSV/JSONL/Parquet file give its path as {option('dataset', 'FILE')} "
                            f"with its columns: {option('text_a', 'COL')} {option('text_b', 'COL')} "
                            f"{option('label', 'COL')}")
    return spec
