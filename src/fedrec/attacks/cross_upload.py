"""The cross-upload attack on uploaded predictions (PTF-FedRec): a server that keeps all of a
client's ``(item, score)`` uploads and discounts the items it dispersed to that client.

Threat model: an honest-but-curious server. It follows the protocol and sees, in every round,
each cohort client's upload (item ids and the client model's scores on them). It keeps every
upload of the run, knows which client sent which, knows what it sent each client (the dispersed
items) and the public configuration (the negative ratio ``num_negatives``). It does not know the
clients' interactions nor their randomness. :class:`CrossUploadAttack` guesses each client's
interaction set from all the uploads of that client seen so far; the truth is given to it by the
experimenter only to score the guesses (and to grant ``k`` with ``assumed_ratio=None``).

Discounting: a PTF-FedRec client trains on, and may upload as non-positives, the items of the
server's latest dispersal to it (its soft labels). The server sent them, so it skips those ids
in the client's next upload; every other uploaded id is a positive or one of the client's fixed
negatives. Per client and id it keeps the number ``n_i`` of (non-discounted) uploads holding the
id and the sum ``S_i`` of their scores. Statistics (higher: more likely a positive):

* ``mean``: ``S_i / n_i``, the id's mean score: a client's model scores its positives high in
  every upload, and averaging undoes a swap that hits a positive in a few of them;
* ``sum``: ``S_i``: positives are also uploaded more often than a given negative (sampling
  draws a share of the positives and a few times as many negatives out of four times as many);
* ``count``: ``n_i``, frequency alone.

The guess is the top ``k`` ids, ties broken by a public pseudo-random order of the ids
(:func:`fedrec.core.rng.counter_uniform` of the id; breaking them by id would bring in the
catalogue's id order, a prior and not a leak: ML-100K's items 1-199 have 152 ratings on
average, items 1000-1682 have 11); ``k = round(n / (1 + assumed_ratio))`` with ``n`` the
distinct ids kept (the public negative ratio: every positive and fixed negative is eventually
uploaded), or, with ``assumed_ratio=None``, the size of the truth (granted).

Scores: set F1 (:func:`fedrec.metrics.classification.set_precision_recall_f1`) against the
client's positives (``truth="interactions"``) or the positives among the ids kept
(``"uploaded"``), when the client's ``n``-th upload arrives for ``n`` in ``at_uploads`` and over
all its uploads (:meth:`CrossUploadAttack.finish`); summaries are means over clients. Chance:
a uniform random ``k``-subset of the ids kept, whose expected F1 is exactly
``2 k h / (n (k + t))`` (``h`` true ids among the ``n`` kept, ``t`` the truth's size: F1 is
``2 TP / (k + t)`` and ``E[TP] = k h / n``) -- the figure an attack that learns nothing from the
scores reaches, e.g. against uploads whose ids do not depend on the client's data.

Memory: per tracked client, the sorted distinct ids kept with their ``n_i`` and ``S_i`` (never
the uploads themselves).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedrec.core.rng import counter_uniform
from fedrec.federation.message import SERVER, Message
from fedrec.metrics.classification import set_precision_recall_f1

STATISTICS = ("mean", "sum", "count")
_TIEBREAK_SEED = 0x7A3E
DEFAULT_AT_UPLOADS = (1, 2, 5, 10, 20, 40)


@dataclass
class KeptUploads:
    """One client's uploads as the server keeps them: distinct ids, uploads holding each, sums
    of their scores (running totals only)."""

    uploads: int = 0
    ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    count: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    total: np.ndarray = field(default_factory=lambda: np.empty(0, np.float64))

    def add(self, ids: np.ndarray, scores: np.ndarray) -> None:
        """Fold one upload's kept ``(ids, scores)`` in (ids distinct within an upload)."""
        self.uploads += 1
        merged, inv = np.unique(np.concatenate([self.ids, ids]), return_inverse=True)
        count = np.zeros(len(merged), np.int64)
        total = np.zeros(len(merged), np.float64)
        old, new = inv[: len(self.ids)], inv[len(self.ids):]
        count[old] += self.count
        total[old] += self.total
        count[new] += 1
        total[new] += scores
        self.ids, self.count, self.total = merged, count, total

    def statistic(self, name: str) -> np.ndarray:
        """The named statistic of every kept id (module docstring)."""
        if name == "mean":
            return self.total / np.maximum(self.count, 1)
        if name == "sum":
            return self.total.copy()
        if name == "count":
            return self.count.astype(np.float64)
        raise ValueError(f"unknown statistic {name!r}; use one of {', '.join(STATISTICS)}")


def chance_f1(kept: int, hits: int, k: int, truth: int) -> float:
    """Expected F1 of a uniform random ``k``-subset of ``kept`` ids holding ``hits`` true ones,
    scored against a truth of ``truth`` ids: ``2 k hits / (kept (k + truth))``."""
    if kept == 0 or k + truth == 0:
        return 0.0
    return 2.0 * k * hits / (kept * (k + truth))


class CrossUploadAttack:
    """Server-side observer keeping each client's uploads of ``step`` and the items sent to it
    by ``disperse_step`` (module docstring). ``positives``: each client's interactions (scoring,
    and ``k`` when granted)."""

    def __init__(self, positives: Mapping[int, np.ndarray], assumed_ratio: float | None = None,
                 truth: str = "interactions", at_uploads: Iterable[int] = DEFAULT_AT_UPLOADS,
                 step: str = "train", disperse_step: str = "disperse") -> None:
        if truth not in ("interactions", "uploaded"):
            raise ValueError(f"truth must be 'interactions' or 'uploaded', got {truth!r}")
        self.positives = {int(u): np.unique(np.asarray(p).astype(np.int64))
                          for u, p in positives.items()}
        self.assumed_ratio = assumed_ratio
        self.truth = truth
        self.at_uploads = {int(n) for n in at_uploads}
        self.step, self.disperse_step = step, disperse_step
        self.kept: dict[int, KeptUploads] = {}
        self.dispersed: dict[int, np.ndarray] = {}  # each client's latest dispersal
        self.records: list[dict[str, Any]] = []

    def __call__(self, msg: Message) -> None:
        payload = msg.payload
        if "items" not in payload:
            return
        ids = np.asarray(torch.as_tensor(payload["items"]).cpu()).astype(np.int64)
        if (msg.step == self.disperse_step and msg.direction == "down"
                and msg.sender == SERVER and isinstance(msg.receiver, int)):
            self.dispersed[msg.receiver] = ids
            return
        if (msg.step != self.step or msg.direction != "up" or msg.receiver != SERVER
                or not isinstance(msg.sender, int) or "scores" not in payload):
            return
        c = int(msg.sender)
        if len(self.positives.get(c, ())) == 0:
            return
        scores = np.asarray(torch.as_tensor(payload["scores"]).cpu(), np.float64)
        keep = ~np.isin(ids, self.dispersed.get(c, np.empty(0, np.int64)))
        acc = self.kept.setdefault(c, KeptUploads())
        acc.add(ids[keep], scores[keep])
        if acc.uploads in self.at_uploads:
            self.records.append(self.score(c, str(acc.uploads)))

    def k_of(self, client: int) -> int:
        """The guess size for ``client`` (module docstring)."""
        acc = self.kept[client]
        if self.assumed_ratio is None:
            return len(self._truth(client))
        return round(len(acc.ids) / (1.0 + self.assumed_ratio))

    def _truth(self, client: int) -> np.ndarray:
        own = self.positives[client]
        return own if self.truth == "interactions" else np.intersect1d(own, self.kept[client].ids)

    def guesses(self, client: int) -> dict[str, np.ndarray]:
        """Each statistic's top-``k`` guess for ``client`` (ties: module docstring)."""
        acc, k = self.kept[client], self.k_of(client)
        tiebreak = counter_uniform(_TIEBREAK_SEED, torch.from_numpy(acc.ids)).numpy()
        return {name: acc.ids[np.lexsort((tiebreak, -acc.statistic(name)))[:k]]
                for name in STATISTICS}

    def score(self, client: int, label: str) -> dict[str, Any]:
        """One client's record: its F1 under every statistic, and chance."""
        acc, truth, k = self.kept[client], self._truth(client), self.k_of(client)
        hits = len(np.intersect1d(truth, acc.ids))
        rec: dict[str, Any] = {"client": client, "uploads": label, "n": acc.uploads,
                               "kept": len(acc.ids), "k": k,
                               "chance": chance_f1(len(acc.ids), hits, k, len(truth))}
        for name, guess in self.guesses(client).items():
            rec[name] = set_precision_recall_f1(guess, truth).f1 if len(truth) else 0.0
        return rec

    def finish(self) -> None:
        """Score every client over all its uploads so far (label ``"all"``); idempotent."""
        self.records = [r for r in self.records if r["uploads"] != "all"]
        self.records += [self.score(c, "all") for c in sorted(self.kept)]

    def summary(self) -> list[dict[str, Any]]:
        """Per upload count (then ``"all"``): clients scored, mean uploads, chance and each
        statistic's mean F1."""
        labels = sorted({str(r["uploads"]) for r in self.records},
                        key=lambda x: (x == "all", int(x) if x != "all" else 0))
        out = []
        for label in labels:
            recs = [r for r in self.records if r["uploads"] == label]
            row: dict[str, Any] = {"uploads": label, "clients": len(recs)}
            for name in ("n", "chance", *STATISTICS):
                row[name] = float(np.mean([r[name] for r in recs]))
            out.append(row)
        return out

    def overall(self) -> dict[str, Any]:
        """After :meth:`finish`: the figure over all uploads -- the statistic with the highest
        mean F1, its F1, the chance level, the clients and their mean uploads ({} when none)."""
        self.finish()
        rows = [r for r in self.summary() if r["uploads"] == "all"]
        if not rows:
            return {}
        row = rows[0]
        best = max(STATISTICS, key=lambda s: row[s])
        return {"f1": row[best], "statistic": best, "chance_f1": row["chance"],
                "clients": row["clients"], "mean_uploads": row["n"],
                **{f"f1_{s}": row[s] for s in STATISTICS}}

    def state_dict(self) -> dict[str, Any]:
        return {"kept": {c: (a.uploads, a.ids.copy(), a.count.copy(), a.total.copy())
                         for c, a in self.kept.items()},
                "dispersed": {c: d.copy() for c, d in self.dispersed.items()},
                "records": [dict(r) for r in self.records]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.kept = {int(c): KeptUploads(int(n), np.asarray(i), np.asarray(k), np.asarray(t))
                     for c, (n, i, k, t) in state["kept"].items()}
        self.dispersed = {int(c): np.asarray(d) for c, d in state["dispersed"].items()}
        self.records = [dict(r) for r in state["records"]]
