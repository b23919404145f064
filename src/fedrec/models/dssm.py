"""DSSM towers (Huang et al., CIKM 2013) as FL-MV-DSSM uses them, in functional form.

A tower maps an input ``x`` to a semantic vector ``y`` by the paper's equation 3:
``l_1 = W_1 x`` (no bias, no activation: DSSM's first layer), ``l_k = tanh(W_k l_{k-1} + b_k)``
for the later layers, ``y = l_L``; FL-MV-DSSM's Table I gives the widths 64, 32, 16 for the item
tower and every user tower. Relevance is the cosine of the two vectors (equation 4); the
posterior of the positive item among it and ``N`` negatives is a softmax with temperature
``gamma`` (equation 5) and the loss is its negative log (equation 6), averaged over a batch.

Parameters are a dict ``{"w1", "w2", "b2", ...}`` of float32 tensors (``w_k``: ``[in, out]``), so
that a tower can be flattened into one vector (:func:`flatten`) for aggregation and rebuilt from
it (:func:`unflatten`). Initialisation is Glorot-uniform weights and zero biases from a seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from fedrec.errors import ConfigError

Params = dict[str, torch.Tensor]


def param_shapes(in_dim: int, widths: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The shapes of a tower's parameters, in flattening order."""
    if in_dim < 1 or not widths or any(w < 1 for w in widths):
        raise ConfigError(f"a DSSM tower needs a positive input size and widths, got {in_dim} "
                          f"and {list(widths)}")
    shapes: dict[str, tuple[int, ...]] = {}
    prev = in_dim
    for k, width in enumerate(widths, start=1):
        shapes[f"w{k}"] = (prev, width)
        if k > 1:
            shapes[f"b{k}"] = (width,)
        prev = width
    return shapes


def init_tower(in_dim: int, widths: Sequence[int], generator: torch.Generator) -> Params:
    """Glorot-uniform weights, zero biases."""
    out: Params = {}
    for name, shape in param_shapes(in_dim, widths).items():
        if name.startswith("w"):
            bound = (6.0 / (shape[0] + shape[1])) ** 0.5
            out[name] = (torch.rand(shape, generator=generator) * 2 - 1) * bound
        else:
            out[name] = torch.zeros(shape)
    return out


def tower(params: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Equation 3: the semantic vectors of the rows of ``x`` (``[..., in] -> [..., out]``)."""
    h = x @ params["w1"]
    k = 2
    while f"w{k}" in params:
        h = torch.tanh(h @ params[f"w{k}"] + params[f"b{k}"])
        k += 1
    return h


def relevance(user: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
    """Equation 4: cosine of ``user`` (``[..., d]``) with each of ``items`` (``[..., n, d]``),
    broadcasting ``user`` over the item axis; a zero vector has relevance 0 with everything."""
    return F.cosine_similarity(user.unsqueeze(-2), items, dim=-1, eps=1e-8)


def softmax_loss(user: torch.Tensor, candidates: torch.Tensor, gamma: float) -> torch.Tensor:
    """Equations 5-6: the mean over a batch of ``-log P(D+ | Q)``, where ``candidates`` is
    ``[B, 1 + N, d]`` with the positive first and ``user`` is ``[d]`` or ``[B, d]``."""
    logits = gamma * relevance(user.expand(candidates.shape[0], -1), candidates)
    return -torch.log_softmax(logits, dim=1)[:, 0].mean()


def flatten(params: Mapping[str, torch.Tensor], names: Sequence[str]) -> torch.Tensor:
    """The parameters ``names`` in order, as one float32 vector."""
    return torch.cat([params[n].reshape(-1) for n in names])


def unflatten(vector: torch.Tensor, shapes: Mapping[str, tuple[int, ...]]) -> Params:
    """The inverse of :func:`flatten` for parameters of ``shapes`` (in their order)."""
    out: Params = {}
    at = 0
    for name, shape in shapes.items():
        size = 1
        for s in shape:
            size *= s
        out[name] = vector[at: at + size].reshape(shape)
        at += size
    if at != vector.numel():
        raise ConfigError(f"a vector of {vector.numel()} values does not hold parameters of "
                          f"{at} values")
    return out


def num_params(shapes: Mapping[str, tuple[int, ...]]) -> int:
    total = 0
    for shape in shapes.values():
        size = 1
        for s in shape:
            size *= s
        total += size
    return total
