"""spaCy's matrix products through numpy's BLAS instead of thinc's blis.

thinc's ``NumpyOps.gemm`` calls blis, which on the 2-core AVX-512 machine the project is
measured on ran a (4000 × 288) · (288 × 288) product at 31 GFLOPS where numpy's OpenBLAS (and
torch) ran it at 77-83. The CNN tok2vec layers of spaCy's tagger and NER are such products:
:func:`use_numpy_matmul` gives every layer of a loaded pipeline ops whose ``gemm`` is
``numpy.matmul``, and spaCy's annotation took 40 % less CPU time (bench/parse_profile.py).

Same values as far as measured, not bit-identical: the products round differently in the last
bits; tags, lemmas, entities and sentence boundaries were equal on every token compared
(``bench/spacy_kernels.py`` counts them over the data dir's texts). Like the device a model runs
on, the kernel is not part of a parse's fingerprint. The products are small (a batch of
words × 288), so the BLAS runs single-threaded while spaCy annotates
(:func:`single_threaded_blas`): with OpenBLAS's threads they cost more CPU time than blis.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np


def _matmul_ops() -> Any:
    from thinc.api import NumpyOps

    class NumpyMatmulOps(NumpyOps):
        """thinc's NumpyOps with ``gemm`` by ``numpy.matmul`` (OpenBLAS)."""

        name = "numpy-matmul"

        def gemm(self, x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None,
                 trans1: bool = False, trans2: bool = False) -> np.ndarray:
            a = x.T if trans1 else x
            b = y.T if trans2 else y
            if out is None:
                return np.matmul(a, b)
            np.matmul(a, b, out=out)
            return out

    return NumpyMatmulOps()


def use_numpy_matmul(nlp: Any) -> None:
    """Every thinc layer of ``nlp``'s components computes its products with ``numpy.matmul``;
    layers on another backend (a GPU's CupyOps) are left alone."""
    from thinc.api import NumpyOps

    ops = _matmul_ops()
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for layer in model.walk():
            if type(layer.ops) is NumpyOps:
                layer.ops = ops


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """numpy's BLAS on one thread within the block (a build's Dask workers already are)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
