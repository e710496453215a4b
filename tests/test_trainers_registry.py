"""Default settings: each paper's as its model class declares them for -base/-large, one shared
schedule for every -mini model."""

from __future__ import annotations

from prior.trainers.registry import MINI_SETTINGS, TrainSettings, default_settings, parse_model_name


def test_registry_paper_settings_come_from_the_model_classes() -> None:
    assert default_settings("bert", "sick") == TrainSettings()
    dafa = default_settings("dafa", "sick", "base")
    assert (dafa.weight_decay, dafa.clip) == (1e-8, 10.0)
    assert default_settings("cda", "mrpc", "large").epochs == 5
    gibert = default_settings("gibert", "mrpc")
    assert (gibert.lr, gibert.max_length) == (5e-5, 80) and default_settings("gibert", "sick").lr == 2e-5


def test_registry_mini_models_share_one_schedule() -> None:
    """One schedule for the pre-trained parameters; a model's own new parameters may have their
    documented lr (``mini_settings``: dafa's fusion at 1e-4, gibert's injection and sgnet's layer
    at 1e-3, each chosen on SICK's dev split by bench/compare.py grid)."""
    from dataclasses import replace

    shared = TrainSettings(**{**TrainSettings().to_dict(), **MINI_SETTINGS})
    minis = {replace(default_settings(m, d, "mini"), prior_lr=None)
             for m in ("bert", "dafa", "cda", "gibert") for d in ("sick", "mrpc")}
    assert minis == {shared}
    assert default_settings("bert", "sick", "mini").prior_lr is None
    assert {m: default_settings(m, "sick", "mini").prior_lr for m in ("dafa", "gibert", "sgnet", "cda")} == {
        "dafa": 1e-4, "gibert": 1e-3, "sgnet": 1e-3, "cda": None}


def test_registry_model_names() -> None:
    assert parse_model_name("dafa-large") == ("dafa", "large")
    assert parse_model_name("bert-sim") == ("bert-sim", None)
