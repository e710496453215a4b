"""Every workaround `prior` needs for supar 1.1.4 on current torch / transformers, in one place.

supar 1.1.4 (the last release) predates torch 2.6 and transformers 5. What breaks and what we
do about it:

1. ``Parser.load`` calls ``torch.load(path)``; since torch 2.6 that means ``weights_only=True``
   and supar's dill-pickled checkpoints (args, fields, vocabularies as Python objects) are
   refused (supar issues #147, #149; the fix was never released). ``train()`` itself reloads
   its best checkpoint at the end, so even training fails. :func:`trusted_supar_load` lets
   supar unpickle **for the duration of a block only**, for files we wrote ourselves (our
   training run) or that a user explicitly names (``--parser biaffine:<path or name>``).
   The model `prior` ships is never loaded this way: it is safetensors + JSON
   (see :mod:`prior.pipeline.parsers.artifact`).
2. Its Python API reads every setting from a ``Config``: ``build()`` / ``train()`` called
   directly need all the settings that ``supar.cmds`` normally fills from a config file.
   :func:`supar_config` gives the complete set with supar's own defaults (biaffine-dep).
3. ``embed`` defaults to ``data/glove.6B.100d.txt`` in the command line; we always pass
   ``embed=''`` (random-init word embeddings), set in :func:`supar_config`.
4. ``encoder='bert'`` imports ``transformers.AdamW`` (removed in transformers 5). We only train
   the LSTM + char model, so :func:`supar_config` refuses any other encoder with a clear error
   instead of patching transformers.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import torch

from prior.errors import ResourceError

# supar's defaults for the LSTM biaffine dependency parser (supar/cmds + models/dep.py +
# the biaffine-dep-en config of supar 1.1.4), made explicit.
SUPAR_DEFAULTS: dict[str, Any] = {
    "encoder": "lstm",
    "feat": ["char"],
    "build": True,
    "checkpoint": False,
    "embed": "",
    "unk": "unk",
    "bert": None,
    "n_embed": 100,
    "n_pretrained": 100,
    "n_feat_embed": 100,
    "n_char_embed": 50,
    "n_char_hidden": 100,
    "embed_dropout": 0.33,
    "n_lstm_hidden": 400,
    "n_lstm_layers": 3,
    "encoder_dropout": 0.33,
    "n_arc_mlp": 500,
    "n_rel_mlp": 100,
    "mlp_dropout": 0.33,
    "min_freq": 2,
    "fix_len": 20,
    "lr": 2e-3,
    "mu": 0.9,
    "nu": 0.9,
    "eps": 1e-12,
    "weight_decay": 0.0,
    "clip": 5.0,
    "decay": 0.75,
    "decay_steps": 5000,
    "warmup": 0.1,
    "lr_rate": 1,
    "update_steps": 1,
    "batch_size": 5000,
    "buckets": 32,
    "epochs": 5000,
    "patience": 100,
    "punct": False,
    "tree": False,
    "proj": False,
    "partial": False,
    "max_len": None,
    "verbose": True,
    "local_rank": -1,
    "seed": 1,
}


def supar_config(**overrides: Any) -> dict[str, Any]:
    """The full setting set supar's ``build()`` and ``train()`` read, with ``overrides`` applied.

    Only the LSTM encoder is supported (``encoder='bert'`` needs ``transformers.AdamW``, gone in
    transformers 5); an unknown setting name is refused so typos do not pass silently.
    """
    unknown = sorted(set(overrides) - set(SUPAR_DEFAULTS) - {"path", "train", "dev", "test", "device"})
    if unknown:
        raise ResourceError(f"unknown supar settings {unknown}; known: {sorted(SUPAR_DEFAULTS)}")
    config = {**SUPAR_DEFAULTS, **overrides}
    if config["encoder"] != "lstm":
        raise ResourceError(
            f"encoder={config['encoder']!r} is not supported with supar 1.1.4 on transformers 5 "
            "(it imports transformers.AdamW, which was removed); use encoder='lstm'"
        )
    config.setdefault("device", "cpu")
    return config


@contextlib.contextmanager
def trusted_supar_load() -> Iterator[None]:
    """Within the block, ``torch.load`` defaults to ``weights_only=False`` (pickle allowed).

    Only for checkpoints we trust: our own training run's files, or a file / published model a
    user named explicitly. The previous ``torch.load`` is restored on exit, even on error.
    """
    original = torch.load

    @functools.wraps(original)
    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("weights_only", False)
        return original(*args, **kwargs)

    torch.load = load
    try:
        yield
    finally:
        torch.load = original


@contextlib.contextmanager
def quiet_supar_warnings() -> Iterator[None]:
    """Silence the two deprecation warnings supar 1.1.4 triggers on torch 2.13, nothing else.

    - ``supar/utils/fn.py`` ``pad``: "Using a non-tuple sequence for multidimensional indexing
      is deprecated" (UserWarning). torch 2.13 still gives the old (tuple) meaning; the test
      ``test_parsers_biaffine_matches_supar_predict`` pins that our results equal supar's own.
    - ``supar/modules/lstm.py``: "`apply_permutation` is deprecated" (FutureWarning).
    """
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using a non-tuple sequence for multidimensional indexing",
                                category=UserWarning)
        warnings.filterwarnings("ignore", message="`apply_permutation` is deprecated", category=FutureWarning)
        yield
