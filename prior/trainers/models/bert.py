"""`bert`: the baseline, Hugging Face ``BertForSequenceClassification`` unchanged."""

from __future__ import annotations

from prior.trainers.models.base import PriorBertModel


class BertPairModel(PriorBertModel):
    """BERT fine-tuned on ``[CLS] A [SEP] B [SEP]``; [CLS] → pooler → classifier."""

    model_name = "bert"
