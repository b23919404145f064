"""The top-guess attack on uploaded predictions (Yuan et al., PTF-FedRec, ICDE 2024, Sec. III-B2).

A curious-but-honest server sees, from each client, a list of ``(item id, score)`` pairs predicted
by the client's private model on items it trained on (positives and sampled negatives). Because
the client was trained to score its positives higher, the server guesses that the ``k`` highest
scores are the positives. Following the paper's threat model, the attacker is granted ``k``: the
number of positives among the uploaded items (the paper assumes the negative-sampling ratio is
known; with ``assumed_ratio`` set, ``k = round(n_uploaded / (1 + assumed_ratio))`` is used
instead). Each upload is scored with set precision / recall / F1 against ``truth``:

* ``"interactions"`` (default, the paper's goal "infer the client's interaction set"): all the
  client's positives, uploaded or not -- so uploading only a share ``beta`` of them (sampling)
  caps the attack's recall at about ``beta``;
* ``"uploaded"``: only the positives present in the upload (how well the order leaks labels).

The means over uploads are reported (macro average).

:class:`TopGuessAttack` is a runtime observer (``runtime.observers.append(attack)``): it only
reads the messages the server receives. The ground truth (each client's positives) is given to it
by the experimenter to *score* the attack; the attack's guesses never use it (except ``k``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedrec.federation.message import Message
from fedrec.metrics.classification import set_precision_recall_f1


def top_guess(items: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` items with the highest scores (ties: lower position first)."""
    k = max(0, min(int(k), len(items)))
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return np.asarray(items)[order[:k]]


class TopGuessAttack:
    """Observer recording each upload of ``step`` and scoring the top-guess attack on it."""

    def __init__(self, positives: Mapping[int, np.ndarray], step: str = "train",
                 assumed_ratio: float | None = None, truth: str = "interactions") -> None:
        if truth not in ("interactions", "uploaded"):
            raise ValueError(f"truth must be 'interactions' or 'uploaded', got {truth!r}")
        self.positives = {int(u): np.asarray(p) for u, p in positives.items()}
        self.step = step
        self.assumed_ratio = assumed_ratio
        self.truth = truth
        self.records: list[dict[str, float]] = []

    def __call__(self, msg: Message) -> None:
        if msg.step != self.step or msg.direction != "up" or not isinstance(msg.sender, int):
            return
        payload = msg.payload
        if "items" not in payload or "scores" not in payload:
            return
        items = np.asarray(payload["items"]).astype(np.int64)
        scores = np.asarray(payload["scores"])
        own = self.positives.get(msg.sender, np.empty(0, np.int64))
        uploaded = np.intersect1d(items, own)
        truth = own if self.truth == "interactions" else uploaded
        if len(truth) == 0 or len(items) == 0:
            return
        if self.assumed_ratio is None:
            k = len(uploaded)
        else:
            k = round(len(items) / (1.0 + self.assumed_ratio))
        prf = set_precision_recall_f1(top_guess(items, scores, k), truth)
        self.records.append({"round": float(msg.round), "client": float(msg.sender),
                             "precision": prf.precision, "recall": prf.recall, "f1": prf.f1})

    def summary(self, round: int | None = None) -> dict[str, float]:
        """Mean precision / recall / F1 over the recorded uploads (of one round, or all)."""
        recs = [r for r in self.records if round is None or r["round"] == round]
        if not recs:
            return {}
        return {
            "attack_precision": float(np.mean([r["precision"] for r in recs])),
            "attack_recall": float(np.mean([r["recall"] for r in recs])),
            "attack_f1": float(np.mean([r["f1"] for r in recs])),
            "attack_uploads": float(len(recs)),
        }

    def state_dict(self) -> dict:
        return {"records": list(self.records)}

    def load_state_dict(self, state: dict) -> None:
        self.records = list(state["records"])
