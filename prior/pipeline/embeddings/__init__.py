"""Static word embeddings for GiBERT: file readers and writer, the store's vocabulary table,
the dependency-context skip-gram trainer and counter-fitting. Long embedding work reports
through a `prior.progress.Progress` callback."""

from prior.progress import Progress

__all__ = ["Progress"]
