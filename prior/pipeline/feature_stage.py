"""The build's feature stages: each feature is prepared in the driver (an IDF table, a
vocabulary: `Feature.prepare`, or `Feature.restore` from an entry's record), its entry made,
and the items its entry lacks cut into `FeatureTask` partitions.

The driver ships keys only: a worker reads the parses it needs from the store itself, so every
worker starts at once (on 9,927 SICK pairs the driver used to spend ~0.3 s per partition reading
and converting parses while the workers waited). The build runs the partitions of all features
at once, in order, so no feature waits for the last partition of the one before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from prior.featurestore import make_entry
from prior.featurestore.recipe import FeatureRecipe, Recipe
from prior.pipeline.build_report import StageReport
from prior.pipeline.build_run import BuildRun, Triple, count
from prior.pipeline.features.base import Feature
from prior.pipeline.features.context import BuildContext
from prior.pipeline.parsers.base import Parse
from prior.pipeline.partitions import partitions
from prior.pipeline.runner import Job
from prior.pipeline.tasks import FeatureTask, PartitionResult


class StageClock:
    """When the feature partitions were submitted: each feature stage's seconds are its
    preparation, then the time until its last partition is done."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def since(self) -> float:
        return time.perf_counter() - self.t0


def feature_context(run: BuildRun, split_pairs: dict[str, list[Triple]], unparsed: set[str]) -> BuildContext:
    """What features' ``prepare`` may use, with the build's parses read on demand."""
    cache: dict[str, Parse] = {}

    def parses_of(keys: Sequence[str]) -> list[Parse]:
        wanted = [k for k in keys if k not in cache]
        if wanted:
            for rec in run.store.parses(wanted, parse=run.report.parse, needs=run.annotations).iter_rows(named=True):
                cache[rec["sent_key"]] = Parse.from_record(rec)  # what is not annotated no feature here reads
        return [cache[k] for k in keys]

    return BuildContext(store=run.store, dataset=run.report.dataset, options=run.options, parse=run.report.parse,
                        split_pairs=split_pairs, _parses=parses_of, unparsed=unparsed)


def feature_jobs(run: BuildRun, ctx: BuildContext, feature: Feature, built_by: str, items: list[Any],
                 clock: StageClock) -> list[Job]:
    """Prepare ``feature`` and return the jobs of its partitions that compute the ``items``
    (sentence keys, or (pair, a, b) key triples) its entry lacks."""
    t0 = time.perf_counter()
    report, options = run.report, run.options
    if feature.name in options.restore:
        feature.restore(ctx, options.restore[feature.name])
    else:
        feature.prepare(ctx)
        report.notes += feature.report_lines(report.dataset)
    entry = make_entry(feature.name, feature.version, feature.params(), report.parse, feature.scope,
                       feature.components, built_by=built_by, layout=feature.layout,
                       **entry_record(feature, built_by, options.feature_options.get(built_by, {})))
    report.entries[f"{feature.name}@{feature.version}"] = entry.key
    have = run.store.existing_keys(entry)
    known = tuple(s.id for s in run.store.segments("feature") if s.target["entry"] == entry.key)
    todo = [item for item in items if (item if feature.scope == "sentence" else item[0]) not in have]
    stage = StageReport(f"feature {feature.name}", items=len(items), reused=len(items) - len(todo))
    bar = run.bar(feature.name, len(todo))
    stage.seconds = prepared = time.perf_counter() - t0
    report.stages.append(stage)

    def done(result: PartitionResult) -> None:
        settled = count(stage, result, "key")
        stage.seconds = prepared + clock.since()
        run.advance(bar, settled)

    parts = partitions(todo, run.runner.workers, run.settings.partition_size)
    target = entry.target()
    return [Job(_task(run, feature, target, part, known, f"feature {feature.name} {i}/{len(parts)}"), done)
            for i, part in enumerate(parts, 1)]


def _task(run: BuildRun, feature: Feature, target: dict[str, Any], part: list[Any], known: tuple[str, ...],
          label: str) -> FeatureTask:
    """One partition's task: keys only (the worker reads the parses from the store)."""
    sentences = feature.scope == "sentence"
    return FeatureTask(store=run.store.ref, keys=tuple(part) if sentences else tuple(t[0] for t in part),
                       pairs=None if sentences else tuple((a, b) for _, a, b in part), lease=run.lease, known=known,
                       label=label, feature=feature, target=target, parse=run.report.parse, record=run.record())


def entry_record(feature: Feature, built_by: str, given: dict[str, Any]) -> dict[str, Any]:
    """What the store records of how an entry was built: its non-default options (``{}``: the
    default entry reads pick) and the recipe part that makes it again (feature, options, inputs)."""
    from prior.pipeline.features.registry import entry_options

    chosen = entry_options(feature, given)
    made = FeatureRecipe(built_by, dict(sorted(chosen.items())), dict(feature.recipe_inputs()))
    return {"options": chosen, "recipe": Recipe(features=(made,))}
