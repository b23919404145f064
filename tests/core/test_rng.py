"""Keyed randomness: counter-based uniforms and stable seed derivation."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import torch

from fedrec.core.rng import (
    counter_bits,
    counter_normal,
    counter_randint,
    counter_uniform,
    derive_seed,
    numpy_rng,
    torch_generator,
)

N = 200_000


def _ks_uniform(u: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance between the sample and U[0, 1)."""
    s = np.sort(u)
    n = len(s)
    return float(max(np.max(np.arange(1, n + 1) / n - s), np.max(s - np.arange(n) / n)))


def test_counter_uniform_range_and_distribution() -> None:
    u = counter_uniform(12345, torch.arange(N)).numpy()
    assert u.dtype == np.float64 and u.shape == (N,)
    assert u.min() >= 0.0 and u.max() < 1.0
    # Mean, variance, KS distance at ~5 sigma / far beyond the 0.1% critical value (1.95/sqrt(n)).
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / N)
    assert _ks_uniform(u) < 1.95 / math.sqrt(N)
    # Equal-width bins are evenly filled (chi-square with 99 dof; p < 1e-6 above ~190).
    counts = np.bincount((u * 100).astype(int), minlength=100)
    chi2 = float(((counts - N / 100) ** 2 / (N / 100)).sum())
    assert chi2 < 190
    # 53 bits of resolution: no visible lattice of coarse values.
    assert len(np.unique(u)) == N


def test_consecutive_counters_and_seeds_are_uncorrelated() -> None:
    a = counter_uniform(1, torch.arange(N)).numpy()
    b = counter_uniform(2, torch.arange(N)).numpy()
    tol = 5 / math.sqrt(N)
    assert abs(np.corrcoef(a, b)[0, 1]) < tol  # different seeds
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < tol  # neighbouring counters
    # Two-counter streams: (user, row) grid rows are not shifted copies of each other.
    grid = counter_uniform(3, torch.arange(400)[:, None], torch.arange(500)[None, :]).numpy()
    assert abs(np.corrcoef(grid[:-1].ravel(), grid[1:].ravel())[0, 1]) < tol
    assert abs(np.corrcoef(grid[:, :-1].ravel(), grid[:, 1:].ravel())[0, 1]) < tol
    assert abs(grid.mean() - 0.5) < 5 * math.sqrt(1 / 12 / grid.size)


def test_value_depends_only_on_seed_and_counters_not_on_the_batch() -> None:
    seed = derive_seed(0, 7, "fcf-negatives")
    users = torch.tensor([5, 7, 9, 123456789, 7])
    rows = torch.tensor([0, 3, 3, 1, 3])
    together = counter_uniform(seed, users, rows)
    for k in range(len(users)):
        alone = counter_uniform(seed, users[k : k + 1], rows[k : k + 1])
        assert alone.item() == together[k].item()
    assert together[1].item() == together[4].item()  # same (user, row) twice, same value
    # A completely different batch containing (7, 3) gives the same value for it.
    other = counter_uniform(seed, torch.tensor([1, 2, 7, 3]), torch.tensor([9, 9, 3, 9]))
    assert other[2].item() == together[1].item()
    # Broadcasting is the same as listing every pair.
    grid = counter_uniform(seed, users[:, None], torch.arange(4)[None, :])
    flat = counter_uniform(seed, users.repeat_interleave(4), torch.arange(4).repeat(5))
    assert torch.equal(grid.reshape(-1), flat)
    # And the dtype of the counters does not matter.
    assert torch.equal(counter_uniform(seed, users.int(), rows.short()), together)
    # Order of the counters matters: (user, row) is not (row, user).
    assert not torch.equal(counter_uniform(seed, rows, users), together)
    assert counter_bits(seed, users).dtype == torch.int64


def test_counter_randint_and_normal() -> None:
    high = torch.tensor([1, 2, 3, 1000, 40981])
    draws = counter_randint(9, high[:, None], torch.arange(5)[:, None], torch.arange(20000)[None])
    assert draws.dtype == torch.int64
    assert bool((draws >= 0).all()) and bool((draws < high[:, None]).all())
    assert bool((draws[0] == 0).all())
    assert set(draws[2].tolist()) == {0, 1, 2}
    for row, h in zip(draws, high.tolist(), strict=True):
        sd = math.sqrt((h * h - 1) / 12 / 20000)
        assert abs(row.double().mean().item() - (h - 1) / 2) <= 5 * sd
    z = counter_normal(11, torch.arange(N)).numpy()
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 5 / math.sqrt(N) and abs(z.var() - 1) < 5 * math.sqrt(2 / N)
    assert abs(np.mean(np.abs(z) < 1.959964) - 0.95) < 5 * math.sqrt(0.95 * 0.05 / N)


def test_derive_seed_is_stable_and_keyed() -> None:
    s = derive_seed(0, 1, "sample")
    assert s == derive_seed(0, 1, "sample")
    assert 0 <= s < 2**63
    variants = [(0, 1, "sample"), (0, 2, "sample"), (1, 1, "sample"), (0, 1, "dropout"),
                ("0", 1, "sample"), (0, 1, "sample", 5), (0, (1, "sample"))]
    assert len({derive_seed(*v) for v in variants}) == len(variants)
    # Generators built from the same keys repeat; different keys differ.
    assert torch.equal(torch.randn(5, generator=torch_generator(3, "x")),
                       torch.randn(5, generator=torch_generator(3, "x")))
    assert not torch.equal(torch.randn(5, generator=torch_generator(3, "x")),
                           torch.randn(5, generator=torch_generator(3, "y")))
    assert np.array_equal(numpy_rng(1, "a").random(4), numpy_rng(1, "a").random(4))


def test_derive_seed_is_the_same_in_another_process() -> None:
    """Not Python's salted hash(): a resumed run in a new process must draw the same values."""
    keys = (0, 3, "train", 17, "init-user")
    code = (
        "from fedrec.core.rng import derive_seed, counter_uniform; import torch;"
        f"print(derive_seed(*{keys!r}));"
        "print(repr(counter_uniform(derive_seed(1), torch.arange(3)).tolist()))"
    )
    env = {**os.environ, "PYTHONHASHSEED": str(hash("salt") % 1000 + 1)}  # not ours
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    here = f"{derive_seed(*keys)}\n{counter_uniform(derive_seed(1), torch.arange(3)).tolist()!r}\n"
    assert res.stdout == here
