"""What stored features are and how they are read, shared by every package of `prior`.

- `layouts.ragged`: the one ragged-array type (`Ragged`) for variable-size word vectors and
  matrices;
- `layouts.kinds`: storage layouts a feature declares and its entry records (`PairMatrix`,
  `SentenceMask`, `SentenceVector`, `WordIds`), so readers handle entries without knowing
  feature names;
- `layouts.views`: read-time views that combine entries when read (DAFA's M_F and its
  ablations).

numpy only; of `prior` it imports the error root (`featurestore.errors`) alone, so the store,
the pipeline and the trainers may all import it.
"""

from layouts.kinds import KINDS, Layout, PairMatrix, SentenceMask, SentenceVector, WordIds
from layouts.ragged import Ragged
from layouts.views import VIEWS, View, register_view, view_of

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
