"""The store's own errors, derived from the root of `prior.errors` (which holds the errors of
every package: bad data, not found, a missing resource)."""

from __future__ import annotations

from prior.errors import PriorError

__all__ = ["SegmentLostError", "StoreError"]


class StoreError(PriorError, RuntimeError):
    """The feature store is damaged, locked or used inconsistently."""


class SegmentLostError(StoreError):
    """A segment's folder or files vanished before its commit (removed by a forced `gc`, or the
    writer's lease expired): nothing was committed, and the writer may write it again."""
