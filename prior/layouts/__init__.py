"""What stored features are and how they are read, shared by every package of `prior`.

- `prior.layouts.ragged`: the one ragged-array type (`Ragged`) for variable-size word vectors and
  matrices;
- `prior.layouts.kinds`: storage layouts a feature declares and its entry records (`PairMatrix`,
  `SentenceMask`, `SentenceVector`, `WordIds`), so readers handle entries without knowing
  feature names;
- `prior.layouts.views`: read-time views that combine entries when read (DAFA's M_F and its
  ablations).

numpy only; of `prior` it imports the error root (`prior.errors`) alone, so the store,
the pipeline and the trainers may all import it.
"""

from prior.layouts.kinds import KINDS, Layout, PairMatrix, SentenceMask, SentenceVector, WordIds
from prior.layouts.ragged import Ragged
from prior.layouts.views import VIEWS, View, register_view, view_of

__all__ = [
           "KINDS",
           "VIEWS",
           "Layout",
           "PairMatrix",
           "Ragged",
           "SentenceMask",
           "SentenceVector",
           "View",
           "WordIds",
           "register_view",
           "view_of",
]
