import itertools
import json
import math
import time

import pytest

from fedrec.errors import ConfigError
from fedrec.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    PLDInfeasible,
    PrivacyAccountant,
    Release,
    worst_client_accountant,
)


def _acct(*records: tuple[object, dict]) -> PrivacyAccountant:
    acct = PrivacyAccountant()
    for mech, kw in records:
        acct.record(mech, **kw)  # type: ignore[arg-type]
    return acct


def test_empty_run_has_zero_epsilon() -> None:
    acct = PrivacyAccountant()
    assert acct.epsilon_pld(1e-5) == 0.0
    assert acct.epsilon_rdp(1e-5) == 0.0
    assert acct.epsilon_basic() == 0.0


@pytest.mark.parametrize("k", [1, 5, 20])
def test_k_fold_laplace_pure_composition(k: int) -> None:
    mech = LaplaceMechanism(sensitivity_l1=1.0, scale=2.0)  # eps = 0.5 per release
    acct = _acct((mech, {"count": k}))
    assert acct.epsilon_basic() == pytest.approx(0.5 * k)
    # PLD never beats the pure bound by much at small delta, and never exceeds it
    pld = acct.epsilon_pld(1e-8)
    assert 0.8 * 0.5 * k <= pld <= 0.5 * k + 1e-3
    assert acct.epsilon_rdp(1e-8) >= pld - 1e-6


def test_single_gaussian_matches_analytic() -> None:
    mech = GaussianMechanism(1.0, sigma=2.0)
    acct = _acct((mech, {}))
    analytic = mech.epsilon(1e-5)
    assert acct.epsilon_pld(1e-5) == pytest.approx(analytic, rel=5e-3)
    assert acct.epsilon_pld(1e-5) >= analytic - 1e-6  # pessimistic discretisation: upper bound
    assert acct.epsilon_rdp(1e-5) >= acct.epsilon_pld(1e-5)


def test_k_fold_gaussian_equals_one_gaussian_with_sigma_over_sqrt_k() -> None:
    # k releases with noise multiplier m compose to one with m / sqrt(k) (exact for Gaussians)
    acct = _acct((GaussianMechanism(1.0, noise_multiplier=4.0), {"count": 16}))
    one = GaussianMechanism(1.0, noise_multiplier=1.0).epsilon(1e-6)
    assert acct.epsilon_pld(1e-6) == pytest.approx(one, rel=5e-3)


def test_monotone_in_rounds_and_subsampling_helps() -> None:
    def eps(count: int, q: float) -> tuple[float, float]:
        acct = _acct((GaussianMechanism(1.0, noise_multiplier=1.2),
                      {"count": count, "sampling_probability": q}))
        return acct.epsilon_pld(1e-5), acct.epsilon_rdp(1e-5)

    rounds = [1, 10, 100]
    results = [eps(k, 0.05) for k in rounds]
    for (p1, r1), (p2, r2) in itertools.pairwise(results):
        assert p2 > p1 and r2 > r1
    for p, r in results:
        assert r >= p  # RDP is the looser bound
    assert eps(10, 0.05)[0] < eps(10, 1.0)[0]


def test_separate_records_equal_one_counted_record() -> None:
    mech = GaussianMechanism(1.0, noise_multiplier=2.0)
    a = _acct((mech, {"count": 10, "sampling_probability": 0.1}))
    b = _acct(*[(mech, {"sampling_probability": 0.1})] * 10)
    assert a.epsilon_pld(1e-5) == pytest.approx(b.epsilon_pld(1e-5))


def test_subsampled_laplace_basic_amplification_and_no_rdp() -> None:
    acct = _acct((LaplaceMechanism(1.0, 1.0), {"count": 10, "sampling_probability": 0.1}))
    assert acct.epsilon_basic() == pytest.approx(10 * math.log1p(0.1 * math.expm1(1.0)))
    assert acct.epsilon_pld(1e-5) <= acct.epsilon_basic() + 1e-3
    with pytest.raises(ConfigError, match="Poisson-subsampled Laplace"):
        acct.epsilon_rdp(1e-5)
    report = acct.report(1e-5)
    assert report.epsilon_rdp is None and report.epsilon_basic is not None


def test_mixed_run_to_dict_is_json() -> None:
    acct = _acct((LaplaceMechanism(1.0, 4.0), {"count": 3}),
                 (GaussianMechanism(1.0, 2.0), {"count": 5, "sampling_probability": 0.2}))
    d = acct.to_dict(1e-5)
    json.dumps(d)
    assert d["neighboring_relation"] == "add_or_remove_one"
    assert d["epsilon_basic"] is None  # Gaussian present
    assert d["epsilon_rdp"] >= d["epsilon_pld"] > 0
    assert d["releases"][1] == {"mechanism": "gaussian", "noise_multiplier": 2.0,
                                "sampling_probability": 0.2, "count": 5}
    with pytest.raises(ConfigError, match="Laplace releases only"):
        acct.epsilon_basic()


@pytest.mark.parametrize("kwargs", [
    {"mechanism": "laplace", "noise_multiplier": -1.0},
    {"mechanism": "gaussian", "noise_multiplier": 1.0, "sampling_probability": 0.0},
    {"mechanism": "gaussian", "noise_multiplier": 1.0, "count": 0},
    {"mechanism": "exponential", "noise_multiplier": 1.0},
])
def test_invalid_releases(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        Release(**kwargs)


def test_invalid_delta() -> None:
    with pytest.raises(ConfigError, match="delta"):
        PrivacyAccountant().epsilon_pld(1.5)


def test_a_client_composes_only_the_rounds_it_took_part_in() -> None:
    # Five rounds; client 7 took part in rounds 1, 3 and 4, client 8 in rounds 2 and 5.
    rounds = {1: [7], 2: [8], 3: [7], 4: [7], 5: [8]}
    participations: dict[int, int] = {}
    for cohort in rounds.values():
        for c in cohort:
            participations[c] = participations.get(c, 0) + 1
    mech = LaplaceMechanism(sensitivity_l1=1.0, scale=2.0)  # 0.5 per release
    acct = worst_client_accountant(mech, participations)
    assert [(r.count, r.noise_multiplier) for r in acct.releases] == [(3, 2.0)]
    assert acct.epsilon_basic() == pytest.approx(3 * 0.5)
    three = _acct((mech, {"count": 3}))  # the same client accounted release by release
    assert acct.epsilon_pld(1e-5) == pytest.approx(three.epsilon_pld(1e-5))
    assert acct.epsilon_pld(1e-5) < _acct((mech, {"count": 5})).epsilon_pld(1e-5)
    assert worst_client_accountant(mech, {}).releases == ()


def test_pld_is_refused_at_huge_epsilon_and_the_report_gives_basic_composition() -> None:
    # One FedGNN-sized upload: L1 sensitivity 2 * 0.1 * 71,000, Laplace scale 0.2.
    mech = LaplaceMechanism(sensitivity_l1=2 * 0.1 * 71_000, scale=0.2)
    acct = _acct((mech, {"count": 3}))
    t0 = time.perf_counter()
    with pytest.raises(PLDInfeasible):
        acct.epsilon_pld(1e-5)
    rep = acct.report(1e-5)
    assert time.perf_counter() - t0 < 5.0  # dp-accounting itself hangs or fails here
    assert rep.epsilon_pld is None and rep.epsilon_rdp is None and rep.pld_note
    assert rep.epsilon == rep.epsilon_basic == pytest.approx(3 * 71_000)
    assert rep.method.startswith("basic")


def test_report_epsilon_is_the_tightest_available_bound() -> None:
    mech = LaplaceMechanism(sensitivity_l1=1.0, scale=1.0)  # 1 per release: PLD is tighter
    rep = _acct((mech, {"count": 20})).report(1e-5)
    assert rep.method == "pld" and rep.epsilon == rep.epsilon_pld < rep.epsilon_basic
    assert rep.pld_note is None
