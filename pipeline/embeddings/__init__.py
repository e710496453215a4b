"""Static word embeddings for GiBERT: file readers and writer, the store's vocabulary table,
the dependency-context skip-gram trainer and counter-fitting."""

from collections.abc import Callable

Progress = Callable[[str, int, int, str], None]
"""``progress(stage, done, total, info)``: ``done`` of ``total`` units of a named stage are
finished; ``info`` is a short status (a loss, a cost). Long embedding work reports through it."""
