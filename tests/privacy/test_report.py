"""The privacy report (fedrec.privacy.report): its entries' JSON, reading old results.json
files, and the short lines every report is shown in (fedrec.privacy.report_lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.privacy import (
    NO_GUARANTEE,
    Attack,
    Guarantee,
    NoGuarantee,
    PrivacyReport,
    per_coordinate_epsilon,
    per_upload_epsilon,
    run_epsilon,
)
from fedrec.privacy.report import CENTRALIZED, released_model_guarantee
from fedrec.privacy.report_lines import LINE_WIDTH, lines, shorten

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _round_trip(report: PrivacyReport) -> PrivacyReport:
    return PrivacyReport.from_json(json.loads(json.dumps(report.to_json())))


def test_no_guarantee_has_no_epsilon_and_names_the_protection() -> None:
    rep = PrivacyReport((NoGuarantee("secure aggregation: the server learns only the cohort sum",
                                     "sums", Attack("SomeAttack (x)", 0.25),
                                     details={"measured_attack_uploads": 4}),)).to_json()
    assert rep["guarantee"] == NO_GUARANTEE and rep["epsilon"] is None
    assert run_epsilon(rep) == (None, NO_GUARANTEE)
    assert rep["measured_attack"] == "SomeAttack (x)" and rep["measured_attack_f1"] == 0.25
    missing = Attack("SomeAttack", how_to_measure="set x=true").to_json()
    assert missing == {"measured_attack": "SomeAttack: not measured; set x=true",
                       "measured_attack_f1": None}
    assert Attack.from_json(missing) == Attack("SomeAttack", how_to_measure="set x=true")
    auc = Attack("the AS's attack", outcome="AUC 0.6 (chance 0.5)")
    assert Attack.from_json(auc.to_json()) == auc


def _every_kind() -> PrivacyReport:
    top = Guarantee("user-level DP against the server: the sums' noise", 7.99, 1e-5,
                    "rdp (server: most-participating client)", unit="user-level",
                    threat="against the server", attack=Attack("CrossUploadAttack (x)", 0.01),
                    details={"noise_multiplier": 1.0, "epsilon_released_model_rdp": 3.0})
    ids = NoGuarantee("pseudo items: 20 per upload", "the rated items among pseudo ones",
                      Attack("RatedItemsAttack (y): guesses", how_to_measure="set m=true"),
                      part="item_ids")
    return (PrivacyReport((top, ids, released_model_guarantee(3.0, 1e-5, top.details)))
            .with_caveat("graph_expansion", "user embeddings in clear")
            .with_receives({"train": "the cohort's noised sum"}))


def test_every_kind_round_trips_and_keeps_the_keys_results_json_always_had() -> None:
    report = _every_kind()
    assert _round_trip(report) == report
    out = report.to_json()
    assert out["epsilon"] == 7.99 and out["delta"] == 1e-5 and out["epsilon_method"].startswith(
        "rdp") and out["epsilon_released_model"] == 3.0
    assert out["item_ids"]["guarantee"] == NO_GUARANTEE
    assert out["item_ids"]["measured_attack"].endswith(": not measured; set m=true")
    assert out["graph_expansion"] == "user embeddings in clear"
    assert out["server_receives"] == {"train": "the cohort's noised sum"}
    assert lines(report) == [
        "privacy: user-level DP against the server, epsilon 7.99 (delta 1e-05, rdp)",
        "privacy: measured attack F1 0.010 (CrossUploadAttack)",
        "privacy (released model): user-level DP against the released model, epsilon 3 "
        "(delta 1e-05, rdp)",
        # no room for the protection beside the attack
        "privacy (item ids): no formal guarantee; RatedItemsAttack not measured: set m=true",
        "caveat (graph expansion): user embeddings in clear"]


def test_a_reports_parts_are_checked() -> None:
    top = NoGuarantee("x")
    with pytest.raises(ValueError, match="details may not hold"):
        NoGuarantee("x", details={"leakage": "y"})
    with pytest.raises(ValueError, match="distinct"):
        PrivacyReport((top, NoGuarantee("y", part="a"), NoGuarantee("z", part="a")))
    with pytest.raises(ValueError, match="starts with the run's own"):
        PrivacyReport((NoGuarantee("y", part="a"),))
    with pytest.raises(ValueError, match="released_model_guarantee"):
        PrivacyReport((top, Guarantee("other", 1.0, 1e-5, "rdp", part="released_model")))
    with pytest.raises(ValueError, match="caveat key"):
        top_report = PrivacyReport((top,))
        top_report.with_caveat("anything", "text")


def test_the_centralized_report_round_trips() -> None:
    assert _round_trip(CENTRALIZED) == CENTRALIZED
    assert lines(CENTRALIZED) == [
        "privacy: no formal guarantee (none (centralized: all data at one party))"]


@pytest.mark.parametrize(("epsilon", "says"), [
    (8.0, "epsilon 8 (pure, basic composition)"),
    (16.0, "epsilon 16: a weak bound (pure, basic composition)"),
    (1.3e7, "epsilon 1.3e+07: bounds nothing useful (pure, basic composition)")])
def test_an_epsilon_that_bounds_little_says_so(epsilon: float, says: str) -> None:
    g = Guarantee("local DP of the uploads", epsilon, 0.0, "basic composition (pure DP)",
                  unit="client-level", threat="against every observer (local DP)")
    (line,) = lines(PrivacyReport((g,)))
    assert line.endswith(says) and line.startswith("privacy: client-level DP")
    assert len(line) <= LINE_WIDTH


def test_a_long_text_is_cut_at_a_clause_outside_brackets() -> None:
    text = ("defense 'sampling': sampling (beta_range [0.1, 1.0], gamma_range [1, 4]) of the "
            "positives; no model parameters are exchanged")
    assert shorten(text, 200) == text
    assert shorten(text, 40) == "defense 'sampling': sampling ..."  # before ' ('
    assert shorten(text, 95) == ("defense 'sampling': sampling (beta_range [0.1, 1.0], "
                                 "gamma_range [1, 4]) of the positives ...")
    assert len(shorten("x" * 300, 50)) <= 50


def _committed() -> list[Path]:
    return sorted(RESULTS.glob("**/results.json"))


def test_every_committed_results_json_parses_keeps_its_keys_and_renders_short() -> None:
    files = _committed()
    assert files, "no committed results.json"
    for path in files:
        old = json.loads(path.read_text()).get("privacy")
        report = PrivacyReport.from_json(old)
        assert _round_trip(report) == report, path
        back = report.to_json()
        for key, value in (old or {}).items():  # nothing lost; a part may gain its new keys
            assert back[key] == value or value.items() <= back[key].items(), (path, key)
        shown = lines(report)
        assert shown and all(len(line) <= LINE_WIDTH for line in shown), (path, shown)
        assert run_epsilon(back) == run_epsilon(old), path


@pytest.mark.parametrize(("path", "first", "more"), [
    ("fedgnn-ml-100k/results.json", "privacy: ",
     ["privacy (item ids): no formal guarantee", "caveat (client randomness): "]),
    ("privacy/runs/dp/fcf/ml-100k/eps-8/seed-0/results.json",
     "privacy: no formal guarantee (user-level DP against the released model only",
     ["privacy (released model): user-level DP against the released model, epsilon "])])
def test_old_committed_files_render_every_entry(path: str, first: str, more: list[str]) -> None:
    file = RESULTS / path
    if not file.exists():  # pragma: no cover - the committed results moved
        pytest.skip(f"{path} is not committed")
    privacy = json.loads(file.read_text())["privacy"]
    shown = lines(PrivacyReport.from_json(privacy))
    assert shown[0].startswith(first)
    for start in more:
        assert any(line.startswith(start) for line in shown), (start, shown)
    if privacy.get("epsilon") is not None and privacy["epsilon"] > 100:
        assert "bounds nothing useful" in shown[0]


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
    assert PrivacyReport.from_json(old).to_json() == old  # read and written back as it was
    new = {"epsilon": 4546.0, "epsilon_method": "basic composition (pure DP)",
           "epsilon_per_upload": 2273.0, "epsilon_per_coordinate_per_upload": 1.0}
    assert run_epsilon(new) == (4546.0, "basic composition (pure DP)")
    assert per_upload_epsilon(new) == 2273.0 and per_coordinate_epsilon(new) == 1.0
