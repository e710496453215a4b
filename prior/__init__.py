"""`prior`: prior-knowledge features for sentence-pair models, built once into a feature store,
and the knowledge-enhanced BERT models that read them.

Its packages, each a folder of ``prior/``:

- `prior.pipeline`: dataset readers, parsers, features, the Dask build;
- `prior.layouts`: what a stored feature is (storage layouts, ragged arrays, read-time views);
- `prior.featurestore`: the on-disk store (``from prior.featurestore import open_store``);
- `prior.trainers`: the models, the store-reading data loader, train/eval and
  ``from prior.trainers import load_model``;
- `prior.cli`: the ``prior`` command.

Below them all, the shared root: `prior.errors` (the error root, ``PriorError``, and its
subclasses by topic), `prior.paths` (``PRIOR_HOME`` and the other places, resolved when used),
`prior.progress` (the progress bars), `prior.parser_spec` (the ``--parser`` syntax and its
trust judgement) and `prior.shipped` (the parser model and dataset slices shipped with the
package). They import nothing of the packages above; importing `prior` imports nothing else.
"""

from prior.errors import PriorError

__version__ = "0.1.0"

__all__ = ["PriorError", "__version__"]
