"""FED-MVMF's model (:mod:`fedrec.algorithms.methods.fed_mvmf`): the objective's two parts, the
client's closed-form user factor and the gradients each side computes. Shapes: ``V`` items x
d, ``A`` user features x d, ``B`` item features x d; ``u`` and ``y`` are one user's rows.

``J = sum_users L_u + J_server`` with

* ``L_u(u; V, A) = sum_j c_j (p_j - u.v_j)^2 + w_Y ||y - A u||^2 + lambda ||u||^2`` over every
  item ``j`` (``p_j`` 1 for the user's training positives and 0 for the rest, ``c_j = 1 +
  alpha`` for a positive and 1 otherwise): the user's part, computed on its client;
* ``J_server(V, A, B) = w_Z ||Z - V B^T||^2 + lambda (||V||^2 + ||A||^2 + ||B||^2)``: the
  public item side information and the regularisers, computed on the server.
"""

from __future__ import annotations

import torch


def user_factor(v: torch.Tensor, a: torch.Tensor, gram_v: torch.Tensor, positives: torch.Tensor,
                y: torch.Tensor, alpha: float, reg: float, user_weight: float) -> torch.Tensor:
    """The ``u`` that minimises ``L_u`` (its gradient in ``u`` is 0; FCF's ALS step plus the
    user side information): ``(V^T C V + w_Y A^T A + lambda I) u = V^T C p + w_Y A^T y``, where
    ``V^T C V = V^T V + alpha V_P^T V_P`` (``gram_v`` is ``V^T V``, shared by every client)."""
    v_pos = v[positives]
    lhs = gram_v + alpha * v_pos.T @ v_pos + user_weight * a.T @ a
    lhs = lhs + reg * torch.eye(v.shape[1], dtype=v.dtype, device=v.device)
    rhs = (1.0 + alpha) * v_pos.sum(0) + user_weight * a.T @ y
    return torch.linalg.solve(lhs, rhs)


def client_loss_and_gradients(u: torch.Tensor, v: torch.Tensor, a: torch.Tensor,
                              positives: torch.Tensor, y: torch.Tensor, alpha: float,
                              reg: float, user_weight: float
                              ) -> tuple[float, torch.Tensor, torch.Tensor]:
    """``(L_u, dL_u/dV, dL_u/dA)`` at ``u``: ``dL_u/dV = 2 (c * (V u - p)) u^T`` (every item's
    row) and ``dL_u/dA = 2 w_Y (A u - y) u^T``."""
    p = torch.zeros(v.shape[0], dtype=v.dtype, device=v.device)
    p[positives] = 1.0
    c = 1.0 + alpha * p
    err = v @ u - p
    side = a @ u - y
    loss = (c * err ** 2).sum() + user_weight * (side ** 2).sum() + reg * (u ** 2).sum()
    grad_v = 2.0 * (c * err)[:, None] * u[None, :]
    grad_a = 2.0 * user_weight * side[:, None] * u[None, :]
    return float(loss), grad_v, grad_a


def server_loss_and_gradients(v: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                              z: torch.Tensor, reg: float, item_weight: float
                              ) -> tuple[float, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(J_server, dJ_server/dV, dJ_server/dA, dJ_server/dB)``: ``2 w_Z (V B^T - Z) B + 2
    lambda V``, ``2 lambda A`` and ``2 w_Z (V B^T - Z)^T V + 2 lambda B``."""
    resid = v @ b.T - z
    loss = (item_weight * (resid ** 2).sum()
            + reg * ((v ** 2).sum() + (a ** 2).sum() + (b ** 2).sum()))
    grad_v = 2.0 * item_weight * resid @ b + 2.0 * reg * v
    grad_a = 2.0 * reg * a
    grad_b = 2.0 * item_weight * resid.T @ v + 2.0 * reg * b
    return float(loss), grad_v, grad_a, grad_b


def item_factors_from_features(b: torch.Tensor, z: torch.Tensor, reg: float,
                               item_weight: float) -> torch.Tensor:
    """The item factors that the item side information alone gives, one row per row of ``z``:
    the ``v`` minimising ``w_Z ||z - B v||^2 + lambda ||v||^2``, i.e. ``(w_Z B^T B + lambda I)
    v = w_Z B^T z``. What a new item (no interaction yet) is scored with: its ``V`` row has only
    ever been pushed towards scoring 0 for every user."""
    lhs = item_weight * b.T @ b + reg * torch.eye(b.shape[1], dtype=b.dtype, device=b.device)
    return torch.linalg.solve(lhs, item_weight * b.T @ z.T).T
