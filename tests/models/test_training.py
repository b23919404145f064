"""The shared minibatch epoch (:func:`fedrec.models.training.minibatch_epoch`): batches in the
given order, one optimiser step each, the hook after each step, the reported losses."""

from __future__ import annotations

import pytest
import torch

from fedrec.models.training import minibatch_epoch


def _problem() -> tuple[torch.nn.Parameter, torch.optim.Optimizer, torch.Tensor]:
    w = torch.nn.Parameter(torch.zeros(()))
    return w, torch.optim.SGD([w], lr=0.1), torch.arange(1.0, 8.0)  # targets 1..7


def test_batches_follow_the_order_and_each_takes_one_step():
    w, opt, target = _problem()
    seen, after = [], []

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        seen.append((idx.tolist(), float(w.detach())))
        return (w - target[idx]).square().sum()

    steps = minibatch_epoch(torch.tensor([6, 0, 3, 1, 5, 2, 4]), 3, loss_of, opt,
                            lambda idx: after.append(idx.tolist()))
    assert [s[0] for s in seen] == [[6, 0, 3], [1, 5, 2], [4]]
    assert after == [[6, 0, 3], [1, 5, 2], [4]]
    # By hand: SGD on sum (w - t)^2, gradient 2 sum (w - t), lr 0.1.
    w1 = 0.0 - 0.1 * 2 * (3 * 0.0 - (7 + 1 + 4))
    assert seen[1][1] == pytest.approx(w1)
    assert [n for _, n in steps] == [3, 3, 1]
    assert steps[0][0] == pytest.approx(7.0**2 + 1.0**2 + 4.0**2)
    assert steps[1][0] == pytest.approx((w1 - 2) ** 2 + (w1 - 6) ** 2 + (w1 - 3) ** 2)


def test_matches_the_hand_written_loop_bit_for_bit():
    gen = torch.Generator().manual_seed(3)
    x, y = torch.randn(50, 4, generator=gen), torch.randn(50, generator=gen)
    order = torch.randperm(50, generator=gen)

    def fit(use_helper: bool) -> tuple[torch.Tensor, list[float]]:
        model = torch.nn.Linear(4, 1)
        torch.nn.init.zeros_(model.weight)
        torch.nn.init.zeros_(model.bias)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)

        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            return (model(x[idx]).squeeze(1) - y[idx]).square().mean()

        if use_helper:
            losses = [loss for loss, _ in minibatch_epoch(order, 16, loss_of, opt)]
        else:
            losses = []
            for idx in torch.split(order, 16):
                loss = loss_of(idx)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
        return model.weight.detach().clone(), losses

    assert fit(True)[1] == fit(False)[1]
    assert torch.equal(fit(True)[0], fit(False)[0])


def test_refuses_a_batch_size_below_one():
    w, opt, _ = _problem()
    with pytest.raises(ValueError, match="batch_size"):
        minibatch_epoch(torch.arange(3), 0, lambda idx: w.square(), opt)
