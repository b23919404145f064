"""A random sparse cohort: each client's distinct row ids and a row of values for each."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

Cohort = tuple[list[torch.Tensor], list[torch.Tensor]]


@pytest.fixture
def cohort() -> Callable[..., Cohort]:
    """``cohort(n, num_rows, width, seed, most=...)``: ``n`` clients, each sending 1 to ``most``
    distinct rows of ``num_rows`` (popular rows more often), each row ``width`` standard
    normal values."""

    def make(n: int, num_rows: int, width: int, seed: int = 0, most: int = 6) -> Cohort:
        gen = torch.Generator().manual_seed(seed)
        weight = 1.0 / torch.arange(1, num_rows + 1, dtype=torch.float64)
        ids, rows = [], []
        for _ in range(n):
            k = int(torch.randint(1, min(most, num_rows) + 1, (), generator=gen))
            ids.append(torch.multinomial(weight, k, generator=gen))
            rows.append(torch.randn(k, width, generator=gen))
        return ids, rows

    return make
