"""The defenses by name (:mod:`fedrec.federation.aggregation.defense`): which a server that sees
only a sum can use, the check before training and its one-line errors, and :func:`robust_sum`
on a cohort's sparse updates: the plain sum bit for bit, each rule as its function, and an
attack end to end."""

from __future__ import annotations

import pytest
import torch

from fedrec.errors import ConfigError, NoUpdateError, ProtocolError
from fedrec.federation.aggregation import (
    DEFENSES,
    RowUpdates,
    check_defense,
    coordinate_median,
    multi_krum,
    norm_bounded_sum,
    per_item,
    robust_sum,
    sum_rows,
    trimmed_mean,
)


def test_only_the_plain_sum_and_norm_bounding_suit_a_server_that_sees_a_sum():
    assert {d.name for d in DEFENSES.values() if d.secure_compatible} == {"none", "norm_bound"}
    assert [d.name for d in DEFENSES.values() if d.client_applied_when_secure] == ["norm_bound"]
    for name in ("none", "norm_bound"):
        check_defense(name, secure=True, cohort=10, params={"bound": 1.0} if "bound" in name
                      else None)


def test_check_defense_fills_defaults_and_converts():
    assert check_defense("trimmed_mean", secure=False, cohort=10) == {"beta": 0.1}
    assert check_defense("krum", secure=False, cohort=10, params={"f": 3}) == {"f": 3, "m": None}
    assert check_defense("norm_bound", secure=False, cohort=1, params={"bound": 2}) == {
        "bound": 2.0}
    assert check_defense("item_trimmed_mean", secure=False, cohort=1,
                         params={"beta": 0, "bound_rows": True}) == {"beta": 0.0,
                                                                     "bound_rows": True}


@pytest.mark.parametrize(("name", "secure", "cohort", "params", "match"), [
    ("mean", False, 10, None, "unknown defense 'mean'; choose one of none, norm_bound"),
    ("median", True, 10, None, "median needs each client's update in clear.*none, norm_bound"),
    ("item_median", True, 10, None, "in clear"),
    ("krum", True, 10, {"f": 1}, "in clear"),
    ("krum", False, 8, {"f": 3}, r"f=3 needs more than 2f\+2=8 clients, got 8"),
    ("krum", False, 10, {"f": 2, "m": 9}, r"m must lie in \[1, n-f\] = \[1, 8\], got 9"),
    ("krum", False, 10, None, "needs its parameter f"),
    ("krum", False, 10, {"f": 1.5}, "f must be a int, got 1.5"),
    ("trimmed_mean", False, 10, {"beta": 0.5}, r"beta must lie in \[0, 0.5\), got 0.5"),
    ("item_trimmed_mean", False, 10, {"beta": -0.1}, r"beta must lie in \[0, 0.5\)"),
    ("trimmed_mean", False, 10, {"beta": "0.1"}, "beta must be a float, got '0.1'"),
    ("norm_bound", False, 10, {"bound": 0}, "bound must be a finite number > 0, got 0.0"),
    ("norm_bound", False, 10, {"bound": -2.0}, "finite number > 0"),
    ("norm_bound", False, 10, None, "needs its parameter bound"),
    ("median", False, 10, {"beta": 0.1}, "median has no parameter 'beta'; it takes: none"),
    ("item_median", False, 10, {"bound_rows": 1}, "bound_rows must be a bool, got 1"),
])
def test_bad_choices_are_one_line_config_errors(name, secure, cohort, params, match):
    with pytest.raises(ConfigError, match=match) as err:
        check_defense(name, secure=secure, cohort=cohort, params=params)
    assert "\n" not in str(err.value)


def test_robust_sum_none_is_the_plain_sum_bit_for_bit(cohort):
    ids, rows = cohort(30, 10, 3, seed=8)
    expected = sum_rows(torch.cat(ids), torch.cat(rows), 10)
    assert torch.equal(robust_sum("none", ids, rows, 10), expected)


def test_robust_sum_applies_each_named_rule(cohort):
    ids, rows = cohort(30, 10, 3, seed=9)
    u = RowUpdates.of(ids, rows, 10)
    cases = {
        ("norm_bound", (("bound", 1.5),)): norm_bounded_sum(u, 1.5),
        ("median", ()): coordinate_median(u),
        ("trimmed_mean", (("beta", 0.2),)): trimmed_mean(u, 0.2),
        ("krum", (("f", 4), ("m", 10))): multi_krum(u, 4, 10),
        ("item_median", ()): per_item(u, "median"),
        ("item_trimmed_mean", (("bound_rows", True),)): per_item(u, "trimmed_mean", 0.1,
                                                                 bound_rows=True),
    }
    for (name, params), expected in cases.items():
        out = robust_sum(name, ids, rows, 10, dict(params))
        assert out.shape == (10, 3) and out.dtype == torch.float32
        assert torch.equal(out, expected), name


def test_an_attack_on_an_item_end_to_end(cohort):
    """Five of 60 clients send a huge row for the most popular item: the plain sum follows
    them; multi-Krum (f = 5) and the per-item median keep that row within what its benign
    contributors' values allow (each benign value is standard normal: at most 60 of them, each
    below 10 in magnitude with overwhelming probability)."""
    ids, rows = cohort(55, 10, 3, seed=10)
    target, f = 0, 5
    benign_max = max(float(v[i == target].abs().max()) for i, v in zip(ids, rows, strict=True)
                     if bool((i == target).any()))
    ids = ids + [torch.tensor([target])] * f
    rows = rows + [torch.full((1, 3), 1e4)] * f
    assert float(robust_sum("none", ids, rows, 10)[target].min()) > 1e4
    for name, params in (("krum", {"f": f}), ("item_median", None)):
        out = robust_sum(name, ids, rows, 10, params)[target]
        assert float(out.abs().max()) <= 60 * benign_max, name


def test_robust_sum_of_no_updates_or_bad_uploads():
    with pytest.raises(NoUpdateError, match="no client update"):
        robust_sum("median", [], [], 3)
    with pytest.raises(ProtocolError, match="row id outside"):
        robust_sum("median", [torch.tensor([5])], [torch.ones(1, 2)], 3)
    with pytest.raises(ConfigError, match="unknown defense"):
        robust_sum("mean", [torch.tensor([0])], [torch.ones(1, 2)], 3)
