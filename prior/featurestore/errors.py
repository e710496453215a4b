"""The errors of `prior`, derived from the one error root :class:`~prior.errors.PriorError`
(defined below every package in `prior.errors`, re-exported here).

The subclasses also derive from the builtin they refine (as zarr-python does), so callers may
catch either. Messages say what failed, where (file, row, field when known) and what to do
about it.
"""

from __future__ import annotations

from prior.errors import PriorError

__all__ = ["DataError", "NotFoundError", "PriorError", "ResourceError", "SegmentLostError", "StoreError"]


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


class StoreError(PriorError, RuntimeError):
    """The feature store is damaged, locked or used inconsistently."""


class ResourceError(PriorError, RuntimeError):
    """A resource (WordNet, a parser model, embeddings, a backbone) is missing or unusable."""


class SegmentLostError(StoreError):
    """A segment's folder or files vanished before its commit (removed by a forced `gc`, or the
    writer's lease expired): nothing was committed, and the writer may write it again."""
