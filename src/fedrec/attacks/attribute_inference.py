"""Which words does a node have? Feras's aggregation server (AS) reconstructs node attributes
from the first-layer embeddings and weights it receives (issue 17, item 7).

Target: :mod:`fedrec.algorithms.methods.feras`. In evaluation each host uploads to the AS (step
``eval_embed``) the ids of its visible nodes and their first-layer embeddings over the whole
graph without dropout, ``H = ReLU(A_hat X_n W1 + b1)`` restricted to those rows, where ``X_n``
is the host's row-normalised attribute matrix (zero rows for the nodes it cannot see) and
``A_hat`` the public normalised adjacency. Every ``q`` iterations each host sends its weights
(step ``train``) and the AS returns their mean, which every host takes: when a round ends on a
weight average (``iterations_per_round`` a multiple of ``q``, the default), the ``W1, b1`` the
hosts embed with at evaluation are the mean of the latest weights the AS received, which is what
the attack uses (otherwise that mean is stale by the iterations since).

With ``share_at = projection`` the hosts upload ``P = X_n W1`` of their visible nodes instead
(``projections=True`` here): the inversion then skips the deconvolution (1), ``P`` is its
result exactly.

Threat model: the AS is honest-but-curious. It follows the protocol, knows the public topology
and reads what it receives. Two attackers:

* ``inversion`` (knows no attribute): per host, (1) deconvolution: ``Z ~ X_n[S] W1`` fitted to
  the exact observation model, ``min_Z ||ReLU(A_hat[S, S] Z + b1) - H_S||^2`` (Adam; ``S`` the
  host's visible nodes, the others contribute zero rows), then (2) per target node the
  non-negative sparse code ``x >= 0`` minimising ``||x W1 - z||^2 + l1 * ||x||_1`` (projected
  ISTA; Cora's rows are sparse and non-negative). ``x`` ranks the words.
* ``decoder`` (also knows the public nodes' attributes, as they are public): a ridge regression
  from a node's uploaded embedding to its attribute row (with an intercept), fitted on half of
  the public nodes (a seeded draw) and applied to the host's private nodes and to the other
  half of the public ones.
* ``prior`` (the decoder's floor): every node's words ranked by their frequency among the
  fitting half of the public nodes; a rule must beat it to have learnt anything about the node.

Score: per target node, the ROC AUC of its score vector against its true binary word vector
(:func:`fedrec.metrics.auc`, ties averaged), averaged over the targets: private nodes (of the
host that uploads them; only it sees them) and public nodes (each host's upload separately).
The truth (attributes, which nodes are private to whom) is the experimenter's: it only scores
the guesses and splits them into private and public; the inversion never reads it, the
decoder reads the public nodes' attributes only.

Not done: combining the several hosts' uploads of a public node, the training uploads (with
dropout masks the AS does not know), and attacks on the weights' updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from scipy.stats import rankdata

from fedrec.federation.message import AGGREGATOR, Message
from fedrec.models import gcn

RULES = ("inversion", "decoder", "prior")
KINDS = ("private", "public")


def row_auc(scores: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """ROC AUC of each row of ``scores`` against the 0/1 row of ``truth`` (average ranks for
    ties, as :func:`fedrec.metrics.auc`); NaN for a row with one class only."""
    truth = np.asarray(truth) > 0
    ranks = rankdata(np.asarray(scores, np.float64), axis=1)
    pos = truth.sum(1).astype(np.float64)
    neg = truth.shape[1] - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((ranks * truth).sum(1) - pos * (pos + 1) / 2) / (pos * neg)


def deconvolve(adj: torch.Tensor, h: torch.Tensor, bias: torch.Tensor, steps: int = 300,
               lr: float = 0.01) -> torch.Tensor:
    """``Z`` minimising ``||ReLU(adj Z + bias) - h||^2`` (mean over entries), by Adam from
    zero: the first layer's input projection ``X_n W1`` of the uploaded rows."""
    z = torch.zeros_like(h, requires_grad=True)
    opt = torch.optim.Adam([z], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((torch.relu(adj @ z + bias) - h) ** 2).mean()
        loss.backward()
        opt.step()
    return z.detach()


def sparse_code(z: torch.Tensor, w1: torch.Tensor, l1: float, steps: int = 200) -> torch.Tensor:
    """Rows ``x >= 0`` minimising ``0.5 ||x W1 - z||^2 + l1 ||x||_1``, by projected ISTA from
    zero (step ``1 / ||W1||_2^2``)."""
    step = 1.0 / float(torch.linalg.matrix_norm(w1, 2)) ** 2
    x = torch.zeros(len(z), w1.shape[0])
    for _ in range(steps):
        grad = (x @ w1 - z) @ w1.T
        x = torch.clamp(x - step * (grad + l1), min=0.0)
    return x


def ridge_decoder(h_fit: np.ndarray, x_fit: np.ndarray, ridge: float) -> np.ndarray:
    """``(d + 1, F)`` coefficients of the ridge regression of ``x_fit`` on ``[h_fit, 1]``."""
    a = np.hstack([h_fit, np.ones((len(h_fit), 1))]).astype(np.float64)
    reg = ridge * np.eye(a.shape[1])
    reg[-1, -1] = 0.0  # the intercept is not shrunk
    return np.linalg.solve(a.T @ a + reg, a.T @ np.asarray(x_fit, np.float64))


class AttributeInferenceAttack:
    """AS-side observer of Feras's messages; :meth:`summary` runs the attack on the latest
    evaluation uploads (module docstring).

    ``x``: the true attribute matrix (scoring, and the public rows for the decoder); ``owner``:
    ``-1`` for a public node, else the host index it is private to (``host-<h>``);
    ``edge_index``: the public topology. ``max_targets``: at most this many target nodes of
    each kind per host (a seeded draw) go through the inversion's sparse coding, the costly
    part (``targets x F x hidden`` per ISTA step). ``projections``: the uploads are ``X_n W1``
    (Feras with ``share_at = projection``), not ``H1``."""

    def __init__(self, x: np.ndarray, owner: np.ndarray, edge_index: np.ndarray, *,
                 seed: int = 0, max_targets: int = 300, deconvolve_steps: int = 300,
                 ista_steps: int = 200, l1: float = 1e-4, ridge: float = 1.0,
                 weight_step: str = "train", upload_step: str = "eval_embed",
                 projections: bool = False) -> None:
        self.x = np.asarray(x) > 0
        self.owner = np.asarray(owner, np.int64)
        self.num_nodes = len(self.owner)
        self.edge_index = edge_index
        self.seed = seed
        self.max_targets = max_targets
        self.deconvolve_steps = deconvolve_steps
        self.ista_steps = ista_steps
        self.l1 = l1
        self.ridge = ridge
        self.weight_step = weight_step
        self.upload_step = upload_step
        self.projections = projections
        self.weights: dict[Any, tuple[torch.Tensor, torch.Tensor]] = {}
        self.uploads: dict[Any, tuple[np.ndarray, torch.Tensor]] = {}
        self._adj: sp.csr_matrix | None = None
        public = np.flatnonzero(self.owner == -1)
        self._fit_public = np.sort(np.random.default_rng([seed, 1]).permutation(public)
                                   [: len(public) // 2])

    def __call__(self, msg: Message) -> None:
        # Only what the AS receives: a host's weights, a host's evaluation embeddings.
        if msg.receiver != AGGREGATOR or not isinstance(msg.sender, str) \
                or not msg.sender.startswith("host-"):
            return
        p = msg.payload
        if msg.step == self.weight_step and "w1" in p:
            self.weights[msg.sender] = (torch.as_tensor(p["w1"]).float(),
                                        torch.as_tensor(p["b1"]).float())
        elif msg.step == self.upload_step and "embeddings" in p:
            self.uploads[msg.sender] = (np.asarray(torch.as_tensor(p["seen"])).astype(np.int64),
                                        torch.as_tensor(p["embeddings"]).float())

    def _mean_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        w1 = torch.stack([w for w, _ in self.weights.values()]).mean(0)
        b1 = torch.stack([b for _, b in self.weights.values()]).mean(0)
        return w1, b1

    def _adjacency(self, seen: np.ndarray) -> torch.Tensor:
        """``A_hat[seen, seen]`` (public), sparse."""
        if self._adj is None:
            a = gcn.normalized_adjacency(self.edge_index, self.num_nodes)
            self._adj = sp.csr_matrix((a.values().numpy(), a.col_indices().numpy(),
                                       a.crow_indices().numpy()), shape=a.shape)
        sub = self._adj[seen][:, seen].tocoo()
        return torch.sparse_coo_tensor(np.vstack([sub.row, sub.col]), sub.data, sub.shape,
                                       check_invariants=False).coalesce()

    def _targets(self, seen: np.ndarray, host: int, kind: str) -> np.ndarray:
        """Positions in ``seen`` of the host's target nodes of ``kind`` (at most max_targets;
        public targets exclude the decoder's fitting half, every rule is scored on the same
        nodes)."""
        own = self.owner[seen]
        mask = own == host if kind == "private" else (own == -1) & ~np.isin(seen,
                                                                            self._fit_public)
        # Only nodes with a word and a missing word have an AUC.
        words = self.x[seen].sum(1)
        pos = np.flatnonzero(mask & (words > 0) & (words < self.x.shape[1]))
        if len(pos) > self.max_targets:
            rng = np.random.default_rng([self.seed, host, KINDS.index(kind)])
            pos = np.sort(rng.choice(pos, self.max_targets, replace=False))
        return pos

    def _host(self, sender: str, seen: np.ndarray, h: torch.Tensor
              ) -> dict[str, dict[str, np.ndarray]]:
        """Per kind, per rule: the AUC of each target node of one host's upload."""
        host = int(sender.split("-")[1])
        w1, b1 = self._mean_weights()
        z = h if self.projections else deconvolve(self._adjacency(seen), h, b1,
                                                  self.deconvolve_steps)
        fit = np.flatnonzero(np.isin(seen, self._fit_public))
        coef = ridge_decoder(h[fit].numpy(), self.x[seen[fit]], self.ridge)
        prior = self.x[seen[fit]].mean(0)
        out: dict[str, dict[str, np.ndarray]] = {}
        for kind in KINDS:
            pos = self._targets(seen, host, kind)
            if len(pos) == 0:
                continue
            truth = self.x[seen[pos]]
            scores = {
                "inversion": sparse_code(z[pos], w1, self.l1, self.ista_steps).numpy(),
                "decoder": np.hstack([h[pos].numpy(), np.ones((len(pos), 1))]) @ coef,
                "prior": np.broadcast_to(prior, truth.shape),
            }
            out[kind] = {rule: row_auc(s, truth) for rule, s in scores.items()}
        return out

    def summary(self) -> dict[str, float]:
        """``attack_auc_<kind>_<rule>``: the mean AUC over the targets of every host's latest
        evaluation upload (module docstring); ``attack_targets_<kind>`` their number. Empty
        before an evaluation upload and a weight upload arrived."""
        if not self.uploads or not self.weights:
            return {}
        per: dict[str, dict[str, list[np.ndarray]]] = {}
        for sender, (seen, h) in sorted(self.uploads.items()):
            for kind, by_rule in self._host(sender, seen, h).items():
                for rule, aucs in by_rule.items():
                    per.setdefault(kind, {}).setdefault(rule, []).append(aucs)
        out: dict[str, float] = {}
        for kind, by_rule in per.items():
            for rule, parts in by_rule.items():
                aucs = np.concatenate(parts)
                out[f"attack_auc_{kind}_{rule}"] = float(np.nanmean(aucs))
            out[f"attack_targets_{kind}"] = float(sum(len(p) for p in by_rule[RULES[0]]))
        return out

    def state_dict(self) -> dict[str, Mapping[Any, Any]]:
        return {"weights": dict(self.weights), "uploads": dict(self.uploads)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.weights = dict(state["weights"])
        self.uploads = dict(state["uploads"])
