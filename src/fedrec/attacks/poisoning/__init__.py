"""Malicious clients: item promotion and untargeted poisoning (issue 40's threat model).

A curious server is one half of a federated recommender's threat model; the other is a
malicious client. Anyone can register fake users or take over devices, and each of their
uploads steers the shared item model. In a poisoning experiment a fraction of the clients
(:mod:`~fedrec.attacks.poisoning.population`: fake users or taken-over ones) runs an attack
instead of the method's client code (:mod:`~fedrec.attacks.poisoning.clients`). They are
ordinary parties: sampled, metered, checked and observed as benign ones, reaching only their
own data and what the protocol sends them.

What they know: the catalogue, public item popularity, what the protocol sends every client
(for FCF the item table), never a benign user's data. What they do:

* data poisoning (``random``, ``popular``): the method's own code on fake profiles that rate
  the targets at the top of the scale;
* model poisoning (:mod:`~fedrec.attacks.poisoning.crafting`: ``crafted`` promotion of the
  targets for users approximated by popular items; ``untargeted`` sign flipping): crafted
  updates in the method's upload format, through the method's
  :class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter`; for a method whose clients
  upload predictions, not parameters (PTF-FedRec), crafted scores through its
  :class:`~fedrec.attacks.poisoning.predictions.PredictionAdapter`
  (:mod:`~fedrec.attacks.poisoning.predictions`); :func:`~.model.model_attack` picks by the
  adapter.

The measure is the targets' exposure among benign users (:mod:`fedrec.metrics.exposure`) and
the benign accuracy, both from the ordinary client-side evaluation, which malicious clients do
not answer.
"""

from fedrec.attacks.poisoning.clients import (
    EVALUATION_STEP,
    ClientAttack,
    ItemTableAdapter,
    MaliciousClients,
    ModelPoisoning,
)
from fedrec.attacks.poisoning.crafting import CraftedPromotion, Untargeted
from fedrec.attacks.poisoning.model import Adapter, model_attack
from fedrec.attacks.poisoning.options import (
    ATTACKS,
    DATA_ATTACKS,
    MALICIOUS_KINDS,
    MODEL_ATTACKS,
    PoisoningOptions,
    malicious_count,
    poisoned,
)
from fedrec.attacks.poisoning.population import AttackPlan, plan_attack
from fedrec.attacks.poisoning.predictions import (
    InvertedPredictions,
    PredictionAdapter,
    PromotedPredictions,
)

__all__ = ["ATTACKS", "DATA_ATTACKS", "EVALUATION_STEP", "MALICIOUS_KINDS", "MODEL_ATTACKS",
           "Adapter", "AttackPlan", "ClientAttack", "CraftedPromotion", "InvertedPredictions",
           "ItemTableAdapter", "MaliciousClients", "ModelPoisoning", "PoisoningOptions",
           "PredictionAdapter", "PromotedPredictions", "Untargeted", "malicious_count",
           "model_attack", "plan_attack", "poisoned"]
