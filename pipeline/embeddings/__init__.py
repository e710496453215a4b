"""Static word embeddings for GiBERT: file readers and writer, the store's vocabulary table,
the dependency-context skip-gram trainer and counter-fitting."""
