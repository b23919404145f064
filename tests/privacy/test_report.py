"""The privacy report's shape (fedrec.privacy.report) and reading old results.json files."""

from __future__ import annotations

import pytest

from fedrec.privacy import (
    NO_GUARANTEE,
    attack_fields,
    no_guarantee,
    per_coordinate_epsilon,
    per_upload_epsilon,
    run_epsilon,
)


def test_no_guarantee_has_no_epsilon_and_names_the_protection() -> None:
    rep = no_guarantee("secure aggregation: the server learns only the cohort sum", "sums",
                       **attack_fields("SomeAttack", 0.25, measured_attack_uploads=4))
    assert rep["guarantee"] == NO_GUARANTEE and rep["epsilon"] is None
    assert run_epsilon(rep) == (None, NO_GUARANTEE)
    assert rep["measured_attack"] == "SomeAttack" and rep["measured_attack_f1"] == 0.25
    missing = attack_fields("SomeAttack", None, "set x=true")
    assert missing["measured_attack_f1"] is None and "set x=true" in missing["measured_attack"]


def test_an_old_fedgnn_report_is_read_as_its_whole_upload_figure() -> None:
    # The shape FedGNN's privacy_report had before: "epsilon" was the per-coordinate figure
    # composed over every round, "epsilon_per_upload" the per-coordinate one.
    old = {"ldp": True, "epsilon": 2.99992, "epsilon_per_upload": 1.0,
           "epsilon_per_upload_coordinate": 1.0, "epsilon_per_upload_vector": 2273.0,
           "upload_dim_max": 2273, "max_participation": 2, "delta": 1e-5}
    eps, how = run_epsilon(old)
    assert eps == pytest.approx(2 * 2273.0) and "older results.json" in how
    assert per_upload_epsilon(old) == 2273.0
    assert per_coordinate_epsilon(old) == 1.0
    new = {"epsilon": 4546.0, "epsilon_method": "basic composition (pure DP)",
           "epsilon_per_upload": 2273.0, "epsilon_per_coordinate_per_upload": 1.0}
    assert run_epsilon(new) == (4546.0, "basic composition (pure DP)")
    assert per_upload_epsilon(new) == 2273.0 and per_coordinate_epsilon(new) == 1.0
