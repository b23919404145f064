import math

import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.privacy import clip_l2, clip_l2_rows, clip_linf, clip_linf_rows


def test_clip_linf_clamps_each_element() -> None:
    x = torch.tensor([-3.0, -0.5, 0.0, 0.25, 7.0])
    assert torch.equal(clip_linf(x, 1.0), torch.tensor([-1.0, -0.5, 0.0, 0.25, 1.0]))


def test_clip_l2_bounds_norm_and_keeps_direction() -> None:
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 10
    y = clip_l2(x, 2.5)
    assert torch.linalg.vector_norm(y, dtype=torch.float64) <= 2.5
    assert torch.linalg.vector_norm(y) == pytest.approx(2.5, rel=1e-5)
    cos = torch.dot(x, y) / (torch.linalg.vector_norm(x) * torch.linalg.vector_norm(y))
    assert cos.item() == pytest.approx(1.0, abs=1e-6)


def test_clip_l2_leaves_small_vectors_unchanged() -> None:
    x = torch.tensor([0.3, -0.4])  # norm 0.5
    assert torch.allclose(clip_l2(x, 1.0), x)
    assert torch.equal(clip_l2(torch.zeros(3), 1.0), torch.zeros(3))


def test_row_clipping_is_per_row() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 50, generator=g, dtype=torch.float64)
    x[0] *= 1e-3  # below the bound: untouched
    y = clip_l2_rows(x, 1.0)
    norms = torch.linalg.vector_norm(y, dim=1)
    assert torch.all(norms <= 1.0)
    assert torch.equal(y[1:], torch.stack([clip_l2(r, 1.0) for r in x[1:]]))
    assert torch.allclose(y[0], x[0])
    for i in range(1, 8):  # identical to clipping the row on its own
        assert torch.allclose(y[i], clip_l2(x[i], 1.0))
    assert y.dtype == torch.float64
    assert torch.equal(clip_linf_rows(x, 0.5), x.clamp(-0.5, 0.5))


def test_row_clipping_needs_a_matrix() -> None:
    with pytest.raises(ConfigError, match=r"\(B, D\)"):
        clip_l2_rows(torch.ones(3), 1.0)
    with pytest.raises(ConfigError):
        clip_linf_rows(torch.ones(2, 3, 4), 1.0)


@pytest.mark.parametrize("bound", [0.0, -1.0, math.nan, math.inf])
def test_invalid_bound(bound: float) -> None:
    for fn in (clip_linf, clip_l2):
        with pytest.raises(ConfigError, match="clip bound"):
            fn(torch.ones(3), bound)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_clipping_on_gpu() -> None:
    x = torch.randn(4, 100, device="cuda") * 5
    y = clip_l2_rows(x, 1.0)
    assert y.device.type == "cuda"
    assert torch.all(torch.linalg.vector_norm(y, dim=1) <= 1.0)
    assert torch.equal(clip_linf(x, 1.0).cpu(), clip_linf(x.cpu(), 1.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_clip_l2_bound_holds_exactly_after_rounding(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(64, 4096, generator=g) * torch.logspace(-1, 3, 64)[:, None]).to(dtype)
    norms = torch.linalg.vector_norm(clip_l2_rows(x, 1.0), dim=1, dtype=torch.float64)
    assert torch.all(norms <= 1.0)
    for row in x[::8]:
        assert torch.linalg.vector_norm(clip_l2(row, 0.7), dtype=torch.float64) <= 0.7
