"""FedAvg-NeuMF's options (:mod:`fedrec.algorithms.methods.fedavg_ncf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.ncf_common import NCFClientConfig
from fedrec.config import option
from fedrec.models import ncf


@dataclass
class FedAvgNCFConfig(NCFClientConfig):
    """PTF-FedRec's client settings and split; nothing else (no server model, no defences)."""

    rounds: int = option(20)
    eval_every: int = option(5)


def server_param_names(shape: ncf.NCFShape) -> list[str]:
    """Names of the parameters the server owns (all but the user embedding)."""
    return ["item_emb", *(k for k in shape.param_shapes() if k != "user")]


