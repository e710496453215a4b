"""The errors of `prior`: the one root, :class:`PriorError`, and its subclasses by topic that
every package raises (bad input data, something asked for that does not exist, a missing
resource). Below every package: any of them may import it without importing another. Errors
of one package's own topic live in that package (the store's in `prior.featurestore.errors`,
an entry selection's in `prior.featurestore.selection`, a checkpoint's in
`prior.trainers.checkpoint`, …), derived from these.

The subclasses also derive from the builtin they refine (as zarr-python does), so callers may
catch either. Messages say what failed, where (file, row, field when known) and what to do
about it.
"""

from __future__ import annotations

__all__ = ["DataError", "NotFoundError", "PriorError", "ResourceError"]


class PriorError(Exception):
    """Root of all errors raised by `prior`."""


class DataError(PriorError, ValueError):
    """Input data cannot be used: a bad file, row or field."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 field: str | None = None) -> None:
        where = ", ".join(
            part for part in (
                f"file {file}" if file is not None else "",
                f"row {row}" if row is not None else "",
                f"field {field!r}" if field is not None else "",
            ) if part
        )
        super().__init__(f"{where}: {message}" if where else message)
        self.file, self.row, self.field = file, row, field


class NotFoundError(PriorError, FileNotFoundError):
    """A file, dataset, model or store entry that was asked for does not exist."""


class ResourceError(PriorError, RuntimeError):
    """A resource (WordNet, a parser model, embeddings, a backbone) is missing or unusable."""
