"""`prior embed train|counterfit|oov`: make the papers' embeddings here and check coverage."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from prior.cli.console import console, friendly_errors
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref
from prior.progress import stage_bars

app = typer.Typer(help="Train dependency-based embeddings, counter-fit embeddings, report OOV rates.",
                  no_args_is_help=True)


class Contexts(StrEnum):
    dep = "dep"


@app.command("train")
@friendly_errors
def train_cmd(
    out: Annotated[Path, typer.Option(help="word2vec text file to write (a .json with the settings goes beside it).")],
    contexts: Annotated[Contexts, typer.Option(help="Context type: dep = each word's head and children with their relations.")] = Contexts.dep,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    dataset: Annotated[list[str] | None, typer.Option(help="Train on these datasets' sentences only (repeatable; default all parsed sentences).")] = None,
    parser: Annotated[str | None, typer.Option(help="Read the parse this parser made (as given to `prior build --parser`; default: biaffine, the default parser's).")] = None,
    parse: Annotated[str | None, typer.Option(help="Read this parse (an id prefix, as `prior store info` lists) instead of --parser's.")] = None,
    dim: Annotated[int, typer.Option(min=1)] = 300,
    negative: Annotated[int, typer.Option(min=1, help="Negative samples per pair.")] = 15,
    epochs: Annotated[int, typer.Option(min=1)] = 10,
    min_count: Annotated[int, typer.Option(min=1, help="Drop words and contexts seen fewer times.")] = 2,
    lr: Annotated[float, typer.Option(min=0.0)] = 0.025,
    seed: int = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch CPU threads.")] = 1,
    keep_case: Annotated[bool, typer.Option(help="Keep word case (default: lowercase).")] = False,
    no_collapse_prep: Annotated[bool, typer.Option("--no-collapse-prep", help="Keep ClearNLP prep/pobj arcs instead of collapsing them.")] = False,
) -> None:
    """Dependency-based skip-gram embeddings (Levy & Goldberg) from the parses in the store."""
    from prior.featurestore import open_store
    from prior.pipeline.embeddings.make import train_dependency_embeddings
    from prior.pipeline.embeddings.sgns import SgnsSettings

    settings = SgnsSettings(dim=dim, negative=negative, epochs=epochs, min_count=min_count, lr=lr,
                            seed=seed, threads=threads)
    opened = open_store(store_ref(store, storage_option), create=False)
    with stage_bars() as progress:
        made = train_dependency_embeddings(
            opened, out, settings=settings, parse=parse, parser=parser, datasets=dataset,
            lowercase=not keep_case, collapse_prep=not no_collapse_prep, progress=progress)
    r = made.record
    console.print(f"read parse {r['parse'][:12]} (parser {r['parser'] or 'not recorded'}): {r['sentences']} sentences",
                  markup=False)
    console.print(f"{r['words']} words × {r['dim']} from {r['sentences']} sentences "
                  f"({r['pairs']} pairs) in {r['seconds']} s → {made.path}; store resource {made.resource}")


@app.command("counterfit")
@friendly_errors
def counterfit_cmd(
    out: Annotated[Path, typer.Option(help="word2vec text file to write (a .json with the settings goes beside it).")],
    source: Annotated[str | None, typer.Argument(metavar="EMBEDDINGS", show_default=False, help="Embedding file (word2vec txt/bin, GloVe, fastText .vec) or a store resource key.")] = None,
    embeddings: Annotated[str | None, typer.Option("--embeddings", help="The same as the EMBEDDINGS argument.")] = None,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not add the result to a store.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Read only the first N words of the file.")] = None,
    k1: Annotated[float, typer.Option(help="Antonym repel weight.")] = 0.1,
    k2: Annotated[float, typer.Option(help="Synonym attract weight.")] = 0.1,
    k3: Annotated[float, typer.Option(help="Vector space preservation weight.")] = 0.1,
    delta: Annotated[float, typer.Option(help="Antonym margin (cosine distance).")] = 1.0,
    gamma: Annotated[float, typer.Option(help="Synonym margin (cosine distance).")] = 0.0,
    rho: Annotated[float, typer.Option(help="VSP neighbourhood radius.")] = 0.2,
    iterations: Annotated[int, typer.Option(min=1)] = 20,
    center: Annotated[bool, typer.Option(help="Subtract the mean vector first (not in the paper; for skip-gram spaces whose mean cosine is high).")] = False,
) -> None:
    """Counter-fit an embedding table to WordNet synonyms and antonyms (Mrkšić et al. 2016)."""
    from prior.featurestore import open_store
    from prior.pipeline.embeddings.counterfit import CounterfitSettings
    from prior.pipeline.embeddings.make import counterfit_embeddings

    if source is not None and embeddings is not None and source != embeddings:
        raise typer.BadParameter(f"two inputs, {source} and {embeddings}: give one", param_hint="EMBEDDINGS")
    if source is None and embeddings is None:
        raise typer.BadParameter("give the embeddings to counter-fit, e.g. `prior embed counterfit "
                                 "deps.vec --out deps-cf.vec`", param_hint="EMBEDDINGS")
    settings = CounterfitSettings(k1=k1, k2=k2, k3=k3, delta=delta, gamma=gamma, rho=rho,
                                  iterations=iterations, center=center)
    with stage_bars() as progress:
        made = counterfit_embeddings(source or embeddings or "", out,
                                     store=None if no_store else open_store(store_ref(store, storage_option)),
                                     settings=settings, limit=limit, progress=progress)
    r = made.record
    console.print(f"{r['words']} words (mean cosine {r['mean_cosine']}); {r['synonym_pairs']} synonym, "
                  f"{r['antonym_pairs']} antonym, {r['vsp_pairs']} VSP pairs; cost {r['cost_before']} → {r['cost_after']} "
                  f"in {r['seconds']} s → {made.path}"
                  + (f"; store resource {made.resource}" if made.resource else ""))


@app.command("oov")
@friendly_errors
def oov_cmd(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset name as stored.")],
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    vocab: Annotated[str | None, typer.Option(help="Key of the embeddings resource whose `emb` entry to use (default: the most recent `emb` entry).")] = None,
) -> None:
    """Out-of-vocabulary rate of each split of a dataset, from the stored `emb` word ids."""
    from prior.featurestore import Request, open_store
    from prior.pipeline.features.emb import oov_rates

    opened = open_store(store_ref(store, storage_option), create=False)
    entry = opened.find_entry("emb", Request(params=None if vocab is None else {"vocab": vocab}))
    console.print(f"emb entry {entry.key[:12]} (vocabulary {entry.params['vocab']}, "
                  f"lookup {entry.params['lookup']})", markup=False)
    for stats in oov_rates(opened, dataset, entry=entry):
        console.print(stats.line(dataset), markup=False)
