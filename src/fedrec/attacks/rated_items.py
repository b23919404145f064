"""Which items did a FedGNN client rate? A curious server's guess from the client's upload.

Target: FedGNN (Wu et al., KDD 2021; :mod:`fedrec.algorithms.methods.fedgnn`). In step ``"train"``
each
selected client uploads ``{"items", "grad_items", "grad_model"}`` (plus its training ``"loss"``
when no local DP is claimed): the ids of its rated
items plus ``M`` pseudo items (unrated, drawn at random), shuffled together, with one gradient row
per id. Real rows are the gradients of the client's loss w.r.t. those items' embeddings; pseudo
rows are drawn from a Gaussian with the real rows' mean and covariance
(:meth:`~fedrec.algorithms.methods.fedgnn.FedGNNClient.pseudo`). With LDP the whole upload is
clipped in
L-infinity and gets Laplace noise per coordinate.

Threat model: the recommendation server is honest-but-curious. It follows the protocol and reads
what it receives: each upload of ``step`` sent to it by a client. It knows the protocol and its
public settings (``M``), but not which rows are real. The attack never reads client data or
client state: the experimenter gives it each client's rated (training) items only to *score* its
guesses, and, as :class:`~fedrec.attacks.top_guess.TopGuessAttack` does, to grant it ``k`` =
the number of real items in the upload (``pseudo_items=M`` replaces that grant by the estimate
``k = len(items) - M``, see below).

Guess rules (each upload is guessed with every rule in ``rules``):

* ``"all"``: every uploaded id. With ``M = 0`` the ids *are* the rated items, sent in clear,
  so this is exact (precision = recall = 1) with or without LDP (noise touches the rows, never
  the ids). With ``M > 0`` its recall stays 1 and its precision is ``K / (K + M)``.
* ``"density"``: the ``k`` rows whose ``neighbours``-th nearest other row of the same upload is
  closest. Why: real rows are gradients for one user vector and a handful of rating levels (the
  error ``y_hat - y`` takes about as many values as the rating scale early in training), so they
  bunch in a few tight clusters; pseudo rows only copy the first two moments and spread over the
  whole Gaussian ellipsoid. The best rule on an untrained model (round 1 in
  ``bench/bench_fedgnn_leakage.py``).
* ``"gaussian"``: the ``k`` rows least extreme under the Gaussian fitted to the upload (smallest
  Mahalanobis distance on the rows' span): a likelihood-ratio rule against the pseudo
  distribution, the real one being unknown. It wins because real rows are far from Gaussian:
  our reading (not tested) is that a few large rows inflate the covariance the pseudo rows
  copy, while most real rows stay near the centre. The best rule after some training.
* ``"principal"``: the ``k`` rows with the largest projection (absolute) on the upload's top
  principal direction (without noise, real rows lie mostly along the direction set by the
  user's hidden vector ``h_u``); and ``"norm"``: the ``k`` largest rows. Both are near chance:
  pseudo rows have the same mean and covariance, so any statistic of the moments, or of a linear
  or affine relation between a row's coordinates, is the same for both kinds.
* ``"random"``: ``k`` rows drawn uniformly (seeded by ``(seed, round, client)``): the chance
  level that a scoring rule must beat.

``k``: by default the number of real items in the upload (granted). With ``pseudo_items=M``,
``k = len(items) - M`` (exact as long as the client was not short of unrated items; a client
with ``K`` ratings pads with ``min(M, num_items - K)`` pseudo items, so when ``M >= num_items -
K`` every item is uploaded, the length says nothing and the estimate is clamped to ``[1, n]``).

Precision / recall / F1 per upload (:func:`fedrec.metrics.classification.set_precision_recall_f1`)
against the client's rated items; :meth:`RatedItemsAttack.summary` reports their means over
uploads (macro average) per rule, and under ``attack_precision/recall/f1`` the rule with the best
mean F1 (a choice made with the truth: the attacker's best rule in hindsight, an upper envelope
over this fixed set of rules).

Not done: a model-aware inversion (the server also knows the item table and GNN it broadcast, so
it could fit the client's user vector and ratings to the rows, and test each row against its own
item's embedding, which pseudo rows ignore); it might do better without LDP.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import numpy as np
import torch

from fedrec.federation.message import SERVER, Message
from fedrec.metrics.classification import set_precision_recall_f1

GUESS_RULES = ("all", "density", "gaussian", "principal", "norm", "random")
_SCORED = ("density", "gaussian", "principal", "norm")


def _rows(rows: np.ndarray | torch.Tensor) -> torch.Tensor:
    # float64: near-duplicate rows are the density rule's signal; float32 distances computed
    # through matrix products would cancel them away.
    x = torch.as_tensor(rows).detach().to(torch.float64)
    return x.reshape(len(x), -1)


def _kth_neighbour_distance(x: torch.Tensor, k: int, chunk: int = 1024) -> torch.Tensor:
    """Distance of each row to its ``k``-th nearest other row (chunked: memory ``chunk * n``)."""
    n = len(x)
    out = torch.empty(n, dtype=x.dtype)
    for s in range(0, n, chunk):
        d = torch.cdist(x[s : s + chunk], x)
        idx = torch.arange(s, min(s + chunk, n))
        d[idx - s, idx] = float("inf")  # not oneself
        out[s : s + chunk] = d.topk(k, dim=1, largest=False).values[:, -1]
    return out


def row_scores(rows: np.ndarray | torch.Tensor, rule: str, neighbours: int = 5) -> np.ndarray:
    """Score of each uploaded row under a scoring ``rule`` (higher = more likely a real item).

    ``rule`` is one of ``"density"``, ``"gaussian"``, ``"principal"``, ``"norm"`` (module
    docstring). Uses only the rows themselves.
    """
    x = _rows(rows)
    n = len(x)
    if n <= 1:
        return np.zeros(n)
    if rule == "norm":
        return x.norm(dim=1).numpy()
    if rule == "density":
        return (-_kth_neighbour_distance(x, max(1, min(neighbours, n - 1)))).numpy()
    xc = x - x.mean(0)
    _, s, vh = torch.linalg.svd(xc, full_matrices=False)
    if rule == "principal":
        return (xc @ vh[0]).abs().numpy()
    if rule == "gaussian":
        # Mahalanobis distance on the span of the rows (pseudo-inverse of the sample covariance:
        # with fewer rows than columns, or clipped columns, it is singular).
        keep = s > s[0] * 1e-9 if s[0] > 0 else torch.zeros_like(s, dtype=torch.bool)
        z = (xc @ vh[keep].T) / (s[keep] / np.sqrt(n - 1))
        return (-(z**2).sum(1)).numpy()
    raise ValueError(f"unknown scoring rule {rule!r}; use one of {', '.join(_SCORED)}")


def guess_rated_items(
    items: np.ndarray | torch.Tensor, rows: np.ndarray | torch.Tensor, k: int,
    rules: Iterable[str] = GUESS_RULES, neighbours: int = 5,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """The guessed rated items of one upload under each rule: a function of the upload and ``k``.

    ``items`` (n,) uploaded ids, ``rows`` (n, ...) their gradient rows; ``k`` rows are guessed by
    the scoring rules and ``"random"`` (ties: lower position first); ``"all"`` guesses every id.
    """
    ids = np.asarray(torch.as_tensor(items).cpu()).astype(np.int64)
    n = len(ids)
    k = max(0, min(int(k), n))
    out: dict[str, np.ndarray] = {}
    for rule in rules:
        if rule == "all":
            out[rule] = ids.copy()
        elif rule == "random":
            gen = rng if rng is not None else np.random.default_rng()
            out[rule] = ids[gen.choice(n, k, replace=False)]
        elif k == n:  # nothing to rank (M = 0 with k granted): every scoring rule guesses all
            out[rule] = ids.copy()
        else:
            order = np.argsort(-row_scores(rows, rule, neighbours), kind="stable")
            out[rule] = ids[order[:k]]
    return out


class RatedItemsAttack:
    """Server-side observer guessing each FedGNN client's rated items from its uploads.

    ``positives``: each client's rated (training) items, used only to score the guesses and,
    unless ``pseudo_items`` is given, to grant ``k`` (module docstring). ``rounds``: score only
    the uploads of these rounds (the density rule costs ``O(n^2)`` per upload); None: all.
    ``keep_guesses``: also keep each upload's guesses (``self.guesses``, for inspection).
    """

    def __init__(self, positives: Mapping[int, np.ndarray], pseudo_items: int | None = None,
                 rules: Iterable[str] = GUESS_RULES, neighbours: int = 5, step: str = "train",
                 rounds: Collection[int] | None = None, seed: int = 0,
                 keep_guesses: bool = False) -> None:
        self.rules = tuple(rules)
        unknown = sorted(set(self.rules) - set(GUESS_RULES))
        if unknown or not self.rules:
            raise ValueError(f"unknown guess rule(s) {unknown}; use {', '.join(GUESS_RULES)}")
        if pseudo_items is not None and pseudo_items < 0:
            raise ValueError(f"pseudo_items must be >= 0, got {pseudo_items}")
        if neighbours < 1:
            raise ValueError(f"neighbours must be >= 1, got {neighbours}")
        self.positives = {int(u): np.asarray(p).astype(np.int64) for u, p in positives.items()}
        self.pseudo_items = pseudo_items
        self.neighbours = neighbours
        self.step = step
        self.rounds = None if rounds is None else {int(r) for r in rounds}
        self.seed = seed
        self.keep_guesses = keep_guesses
        self.records: list[dict[str, float]] = []
        self.guesses: list[dict[str, np.ndarray]] = []

    def k_for(self, items: np.ndarray, client: int) -> int:
        """How many rows to guess for this upload (granted, or ``len(items) - M``)."""
        if self.pseudo_items is None:
            return int(np.isin(items, self.positives.get(client, ())).sum())
        return int(np.clip(len(items) - self.pseudo_items, 1, len(items)))

    def __call__(self, msg: Message) -> None:
        # Only what the server receives: uploads of `step` from a client to the server.
        if (msg.step != self.step or msg.direction != "up" or msg.receiver != SERVER
                or not isinstance(msg.sender, int)):
            return
        if self.rounds is not None and msg.round not in self.rounds:
            return
        payload = msg.payload
        if "items" not in payload or "grad_items" not in payload:
            return
        items = np.asarray(torch.as_tensor(payload["items"]).cpu()).astype(np.int64)
        truth = self.positives.get(msg.sender, np.empty(0, np.int64))
        if len(items) == 0 or len(truth) == 0:
            return
        rng = np.random.default_rng([self.seed, msg.round, msg.sender])
        guesses = guess_rated_items(items, payload["grad_items"], self.k_for(items, msg.sender),
                                    self.rules, self.neighbours, rng)
        rec = {"round": float(msg.round), "client": float(msg.sender), "rows": float(len(items)),
               "rated": float(len(truth))}
        for rule, guess in guesses.items():
            prf = set_precision_recall_f1(guess, truth)
            rec.update({f"{rule}_precision": prf.precision, f"{rule}_recall": prf.recall,
                        f"{rule}_f1": prf.f1})
        self.records.append(rec)
        if self.keep_guesses:
            self.guesses.append(guesses)

    def _select(self, round: int | None) -> list[dict[str, float]]:
        return [r for r in self.records if round is None or r["round"] == round]

    def best_rule(self, round: int | None = None) -> str | None:
        """The rule with the highest mean F1 over the recorded uploads (first on ties)."""
        recs = self._select(round)
        if not recs:
            return None
        return max(self.rules, key=lambda rule: np.mean([r[f"{rule}_f1"] for r in recs]))

    def summary(self, round: int | None = None) -> dict[str, float]:
        """Means over the recorded uploads (of one round, or all): per rule
        ``attack_<rule>_{precision,recall,f1}``; the best rule's as ``attack_{precision,recall,
        f1}``; ``attack_uploads`` and ``attack_rows`` (mean rows uploaded per client)."""
        recs = self._select(round)
        if not recs:
            return {}
        out = {f"attack_{key}": float(np.mean([r[key] for r in recs]))
               for rule in self.rules for key in
               (f"{rule}_precision", f"{rule}_recall", f"{rule}_f1")}
        best = self.best_rule(round)
        for m in ("precision", "recall", "f1"):
            out[f"attack_{m}"] = out[f"attack_{best}_{m}"]
        out["attack_uploads"] = float(len(recs))
        out["attack_rows"] = float(np.mean([r["rows"] for r in recs]))
        return out

    def state_dict(self) -> dict:
        return {"records": list(self.records)}

    def load_state_dict(self, state: dict) -> None:
        self.records = list(state["records"])
