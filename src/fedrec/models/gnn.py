"""FedGNN's local model (Wu et al., KDD 2021): one GNN layer on a client's local subgraph.

The local subgraph of client ``u`` (padded to ``K`` item slots and ``N`` neighbour slots):

* the user node ``u`` with embedding ``e_u`` (lives only on the device);
* its ``K`` rated items ``t_1..t_K`` with embeddings ``e_k`` (rows of the server's item table);
* after graph expansion, up to ``N`` anonymous neighbour users ``n_{k,1..N}`` per item ``t_k``
  (other users who rated the same item), with fixed embeddings ``e_{k,j}``.

Edges (undirected, every node also has a self loop): ``u - t_k`` for every rated item and
``u - n_{k,j}`` for every neighbour: as the paper says (Sec. 3.2 and its footnote), neighbour
users are connected to the user node, not to the co-rated items. (The authors' code attends
over neighbours per item instead; that makes a rated item's state depend on neighbours while a
test item, for which the client has none, cannot.) A neighbour reached through several co-rated
items appears once per item. The user-item edges go through the selected GNN layer; the
user-neighbour edges through a mean aggregator with its own weight ``W_nb``, initialised at 0
(relation-specific weights, as in R-GCN), so that the expansion starts as a no-op instead of
the K*N neighbours suddenly taking most of the user's attention. (Our runs of the variants
that attach neighbours to the items or to the user inside the same GAT layer were spoiled by a
since-fixed divergence of the user step, so they do not settle which variant is better.)
Hidden states::

    z = x W                                            (all nodes, W: d x d)
    GAT:  h_i = sum_{j in N(i) + i} a_ij z_j + b,
          a_ij = softmax_j LeakyReLU_0.2(a_src . z_j + a_dst . z_i)
    GCN:  h_i = sum_{j in N(i) + i} z_j / sqrt(deg_i deg_j) + b   (deg counts the self loop)
    GGNN: m_i = sum_{j in N(i)} z_j;  h_i = GRUCell(m_i, x_i)      (GatedGraphConv, 1 step)

    N(u) = {t_1..t_K},  N(t_k) = {u}
    h_u <- h_u + (mean_{k,j} e_{k,j}) W_nb            (after expansion)

Rating predictor (dot product; ``mu`` is the public midpoint of the rating scale, ``c`` a
learned scalar of the model)::

    y_hat(u, t_k) = mu + c + b_u + b_{t_k} + h_u . h_{t_k}

``b_u``/``b_t`` (optional, config ``bias``): a user bias kept on the device and an item bias
kept in the server's item table, each as an extra last column of the embedding row (so the
item bias gradient is uploaded with the item row, under the same clipping, noise and pseudo
items); without them the rows have width ``d`` and the biases are 0.

Loss over the client's own ratings: MSE ``(1/K) sum_k (y_hat - y)^2`` (default) or MAE
``(1/K) sum_k |y_hat - y|``; ``reduction="sum"`` drops the ``1/K``.

A test item ``t`` the client has not rated is scored with ``h_t`` computed on ``N(t) = {u}``,
exactly as a rated item, and the ``h_u`` of its training graph.

Implementation: the layers are written functionally on dense, padded, masked tensors for ONE
client (:func:`client_loss`), and :func:`cohort_grads` maps ``torch.func.grad`` over a whole
cohort with ``torch.func.vmap``, so each client gets its exact individual gradient of the
shared GNN weights, of its own user embedding and of its own item rows in one batched call.
PyG's ``GATConv``/``GCNConv``/``GatedGraphConv`` are not used here: they take a variable-size
``edge_index`` and scatter ops, which neither batch per client under ``vmap`` nor mask padded
nodes (GATConv takes no edge weights); the dense layers compute the same functions on this
graph (``tests/algorithms/test_fedgnn.py`` checks all three against PyG's layers on one
client's user-item graph, with weights copied over).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from fedrec.data.partition import ClientData
from fedrec.data.types import check_split

Params = dict[str, torch.Tensor]
GNN_KINDS = ("gat", "gcn", "ggnn")
LOSSES = ("mse", "mae")
_NEG = -1e9


def init_params(kind: str, dim: int, generator: torch.Generator) -> Params:
    """Glorot-initialised weights of one layer of ``kind`` (hidden size = ``dim``)."""
    if kind not in GNN_KINDS:
        raise ValueError(f"unknown GNN {kind!r}; use one of {', '.join(GNN_KINDS)}")

    def glorot(*shape: int) -> torch.Tensor:
        bound = math.sqrt(6.0 / (shape[0] + shape[-1]))
        return (torch.rand(*shape, generator=generator) * 2 - 1) * bound

    # W_nb starts at zero: the graph expansion then changes nothing until it is trained.
    p: Params = {"W": glorot(dim, dim), "W_nb": torch.zeros(dim, dim), "c": torch.zeros(())}
    if kind == "gat":
        p["a_src"] = glorot(dim, 1)[:, 0]
        p["a_dst"] = glorot(dim, 1)[:, 0]
        p["b"] = torch.zeros(dim)
    elif kind == "gcn":
        p["b"] = torch.zeros(dim)
    else:  # GRU cell, PyTorch's layout: gates r, z, n stacked
        p["w_ih"] = glorot(3 * dim, dim)
        p["w_hh"] = glorot(3 * dim, dim)
        p["b_ih"] = torch.zeros(3 * dim)
        p["b_hh"] = torch.zeros(3 * dim)
    return p


def flatten(p: Params) -> torch.Tensor:
    return torch.cat([p[k].reshape(-1) for k in sorted(p)])


def unflatten(flat: torch.Tensor, like: Params) -> Params:
    out, i = {}, 0
    for k in sorted(like):
        n = like[k].numel()
        out[k] = flat[i : i + n].reshape(like[k].shape)
        i += n
    return out


def _gat(p: Params, x_self: torch.Tensor, x_ctx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """x_self (..., d), x_ctx (..., C, d), mask (..., C) -> (..., d).

    ``sum_j a_j (x_j W) = (sum_j a_j x_j) W`` and ``a_src . (x_j W) = x_j . (W a_src)``: the
    context is transformed after aggregation, so its C rows are never multiplied by ``W``.
    """
    w = p["W"]
    z_self = x_self @ w
    dst = z_self @ p["a_dst"]
    s_self = F.leaky_relu(z_self @ p["a_src"] + dst, 0.2)
    s_ctx = F.leaky_relu(x_ctx @ (w @ p["a_src"]) + dst[..., None], 0.2)
    s_ctx = torch.where(mask, s_ctx, torch.full_like(s_ctx, _NEG))
    alpha = torch.softmax(torch.cat([s_self[..., None], s_ctx], -1), -1)
    agg = (alpha[..., 1:, None] * x_ctx).sum(-2)
    return alpha[..., 0:1] * z_self + agg @ w + p["b"]


def _gcn(p: Params, x_self: torch.Tensor, x_ctx: torch.Tensor, mask: torch.Tensor,
         deg_self: torch.Tensor, deg_ctx: torch.Tensor) -> torch.Tensor:
    w = mask.to(x_ctx.dtype) / torch.sqrt(deg_self[..., None] * deg_ctx)
    agg = x_self / deg_self[..., None] + (w[..., None] * x_ctx).sum(-2)
    return agg @ p["W"] + p["b"]


def _ggnn(p: Params, x_self: torch.Tensor, x_ctx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = (mask.to(x_ctx.dtype)[..., None] * x_ctx).sum(-2) @ p["W"]
    gi = m @ p["w_ih"].T + p["b_ih"]
    gh = x_self @ p["w_hh"].T + p["b_hh"]
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * x_self


def hidden_states(
    kind: str, p: Params, e_u: torch.Tensor, e_items: torch.Tensor, item_mask: torch.Tensor,
    nb_mean: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(h_u (d,), h_items (K, d))`` of one client's padded subgraph (see module docstring).

    ``e_items`` (K, d), ``item_mask`` (K,) bool, ``nb_mean`` (d,): the mean of the client's
    neighbour embeddings (zeros before expansion or without neighbours). Neighbours are fixed
    and enter only through this mean, so a client keeps the mean, not the K x N x d list.
    """
    k, d = e_items.shape
    ctx_t = e_u.expand(k, 1, d)  # an item's context: the user
    mask_t = torch.ones(k, 1, dtype=torch.bool, device=e_items.device)
    if kind == "gat":
        h_u, h_t = _gat(p, e_u, e_items, item_mask), _gat(p, e_items, ctx_t, mask_t)
    elif kind == "gcn":
        deg_u = 1.0 + item_mask.to(e_u.dtype).sum()
        two = torch.full((k,), 2.0, dtype=e_u.dtype, device=e_u.device)  # self loop + the user
        h_u = _gcn(p, e_u, e_items, item_mask, deg_u, two)
        h_t = _gcn(p, e_items, ctx_t, mask_t, two, deg_u.expand(k, 1))
    else:
        h_u, h_t = _ggnn(p, e_u, e_items, item_mask), _ggnn(p, e_items, ctx_t, mask_t)
    # Neighbour users: mean aggregator with its own weight into the user state.
    return h_u + nb_mean @ p["W_nb"], h_t


def split_bias(p: Params, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(embedding, bias)`` of a row: rows of width ``d + 1`` carry a bias in their last
    column (user bias on the device, item bias in the server's table); width ``d``: bias 0."""
    d = p["W"].shape[0]
    if e.shape[-1] > d:
        return e[..., :d], e[..., d]
    return e, torch.zeros(e.shape[:-1], dtype=e.dtype, device=e.device)


def dropout_keep(shape: tuple[int, ...], rate: float, dim: int,
                 generator: torch.Generator) -> torch.Tensor:
    """Inverted-dropout multipliers for rows of width ``shape[-1]``: each of the first ``dim``
    (embedding) columns is ``0`` with probability ``rate``, else ``1 / (1 - rate)``; the bias
    column beyond ``dim`` is always kept (``1``). The paper's dropout on node features."""
    keep = (torch.rand(shape, generator=generator) >= rate).float() / (1 - rate)
    keep[..., dim:] = 1.0
    return keep


def client_loss(
    kind: str, loss: str, reduction: str, mu: float, p: Params, e_u: torch.Tensor,
    e_items: torch.Tensor, nb_mean: torch.Tensor, item_mask: torch.Tensor, ratings: torch.Tensor,
) -> torch.Tensor:
    """One client's loss over its own (unpadded) ratings."""
    e_u, b_u = split_bias(p, e_u)
    e_items, b_t = split_bias(p, e_items)
    h_u, h_t = hidden_states(kind, p, e_u, e_items, item_mask, nb_mean)
    err = mu + p["c"] + b_u + b_t + h_t @ h_u - ratings
    per = err.square() if loss == "mse" else err.abs()
    fm = item_mask.to(per.dtype)
    total = (per * fm).sum()
    return total if reduction == "sum" else total / fm.sum().clamp(min=1.0)


def loss_fn(kind: str, loss: str, reduction: str, mu: float) -> Callable[..., torch.Tensor]:
    """``f(params, e_u, e_items, nb_mean, item_mask, ratings)`` for one client."""
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use mse or mae")

    def f(p, e_u, e_items, nb_mean, item_mask, ratings):
        return client_loss(kind, loss, reduction, mu, p, e_u, e_items, nb_mean, item_mask, ratings)

    return f


def cohort_grads(
    f: Callable[..., torch.Tensor], p: Params, e_u: torch.Tensor, e_items: torch.Tensor,
    nb_mean: torch.Tensor, item_mask: torch.Tensor, ratings: torch.Tensor,
) -> tuple[Params, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-client gradients of a padded cohort chunk (leading dim B on every data tensor).

    Returns ``(grad params, each (B, ...)), grad e_u (B, d), grad e_items (B, K, d), loss (B,)``.
    """

    def f_with_loss(p, e_u, e_items, nb_mean, item_mask, ratings):
        val = f(p, e_u, e_items, nb_mean, item_mask, ratings)
        return val, val.detach()

    g = vmap(grad(f_with_loss, argnums=(0, 1, 2), has_aux=True), in_dims=(None, 0, 0, 0, 0, 0))
    (gp, gu, gt), val = g(p, e_u, e_items, nb_mean, item_mask, ratings)
    return gp, gu, gt, val


def cohort_user_grads(
    f: Callable[..., torch.Tensor], p: Params, e_u: torch.Tensor, e_items: torch.Tensor,
    nb_mean: torch.Tensor, item_mask: torch.Tensor, ratings: torch.Tensor,
) -> torch.Tensor:
    """Per-client gradients w.r.t. the user embeddings only (B, d): the cheap local steps."""
    g = vmap(grad(f, argnums=1), in_dims=(None, 0, 0, 0, 0, 0))
    return g(p, e_u, e_items, nb_mean, item_mask, ratings)


def predict_test(
    kind: str, mu: float, p: Params, e_u: torch.Tensor, e_items: torch.Tensor,
    item_mask: torch.Tensor, nb_mean: torch.Tensor, e_test: torch.Tensor,
) -> torch.Tensor:
    """Predicted ratings (T,) of one client for test items ``e_test`` (T, d) (module docstring)."""
    e_u, b_u = split_bias(p, e_u)
    e_items, _ = split_bias(p, e_items)
    e_test, b_test = split_bias(p, e_test)
    h_u, _ = hidden_states(kind, p, e_u, e_items, item_mask, nb_mean)
    t = e_test.shape[0]
    all_t = torch.ones(t, dtype=torch.bool, device=e_test.device)
    _, h_test = hidden_states(kind, p, e_u, e_test, all_t, nb_mean)
    return mu + p["c"] + b_u + b_test + h_test @ h_u


def cohort_predict(kind: str, mu: float, p: Params, *batched: torch.Tensor) -> torch.Tensor:
    """:func:`predict_test` mapped over a padded cohort chunk -> (B, T)."""
    def f(*args: torch.Tensor) -> torch.Tensor:
        return predict_test(kind, mu, p, *args)

    return vmap(f)(*batched)


def pad_subgraphs(datas: Sequence[ClientData], e_u: torch.Tensor,
                  nb_means: Sequence[torch.Tensor | None], items_table: torch.Tensor, dim: int
                  ) -> dict[str, torch.Tensor]:
    """Padded, masked tensors of a chunk of local subgraphs (leading dim = ``len(datas)``):
    ``items``/``mask``/``ratings`` (B, K), ``nb_mean`` (B, d; zeros without neighbours),
    ``e_u`` (B, d[+1]) and ``e_items`` (B, K, d[+1]) gathered from ``items_table``."""
    kmax = max(max((d.num_train for d in datas), default=1), 1)
    b = len(datas)
    items = torch.zeros(b, kmax, dtype=torch.long)
    mask = torch.zeros(b, kmax, dtype=torch.bool)
    ratings = torch.zeros(b, kmax)
    nb_mean = torch.zeros(b, dim)
    for r, data in enumerate(datas):
        k = data.num_train
        items[r, :k] = torch.from_numpy(data.train_items.astype(np.int64))
        mask[r, :k] = True
        ratings[r, :k] = torch.from_numpy(data.train_values.astype(np.float32))
        if nb_means[r] is not None:
            nb_mean[r] = nb_means[r]
    return {"items": items, "mask": mask, "ratings": ratings, "nb_mean": nb_mean,
            "e_u": e_u, "e_items": items_table[items]}


def pad_tests(datas: Sequence[ClientData], split: str = "test"
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(items, ratings, mask)`` of the ``split`` rows (``valid`` or ``test``), each (B, T), of
    a chunk of clients."""
    rows = [d.rows(check_split(split)) for d in datas]
    tmax = max(max((len(i) for i, _ in rows), default=1), 1)
    test = torch.zeros(len(datas), tmax, dtype=torch.long)
    vals = torch.zeros(len(datas), tmax)
    tmask = torch.zeros(len(datas), tmax, dtype=torch.bool)
    for r, (items, values) in enumerate(rows):
        n = len(items)
        test[r, :n] = torch.from_numpy(items.astype(np.int64))
        vals[r, :n] = torch.from_numpy(values.astype(np.float32))
        tmask[r, :n] = True
    return test, vals, tmask
