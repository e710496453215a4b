"""The six models: each a Hugging Face BERT subclass changing only what its paper changes."""

from __future__ import annotations

from trainers.models.base import PriorBertModel
from trainers.models.bert import BertPairModel
from trainers.models.bert_sim import BertSimModel
from trainers.models.cda import CdaModel
from trainers.models.dafa import DafaModel
from trainers.models.gibert import GiBertModel
from trainers.models.sgnet import SgNetModel

MODEL_CLASSES: dict[str, type[PriorBertModel]] = {
    cls.model_name: cls
    for cls in (BertPairModel, BertSimModel, SgNetModel, DafaModel, GiBertModel, CdaModel)
}

__all__ = ["MODEL_CLASSES", "PriorBertModel", "BertPairModel", "BertSimModel", "SgNetModel",
           "DafaModel", "GiBertModel", "CdaModel"]
