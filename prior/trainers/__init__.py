"""Knowledge-enhanced BERT models, the store-reading data loader and the train/eval loops.

``from prior.trainers import load_model`` (`prior.trainers.predict`) is imported on first use, so
importing a submodule does not load the prediction code.
"""

from typing import Any

__all__ = ["Prediction", "Predictor", "load_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from prior.trainers import predict

        return getattr(predict, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
