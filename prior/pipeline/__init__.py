"""Read datasets, parse sentences, compute features: the Dask build that fills the store."""
