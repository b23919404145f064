"""The summary ``fedrec run`` and ``fedrec deploy`` print (issue 41): the round it reports,
named with its rule, the last round's metrics beside it; the data read; the preset."""

from __future__ import annotations

from typing import Any

from fedrec.cli.summary import summary_rows
from fedrec.rounds import RunResult, select_round


def _result(**extra: Any) -> dict[str, Any]:
    history = [{"round": r, "eval": {"val_rmse": v, "rmse": t}}
               for r, v, t in ((1, 1.2, 1.1), (2, 0.9, 0.95), (3, 1.0, 0.91))]
    result = RunResult("fcf", "ml-100k", {"rounds": 3}, history=history,
                       final=history[-1]["eval"], selection=select_round(history),
                       communication={"totals": {}}, status="complete", **extra)
    return result.to_json()


def test_the_metrics_are_the_chosen_rounds_with_the_last_beside_them() -> None:
    rows = dict(summary_rows(_result()))
    assert rows["reported round"] == ("2: lowest val_rmse of the 3 evaluated rounds (earliest "
                                      "on a tie); test metrics are never read to choose")
    assert rows["rmse"] == "0.9500  (last round 3: 0.9100)"
    assert "val_rmse" not in rows  # the rule names the validation metric
    assert rows["preset"] == "none"


def test_the_data_rows_name_the_files_split_and_counts() -> None:
    data = {"given": "ml-100k", "origin": "files", "loader": "RecBole atomic files (x)",
            "files": [{"path": "ml-100k/recbole/ml-100k.inter", "bytes": 2048,
                       "sha256": "ab" * 32}],
            "split": {"name": "random 80%/20%, seed 0", "options": {"seed": 0},
                      "validation": {"fraction": 0.1, "seed": 0, "rows": 8}},
            "counts": {"users": 943, "train_rows": 72408}}
    rows = summary_rows(_result(data=data, preset="paper"))
    shown = dict(rows)
    assert shown["data"] == "ml-100k: RecBole atomic files (x)"
    assert shown["data file"] == ("ml-100k/recbole/ml-100k.inter  2.0 KiB  sha256 "
                                  "abababababababab...")
    assert shown["split"] == ("random 80%/20%, seed 0; options seed=0; validation "
                              "fraction=0.1, seed=0, rows=8")
    assert shown["data counts"] == "users 943, train rows 72,408"
    assert shown["preset"] == "paper"


def test_data_made_in_memory_and_an_older_result_are_shown_as_they_are() -> None:
    data = {"given": "synthetic", "origin": "in memory (...)", "loader": None, "files": [],
            "split": {"name": None}, "counts": {}}
    shown = dict(summary_rows(_result(data=data)))
    assert shown["data files"] == "in memory (...)" and shown["split"] == "not stated"
    older = _result()
    del older["reported_round"]  # a results.json written before it: derived the same way
    assert summary_rows(older) == summary_rows(_result())


def test_every_privacy_entry_and_caveat_is_one_short_row() -> None:
    """FedGNN's local DP composed past any use says so; its item ids' entry, the graph
    expansion and the client randomness are rows of their own (issue 39)."""
    from fedrec.privacy import Attack, Guarantee, NoGuarantee, PrivacyReport
    from fedrec.privacy.report_lines import LINE_WIDTH, lines

    ldp = Guarantee("local DP of the gradient values a client uploads, whole upload: d = 2273 "
                    "coordinates ... " + "x" * 300, 1.3e7, 0.0, "basic composition (pure DP)",
                    unit="client-level", threat="against every observer (local DP)")
    ids = NoGuarantee("pseudo items: 20 unrated items per upload", "rated items among them",
                      Attack("RatedItemsAttack (fedrec.attacks.rated_items): " + "y" * 200,
                             0.44), part="item_ids")
    report = (PrivacyReport((ldp, ids))
              .with_caveat("graph_expansion", "no formal guarantee: user embeddings and item "
                                              "tokens go to the third party in clear")
              .with_caveat("client_randomness", "fresh OS entropy: not reproducible "
                                                "(--client-secret repeats a run)"))
    rows = summary_rows(_result(privacy=report.to_json(), wall_time_s=1.0))
    shown = [(k, v) for k, v in rows if k.startswith(("privacy", "caveat"))]
    assert [f"{k}: {v}" for k, v in shown] == lines(report)
    assert all(len(f"{k}: {v}") <= LINE_WIDTH for k, v in shown)
    assert dict(shown)["privacy"] == ("client-level DP, epsilon 1.3e+07: bounds nothing useful "
                                      "(pure, basic composition)")
    assert dict(shown)["privacy (item ids)"].endswith(
        "; measured attack F1 0.440 (RatedItemsAttack)")
    assert [k for k, _ in shown][2:] == ["caveat (client randomness)",
                                         "caveat (graph expansion)"]


def test_an_old_committed_result_prints_its_privacy_in_short_rows() -> None:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "results/fedgnn-ml-100k/results.json"
    if not path.exists():  # pragma: no cover - the committed results moved
        return
    rows = summary_rows(json.loads(path.read_text()))
    shown = {k: v for k, v in rows if k.startswith(("privacy", "caveat"))}
    assert "privacy" in shown and "privacy (item ids)" in shown
    assert all(len(f"{k}: {v}") <= 100 for k, v in shown.items())
