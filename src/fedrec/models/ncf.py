"""NeuMF (He et al. 2017, "Neural Collaborative Filtering": GMF + MLP), batched over clients.

Every client of PTF-FedRec owns a *private* NeuMF model. To train a cohort of thousands of them
in one pass, the parameters are kept as stacked tensors with a leading client axis and the
forward pass uses ``bmm`` (one small matmul per client, batched):

* ``user``  ``[C, 2d]`` -- the client's own user embedding, GMF half then MLP half;
* item rows ``[C, B, 2d]`` -- item embeddings (GMF half then MLP half) of the items each client
  scores; they are gathered by the caller from a compact table of the rows a client touches;
* ``w{k}`` ``[C, in_k, out_k]``, ``b{k}`` ``[C, out_k]`` -- the MLP tower (ReLU), input
  ``concat(user_mlp, item_mlp)`` of size ``2d``;
* ``out_w`` ``[C, d + last, 1]``, ``out_b`` ``[C, 1]`` -- the NeuMF prediction layer on
  ``concat(user_gmf * item_gmf, mlp_out)``; its output is a logit (sigmoid gives the score).

Initialisation is counter-based (:func:`fedrec.core.rng.counter_uniform` /
:func:`~fedrec.core.rng.counter_normal`) keyed by (seed, client, item / parameter,
element), so a client's model depends only on its key and its own id -- never on its cohort
(a private model's key comes from its client's secret, never the public run seed) -- and an
item row that was never trained need not be stored: it is regenerated on demand
(:func:`init_item_rows`, a secretly keyed permutation of one public base table). Embeddings start
``N(0, 0.01^2)``; linear layers start ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (PyTorch's
``nn.Linear`` range), biases at zero.

:class:`NeuMF` is the same model as one ``nn.Module`` over all users (centralized baselines).

:class:`StackedAdam` is Adam (Kingma & Ba, torch defaults) over rows of stacked tensors with a
*per-row step count*, so that each client's update is exactly the one its own ``torch.optim.Adam``
would take, and clients without a batch at some step are skipped (not given a zero gradient).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from fedrec.core.rng import (
    counter_normal,
    counter_randint,
    counter_uniform,
    derive_seed,
    torch_generator,
)

EMB_STD = 0.01


@dataclass(frozen=True)
class NCFShape:
    """``dim``: GMF and MLP embedding size; ``layers``: the MLP tower's output sizes."""

    dim: int = 16
    layers: tuple[int, ...] = (16, 8)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per-client parameter shapes (item embeddings excluded)."""
        shapes: dict[str, tuple[int, ...]] = {"user": (2 * self.dim,)}
        fan_in = 2 * self.dim
        for k, out in enumerate(self.layers):
            shapes[f"w{k}"] = (fan_in, out)
            shapes[f"b{k}"] = (out,)
            fan_in = out
        shapes["out_w"] = (self.dim + fan_in, 1)
        shapes["out_b"] = (1,)
        return shapes

    def num_params(self, num_items: int) -> int:
        per = sum(int(torch.tensor(s).prod()) for s in self.param_shapes().values())
        return per + num_items * 2 * self.dim


def init_params(shape: NCFShape, seed: int, clients: torch.Tensor) -> dict[str, torch.Tensor]:
    """Stacked initial parameters ``[len(clients), ...]`` (item rows: :func:`init_item_rows`)."""
    out: dict[str, torch.Tensor] = {}
    c = clients.to(torch.int64)
    for pid, (name, shp) in enumerate(shape.param_shapes().items()):
        numel = int(torch.tensor(shp).prod())
        pos = torch.arange(numel)
        key = derive_seed(seed, "ncf-init", name, pid)
        if name == "user":
            val = counter_normal(key, c[:, None], pos[None, :]).float() * EMB_STD
        elif name.startswith("b") or name == "out_b":
            val = torch.zeros(len(c), numel)
        else:
            bound = 1.0 / float(shp[0]) ** 0.5
            val = (counter_uniform(key, c[:, None], pos[None, :]).float() * 2 - 1) * bound
        out[name] = val.reshape(len(c), *shp)
    return out


@functools.lru_cache(maxsize=16)
def _smallest_prime_at_least(n: int) -> int:
    p = max(n, 2)
    while any(p % k == 0 for k in range(2, int(p**0.5) + 1)):
        p += 1
    return p


@functools.lru_cache(maxsize=4)
def _base_table(seed: int, rows: int, width: int) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch_generator(seed, "ncf-init-items")) * EMB_STD


def base_item_table(shape: NCFShape, seed: int, num_items: int) -> torch.Tensor:
    """The shared base rows ``[P, 2d]`` behind every client's initial item table (see
    :func:`init_item_rows`); read only (cached: index it, never write to it)."""
    return _base_table(seed, _smallest_prime_at_least(num_items), 2 * shape.dim)


def base_row_index(keys: torch.Tensor, items: torch.Tensor, num_items: int) -> torch.Tensor:
    """Row of :func:`base_item_table` that starts item ``items[k]`` of the client whose
    permutation key is ``keys[k]`` (a 63-bit key from the client's secret; broadcasting; see
    :func:`init_item_rows`)."""
    p = _smallest_prime_at_least(num_items)
    # One (a, b) per run of equal keys (callers pass rows grouped by client).
    c = keys.to(torch.int64)
    runs, inv = torch.unique_consecutive(c.reshape(-1), return_inverse=True)
    a = (1 + counter_randint(runs, p - 1, torch.tensor(0)))[inv].view(c.shape)
    b = counter_randint(runs, p, torch.tensor(1))[inv].view(c.shape)
    return (a * items.to(torch.int64) + b) % p


def init_item_rows(
    shape: NCFShape, seed: int, keys: torch.Tensor, items: torch.Tensor, num_items: int
) -> torch.Tensor:
    """Initial item embedding rows ``[n, 2d]`` for item ``items[k]`` of the client whose
    permutation key is ``keys[k]`` (the base table is public, keyed by the run ``seed``).

    Every client's initial ``[num_items, 2d]`` table is its own permutation of the rows of one
    base table ``N(0, EMB_STD^2)`` with ``P`` rows, ``P`` the smallest prime ``>= num_items``:
    item ``i`` of client ``c`` is base row ``(a_c * i + b_c) mod P``, with ``a_c`` uniform in
    ``[1, P)`` and ``b_c`` in ``[0, P)`` keyed by the client's secret key. An affine map modulo
    a prime is a bijection, so one client's rows are distinct base rows: i.i.d. ``N(0,
    EMB_STD^2)``, the distribution of a privately drawn table (clients' tables are permutations
    of each other, which no client's training can notice). A row costs one gather, rebuilt
    identically whenever needed; a private table per client cost 6.6 ms to draw, i.e. ~200 s of
    each Gowalla round (30k clients, 41k items) for the ~200 rows a client trains.
    """
    if len(items) == 0:
        return torch.empty(0, 2 * shape.dim)
    return base_item_table(shape, seed, num_items)[base_row_index(keys, items, num_items)]


def forward(
    shape: NCFShape, params: dict[str, torch.Tensor], item_rows: torch.Tensor
) -> torch.Tensor:
    """Logits ``[a, B]`` of ``a`` clients (``params[...]`` stacked ``[a, ...]``) on their
    ``B`` item rows each (``item_rows`` ``[a, B, 2d]``)."""
    # The concatenations of the formula are split into per-part matmuls (same math, no
    # [a, B, 2d] temporaries): [p ; q] W = p W_p + q W_q and (p * q) . w = q . (p * w).
    d = shape.dim
    user = params["user"]
    w0 = params["w0"]
    h = F.relu(torch.bmm(item_rows[..., d:], w0[:, d:])
               + (torch.bmm(user[:, None, d:], w0[:, :d]) + params["b0"][:, None, :]))
    for k in range(1, len(shape.layers)):
        h = F.relu(torch.bmm(h, params[f"w{k}"]) + params[f"b{k}"][:, None, :])
    out_w = params["out_w"]
    gmf_w = user[:, :d, None] * out_w[:, :d]  # [a, d, 1]
    logit = torch.bmm(item_rows[..., :d], gmf_w) + torch.bmm(h, out_w[:, d:])
    return (logit + params["out_b"][:, None, :]).squeeze(-1)


class NeuMF(nn.Module):
    """One NeuMF over all users and items (centralized training), in the layout of this module:
    ``user`` ``[U, 2d]``, ``item`` ``[I, 2d]`` (GMF half then MLP half) and a single tower
    ``w{k}``, ``b{k}``, ``out_w``, ``out_b``. Scoring reuses :func:`forward` with each scored user
    as a "client" whose tower is the shared one (``expand``: a view, no copy), so the layer math
    is the federated clients' own:
    ``logit(u, i) = out_w . [p_u^gmf * q_i^gmf ; MLP([p_u^mlp ; q_i^mlp])] + out_b``.

    Initialisation as in the module doc: tables ``N(0, EMB_STD^2)``, the tower that of
    :func:`init_params` (client 0).
    """

    def __init__(self, num_users: int, num_items: int, shape: NCFShape, seed: int) -> None:
        super().__init__()
        self.shape = shape
        gen = torch_generator(seed, "neumf-init")
        self.user = nn.Parameter(torch.randn(num_users, 2 * shape.dim, generator=gen) * EMB_STD)
        self.item = nn.Parameter(torch.randn(num_items, 2 * shape.dim, generator=gen) * EMB_STD)
        tower = init_params(shape, seed, torch.zeros(1, dtype=torch.int64))
        self.tower = nn.ParameterDict(
            {k: nn.Parameter(v[0]) for k, v in tower.items() if k != "user"})

    def _params(self, users: torch.Tensor) -> dict[str, torch.Tensor]:
        n = len(users)
        shared = {k: p.expand(n, *p.shape) for k, p in self.tower.items()}
        return {"user": self.user[users], **shared}

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Logits ``[n]`` of the aligned pairs ``(users[k], items[k])``."""
        # ``forward`` here is the module's stacked function (a method name is not in scope).
        return forward(self.shape, self._params(users), self.item[items][:, None, :])[:, 0]

    def score_all(self, users: torch.Tensor) -> torch.Tensor:
        """Logits ``[len(users), I]`` of every item (memory ``~ len(users) * I * 2d`` floats)."""
        rows = self.item.expand(len(users), *self.item.shape)
        return forward(self.shape, self._params(users), rows)


class StackedAdam:
    """Adam on selected rows of stacked tensors, with a step count per row (see module doc)."""

    def __init__(self, tensors: dict[str, torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.lr, self.betas, self.eps = lr, betas, eps
        self.m = {k: torch.zeros_like(v) for k, v in tensors.items()}
        self.v = {k: torch.zeros_like(v) for k, v in tensors.items()}

    @torch.no_grad()
    def step(self, name: str, param: torch.Tensor, idx: torch.Tensor, grad: torch.Tensor,
             t: torch.Tensor) -> None:
        """Update ``param[idx]`` with gradient ``grad`` (``[len(idx), ...]``); ``t`` (float,
        ``[len(idx)]``) is each row's step number after this step (1 for the first)."""
        b1, b2 = self.betas
        if len(idx) == param.shape[0]:  # every row: update in place, no gather/scatter
            m, v = self.m[name], self.v[name]
            m.mul_(b1).add_(grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            view = (-1,) + (1,) * (grad.dim() - 1)
            step = (self.lr / (1 - b1 ** t)).view(view).to(param.dtype)
            denom = (v / (1 - b2 ** t).view(view).to(param.dtype)).sqrt_().add_(self.eps)
            param.addcdiv_(m * step, denom, value=-1.0)
            return
        m = self.m[name][idx].mul_(b1).add_(grad, alpha=1 - b1)
        v = self.v[name][idx].mul_(b2).addcmul_(grad, grad, value=1 - b2)
        self.m[name][idx] = m
        self.v[name][idx] = v
        view = (-1,) + (1,) * (grad.dim() - 1)
        bc1 = (1 - b1 ** t).view(view)
        bc2 = (1 - b2 ** t).view(view)
        upd = (m / bc1) / ((v / bc2).sqrt() + self.eps)
        param[idx] -= self.lr * upd
