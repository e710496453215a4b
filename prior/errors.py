"""The one error root of `prior`, below every package: any of them may import it without
importing another (`prior.featurestore.errors` holds the errors derived from it).

Every error the project raises on purpose derives from :class:`PriorError`; messages say what
failed, where (file, row, field when known) and what to do about it.
"""

from __future__ import annotations

__all__ = ["PriorError"]


class PriorError(Exception):
    """Root of all errors raised by `prior`."""
