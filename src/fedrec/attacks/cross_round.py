"""Cross-round attacks on FedGNN's pseudo items: a server that keeps everything it is sent.

Threat model: an honest-but-curious server. It follows the protocol and sees, in every round,
each sampled client's upload: the ids of the item rows (real and pseudo, shuffled together) and
the rows themselves (item-embedding gradients, clipped and Laplace-noised under LDP). It knows
the configuration (``M``, the clip and noise scales) and which client sent what, and it keeps
all of it over the whole run. It does not know the clients' ratings or their randomness. Per
client, :class:`CrossRoundAttack` guesses the set of rated (training) items from the uploads of
that client seen so far; the truth is given to it by the experimenter only to score the guesses
(and to grant ``k``, see below).

The attacks (each a small function below on one client's accumulated statistics):

* **intersection** (:func:`intersection_guess`): the ids present in every upload. Real items
  are uploaded every time; pseudo ids drawn afresh each round (``pseudo_set="per_round"``) are
  each in an upload with probability ``M / (num_items - K)``, so they drop out geometrically.
  Against a pseudo set kept fixed it guesses the whole set (chance-level precision).
* **frequency** (:func:`frequency_guess`): the ids present in at least a share ``f`` of the
  uploads: the intersection made robust to a real item that is sometimes missing.
* **row consistency** (:func:`consistency_scores`, then the top ``k``): for each id the server
  averages its rows over the uploads that contain it. A real item's gradient points the same
  way round after round (the sign of the user's error on it and the user's hidden vector change
  slowly), while a pseudo row redrawn from the round's Gaussian has a fresh direction every
  round, so its average shrinks to the client's mean row at rate ``1 / sqrt(n)``. Three test
  statistics, all from running sums: ``ratio`` (``|mean row| / RMS row norm``, the filer's
  statistic; ids seen few times score high by chance, so it suits kept sets), ``centered`` (``n
  |mean_i - c|^2 / s^2``, ``c`` the client's mean row over all its rows and ``s^2`` their per-
  coordinate variance: a chi-square with ``w`` degrees of freedom for a row with no consistent
  part, whatever ``n``) and ``whitened`` (the same with the rows' full covariance, a Mahalanobis
  distance; measured weaker than ``centered``, our untested reading being that whitening
  amplifies the near-empty directions of the rows' covariance). ``k``: the number of real items
  in the upload, granted (as in :mod:`fedrec.attacks.rated_items`), or estimated as ``mean
  upload length - M`` (:func:`estimated_k`: exact while the client is not short of unrated
  items). Two more statistics apply :mod:`fedrec.attacks.rated_items`'s single-upload shape
  rules (``density``, ``gaussian``) to the averaged rows, whose noise shrinks with ``n``.
* **accumulated shape evidence** (:func:`evidence_scores`, ``evidence_gaussian``): each upload's
  Gaussian-outlier scores (real rows are far from Gaussian, pseudo rows are Gaussian draws),
  standardised and summed per id over the uploads: weak per-upload evidence adds up.
* **popularity** (:func:`popularity_scores`): what the server learns from all clients together.
  Within the ids of a client's every upload, those that many clients upload are more likely
  real, since pseudo ids are uniform over a client's unrated items and real ones follow the
  catalogue's popularity. It needs no rows and works from the first upload, whatever the
  pseudo set.

Scores are set F1 (:func:`fedrec.metrics.classification.set_precision_recall_f1`) per client
against its training items, recorded when a client's ``n``-th upload arrives for ``n`` in
``at_uploads``, and over all its uploads by :meth:`CrossRoundAttack.finish`; summaries are the
means over clients (macro). Chance: guessing ``k`` of one upload's ids at random, F1 ``K / (K +
M)``.

Not tried: a model-aware inversion (the server also knows the item table and GNN it
broadcast and could test each row against its own item's embedding), and pairing the
popularity prior with the row statistics.

Memory: per tracked client, running sums over ids (count, row sum, squared row norm,
evidence: ``(n_items, w + 3)`` float32) and over all its rows (sum, second moments: ``(w, w)``
float64), never the uploads themselves (ML-100K, 1,682 items, ``w = 65``: 0.45 MB per client).
Time: the evidence costs one small SVD per upload (~25 ms for 1,085 x 65 rows on one core;
``evidence=False`` skips it), the ``density`` statistic ``O(ids^2)`` per scoring.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from fedrec.attacks.rated_items import row_scores
from fedrec.federation.message import SERVER, Message
from fedrec.metrics.classification import set_precision_recall_f1

CONSISTENCY_STATISTICS = ("ratio", "centered", "whitened", "density", "gaussian")
DEFAULT_AT_UPLOADS = (1, 2, 5, 10, 15, 20, 30, 40, 60, 80, 100)


@dataclass
class ClientRows:
    """What the server has accumulated about one client's uploads (running sums only)."""

    num_items: int
    width: int
    uploads: int = 0
    rows: int = 0  # rows over all uploads
    count: np.ndarray = field(init=False)   # (n_items,) uploads containing each id
    sums: np.ndarray = field(init=False)    # (n_items, w) sum of each id's rows
    sqnorm: np.ndarray = field(init=False)  # (n_items,) sum of each id's squared row norms
    total: np.ndarray = field(init=False)   # (w,) sum of all rows
    outer: np.ndarray = field(init=False)   # (w, w) sum of x x^T over all rows
    evidence: np.ndarray = field(init=False)  # (n_items,) sum of per-upload shape scores

    def __post_init__(self) -> None:
        self.count = np.zeros(self.num_items, np.int32)
        self.sums = np.zeros((self.num_items, self.width), np.float32)
        self.sqnorm = np.zeros(self.num_items, np.float32)
        self.total = np.zeros(self.width, np.float64)
        self.outer = np.zeros((self.width, self.width), np.float64)
        self.evidence = np.zeros(self.num_items, np.float32)

    def add(self, ids: np.ndarray, rows: np.ndarray, evidence: bool = True) -> None:
        """Fold one upload in (``ids`` are distinct within an upload); with ``evidence``, also
        its per-upload shape scores (:func:`upload_evidence`)."""
        if evidence:
            self.evidence[ids] += upload_evidence(rows)
        self.uploads += 1
        self.rows += len(ids)
        self.count[ids] += 1
        self.sums[ids] += rows
        self.sqnorm[ids] += np.einsum("ij,ij->i", rows, rows)
        x = rows.astype(np.float64)
        self.total += x.sum(0)
        self.outer += x.T @ x


def upload_evidence(rows: np.ndarray) -> np.ndarray:
    """One upload's Gaussian-outlier scores (:func:`fedrec.attacks.rated_items.row_scores`,
    rule ``"gaussian"``: real rows are far from Gaussian), standardised within the upload so
    that uploads add up as independent pieces of evidence."""
    sc = row_scores(rows, "gaussian") if len(rows) > 1 else np.zeros(len(rows))
    sd = sc.std()
    return ((sc - sc.mean()) / sd if sd > 0 else np.zeros_like(sc)).astype(np.float32)


def evidence_scores(acc: ClientRows) -> np.ndarray:
    """Per-upload shape evidence accumulated over rounds (Stouffer: ``sum_t z_it / sqrt(n_i)``):
    a weak per-upload signal of the same item adds up, noise does not. ``-inf``: never seen."""
    out = np.full(acc.num_items, -np.inf)
    seen = acc.count > 0
    out[seen] = acc.evidence[seen] / np.sqrt(acc.count[seen])
    return out


def popularity_scores(acc: ClientRows, popularity: np.ndarray) -> np.ndarray:
    """What the server learns from all clients together: the ids in every upload of this client
    (the intersection), scored by how often each id is uploaded by anyone (``popularity``).
    Pseudo ids are drawn uniformly from a client's unrated items, real ones follow the catalogue's
    popularity, so an id many clients upload is more likely a real one. ``-inf`` elsewhere."""
    out = np.full(acc.num_items, -np.inf)
    inter = intersection_guess(acc.count, acc.uploads)
    out[inter] = popularity[inter]
    return out


def intersection_guess(count: np.ndarray, uploads: int) -> np.ndarray:
    """Ids present in all ``uploads`` uploads of the client (``count[i]`` = uploads with id i)."""
    return np.flatnonzero(count >= max(uploads, 1))


def frequency_guess(count: np.ndarray, uploads: int, share: float) -> np.ndarray:
    """Ids present in at least a share ``share`` (0 < share <= 1) of the client's uploads."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1], got {share}")
    return np.flatnonzero(count >= max(np.ceil(share * uploads - 1e-9), 1))


def consistency_scores(acc: ClientRows, statistic: str = "centered", ridge: float = 1e-6
                       ) -> np.ndarray:
    """How consistently each id's rows point the same way over the client's uploads (higher =
    more likely a real item; ``-inf`` for ids never uploaded). Statistics (module docstring):

    * ``ratio``: ``|S_i / n_i| / sqrt(Q_i / n_i)`` (``S_i`` row sum, ``Q_i`` sum of squared
      norms, ``n_i`` uploads with id i): 1 for identical rows, ~``1 / sqrt(n_i)`` for
      independent zero-mean ones;
    * ``centered``: ``n_i |S_i / n_i - c|^2 / s^2`` with ``c`` the mean of all the client's rows
      and ``s^2`` their variance per coordinate: ~chi-square(w) for rows with mean ``c`` and no
      consistent part, so ids seen a different number of times compare fairly;
    * ``whitened``: ``n_i (m_i - c)^T C^{-1} (m_i - c)``, ``C`` the covariance of all the
      client's rows (plus ``ridge`` times its mean variance on the diagonal).
    """
    n = acc.count.astype(np.float64)
    seen = n > 0
    out = np.full(acc.num_items, -np.inf)
    if not seen.any():
        return out
    mean = acc.sums[seen].astype(np.float64) / n[seen, None]
    if statistic == "ratio":
        rms = np.sqrt(acc.sqnorm[seen] / n[seen])
        out[seen] = np.linalg.norm(mean, axis=1) / np.maximum(rms, 1e-30)
        return out
    c = acc.total / max(acc.rows, 1)
    cov = acc.outer / max(acc.rows, 1) - np.outer(c, c)
    dev = mean - c
    if statistic == "centered":
        var = max(float(np.trace(cov)) / acc.width, 1e-30)
        out[seen] = n[seen] * (dev**2).sum(1) / var
    elif statistic == "whitened":
        reg = ridge * max(float(np.trace(cov)) / acc.width, 1e-30)
        prec = np.linalg.pinv(cov + reg * np.eye(acc.width), hermitian=True)
        out[seen] = n[seen] * np.einsum("ij,jk,ik->i", dev, prec, dev)
    elif statistic in ("density", "gaussian"):
        # The averaged rows have 1/n of the noise's variance: the single-upload shape rules of
        # fedrec.attacks.rated_items, applied to them, see the rows' noise-free shape.
        out[seen] = row_scores(mean, statistic)
    else:
        raise ValueError(f"unknown statistic {statistic!r}; use one of "
                         + ", ".join(CONSISTENCY_STATISTICS))
    return out


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` ids with the highest finite-or-not scores, never an id scored ``-inf``."""
    k = max(0, min(int(k), int(np.isfinite(scores).sum())))
    return np.argsort(-scores, kind="stable")[:k]


def estimated_k(acc: ClientRows, pseudo_items: int) -> int:
    """``k`` from public facts: the mean upload length minus ``M`` (at least 1)."""
    return max(1, round(acc.rows / max(acc.uploads, 1)) - pseudo_items)


class CrossRoundAttack:
    """Server-side observer accumulating each client's FedGNN uploads over the whole run.

    ``positives``: each client's training items (scoring, and ``k`` when granted).
    ``at_uploads``: upload counts at which a client is scored (also at the end, :meth:`finish`).
    ``shares``: the frequency attack's ``f``. ``statistics``: the row-consistency statistics.
    ``pseudo_items``: ``M``, for the estimated ``k`` (None: only the granted ``k``).
    ``clients``: track only these clients (memory); None: every client that uploads.
    """

    def __init__(self, positives: Mapping[int, np.ndarray], num_items: int,
                 at_uploads: Iterable[int] = DEFAULT_AT_UPLOADS,
                 shares: Iterable[float] = (0.5, 0.8, 0.9),
                 statistics: Iterable[str] = CONSISTENCY_STATISTICS,
                 pseudo_items: int | None = None, clients: Collection[int] | None = None,
                 evidence: bool = True, step: str = "train") -> None:
        self.statistics = tuple(statistics)
        bad = sorted(set(self.statistics) - set(CONSISTENCY_STATISTICS))
        if bad:
            raise ValueError(f"unknown statistic(s) {bad}; use "
                             + ", ".join(CONSISTENCY_STATISTICS))
        self.shares = tuple(float(f) for f in shares)
        for f in self.shares:
            frequency_guess(np.zeros(1, np.int32), 1, f)  # validates f
        self.positives = {int(u): np.asarray(p).astype(np.int64) for u, p in positives.items()}
        self.num_items = int(num_items)
        self.at_uploads = {int(n) for n in at_uploads}
        self.pseudo_items = pseudo_items
        self.clients = None if clients is None else {int(c) for c in clients}
        self.evidence = evidence
        self.step = step
        self.popularity = np.zeros(self.num_items, np.float64)  # uploads of each id, all clients
        self.acc: dict[int, ClientRows] = {}
        self.records: list[dict[str, float | str]] = []

    @property
    def attacks(self) -> list[str]:
        """Names of the recorded F1 columns."""
        names = ["intersection"] + [f"frequency_{f:g}" for f in self.shares]
        names += [f"consistency_{s}" for s in self.statistics]
        names += ["evidence_gaussian"] * self.evidence + ["popularity"]
        if self.pseudo_items is not None:
            names += [f"consistency_{s}_kest" for s in self.statistics]
        return names

    def __call__(self, msg: Message) -> None:
        # Only what the server receives: uploads of `step` from a client to the server.
        if (msg.step != self.step or msg.direction != "up" or msg.receiver != SERVER
                or not isinstance(msg.sender, int)):
            return
        payload = msg.payload
        if "items" not in payload or "grad_items" not in payload:
            return
        ids = np.asarray(torch.as_tensor(payload["items"]).cpu()).astype(np.int64)
        self.popularity[ids] += 1.0  # every client's uploads, tracked or not
        c = int(msg.sender)
        if self.clients is not None and c not in self.clients:
            return
        rows = np.asarray(torch.as_tensor(payload["grad_items"]).detach().cpu(), np.float32)
        if len(ids) == 0 or len(self.positives.get(c, ())) == 0:
            return
        rows = rows.reshape(len(ids), -1)
        if c not in self.acc:
            self.acc[c] = ClientRows(self.num_items, rows.shape[1])
        acc = self.acc[c]
        acc.add(ids, rows, self.evidence)
        if acc.uploads in self.at_uploads:
            self.records.append(self.score(c, str(acc.uploads)))

    def guesses(self, client: int) -> dict[str, np.ndarray]:
        """Every attack's guess for ``client`` from what has been accumulated so far."""
        acc = self.acc[client]
        truth = self.positives[client]
        out = {"intersection": intersection_guess(acc.count, acc.uploads)}
        for f in self.shares:
            out[f"frequency_{f:g}"] = frequency_guess(acc.count, acc.uploads, f)
        # k granted: the number of real items in an upload (every rated item is in each).
        k = len(truth)
        for s in self.statistics:
            scores = consistency_scores(acc, s)
            out[f"consistency_{s}"] = top_k(scores, k)
            if self.pseudo_items is not None:
                out[f"consistency_{s}_kest"] = top_k(scores, estimated_k(acc, self.pseudo_items))
        if self.evidence:
            out["evidence_gaussian"] = top_k(evidence_scores(acc), k)
        out["popularity"] = top_k(popularity_scores(acc, self.popularity), k)
        return out

    def score(self, client: int, label: str) -> dict[str, float | str]:
        acc = self.acc[client]
        truth = self.positives[client]
        rec: dict[str, float | str] = {
            "client": float(client), "uploads": label, "n": float(acc.uploads),
            "rated": float(len(truth)), "ids_seen": float((acc.count > 0).sum()),
            "chance": len(truth) / (acc.rows / acc.uploads)}
        for name, guess in self.guesses(client).items():
            rec[name] = set_precision_recall_f1(guess, truth).f1
        return rec

    def finish(self) -> None:
        """Score every tracked client over all its uploads (label ``"all"``)."""
        self.records = [r for r in self.records if r["uploads"] != "all"]
        self.records += [self.score(c, "all") for c in sorted(self.acc)]

    def summary(self) -> list[dict[str, float | str]]:
        """Per upload count (then ``"all"``): clients scored and each attack's mean F1."""
        labels = sorted({str(r["uploads"]) for r in self.records},
                        key=lambda x: (x == "all", int(x) if x != "all" else 0))
        out = []
        for label in labels:
            recs = [r for r in self.records if r["uploads"] == label]
            row: dict[str, float | str] = {"uploads": label, "clients": float(len(recs)),
                                           "mean_n": float(np.mean([r["n"] for r in recs])),
                                           "chance": float(np.mean([r["chance"] for r in recs]))}
            for name in self.attacks:
                row[name] = float(np.mean([r[name] for r in recs]))
            out.append(row)
        return out
