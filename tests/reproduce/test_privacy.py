"""``fedrec reproduce privacy``: the grid, its commands, and a quick reproduction's table."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from fedrec.cli.main import build_parser, main
from fedrec.config import parse_options
from fedrec.reproduce.privacy import EPSILONS, MODES_NAME, TARGET, TARGETS, plan, write_report
from fedrec.reproduce.privacy_rows import AUDITS_NAME, audit_key, audit_parameters
from fedrec.reproduce.report import command_of


def test_grid_has_every_epsilon_and_reference_per_method_and_dataset() -> None:
    keys = {s.key for s in plan(1, quick=False)}
    for t in TARGETS:
        for dataset in t.datasets:
            for e in EPSILONS:
                assert f"dp/{t.method}/{dataset}/eps-{e:g}" in keys
            assert f"dp/{t.method}/{dataset}/none" in keys
            # The clipped-without-noise reference exists for the DP aggregate only.
            assert (f"dp/{t.method}/{dataset}/no-noise" in keys) == t.aggregate
    for spec in plan(1, quick=False):
        if not TARGET[spec.algorithm].aggregate:
            continue  # a method's local mechanism: its own sampling, accounted there
        assert spec.overrides["clients_per_round"] == 0  # Poisson rate 1: see the docstring
        if spec.overrides.get("dp") == "distributed":
            assert spec.overrides["secagg_threshold"] == 1.0


def test_the_runs_table_commands_parse_back_to_the_settings() -> None:
    parser = build_parser()
    for spec in [*plan(1, quick=False), *plan(1, quick=True)]:
        args = parser.parse_args(shlex.split(command_of(spec))[1:])
        assert parse_options(args.set, "--set") == {**spec.overrides, "seed": "S"}, spec.key


@pytest.mark.slow  # a whole quick reproduction (4 or 5 runs of two rounds per method)
def test_quick_reproduction_reports_epsilon_and_the_metric(tmp_path: Path, data_root: Path, ml100k,
                                                     one_thread_module) -> None:
    argv = ["--data-dir", str(data_root), "reproduce", "privacy", "--quick", "--out",
            str(tmp_path), "--threads", "1", "--quiet"]
    assert main(argv) == 0
    text = (tmp_path / "README.md").read_text()
    for method in (t.method for t in TARGETS if t.in_quick):
        for e in (1, 16):  # the server-side epsilon is the target, to the solver's tolerance
            row = re.search(rf"^\| {method} \| eps-{e} \| ([\d.]+) \| ([\d.]+) \| [\d.]+ \| "
                            r"(\d\.\d{4}) \| [^|]+ \| ([\d.]+) \| [\d.]+ \w?i?B \| [\d.]+ \|$",
                            text, re.M)
            assert row and float(row[1]) == pytest.approx(e, rel=0.01), (method, e)
            assert float(row[2]) < float(row[1])  # sampled: amplified for the released model
            assert float(row[4]) < float(row[1])  # audited below accounted
        assert re.search(rf"^\| {method} \| none \| none \| none \| – \| \d\.\d{{4}} \| ",
                         text, re.M)
        assert (tmp_path / f"{method}.png").is_file()
        # The page per method and mode: the unit, and the no-mechanism row's metric.
        modes = (tmp_path / MODES_NAME).read_text()
        section = modes.split(f"## {method} (ml-100k)\n", 1)[1].split("\n## ", 1)[0]
        assert f"Protected unit: {TARGET[method].unit}." in section
        assert re.search(r"^\| no mechanism \| [^|]+ \| [^|]+ \| none \| none \| \d\.\d{4} \|",
                         section, re.M), method
    assert json.loads((tmp_path / AUDITS_NAME).read_text())  # every DP row audited, kept


def test_a_method_without_finished_runs_gets_no_plot_link(tmp_path: Path) -> None:
    # The report links a method's PNG only where it drew one (the docs build checks links).
    readme = write_report(tmp_path, plan(1, quick=True), {}, quick=True)
    assert "](" not in readme.read_text().split("(modes.md)", 1)[1]
    assert not list(tmp_path.glob("*.png"))


def test_a_report_only_pass_makes_its_new_folder(tmp_path: Path, capsys) -> None:
    # It failed with "could not write the private modes to OUT/private_modes.json" where nothing
    # had made OUT yet (found by tests/docs/test_snippets.py).
    out = tmp_path / "new" / "privacy"
    assert main(["reproduce", "privacy", "--quick", "--report-only", "--out", str(out)]) == 0
    assert (out / "README.md").is_file() and (out / "private_modes.json").is_file()


REPO = Path(__file__).resolve().parents[2]


def test_every_committed_dp_row_is_audited_below_its_accounted_epsilon() -> None:
    """Issue 38: every DP row's audit (results/privacy/audits.json, made by the reproduction)
    stays below the epsilon accounted for the same mechanism; the no-noise rows' audits (no
    accounted epsilon) show the audit could tell, and every committed DP run has its audit."""
    audits = json.loads((REPO / "results/privacy" / AUDITS_NAME).read_text())
    noisy = [a for a in audits.values() if a["accounted_epsilon"] is not None]
    assert noisy
    for a in noisy:
        assert a["epsilon_lower_bound"] < a["accounted_epsilon"], a
    ceiling = [a["epsilon_lower_bound"] for a in audits.values() if a["accounted_epsilon"] is None]
    assert ceiling and min(ceiling) > 3  # with the noise removed, the audit certifies a lot
    for path in (REPO / "results/privacy/runs/dp").glob("*/*/*/seed-0/results.json"):
        params = audit_parameters(json.loads(path.read_text()))
        if params is not None:
            assert audit_key(params) in audits, path


@pytest.mark.parametrize("method", ["fcf", "fedgrec"])
def test_a_methods_dp_preset_is_the_privacy_grids_row(method: str) -> None:
    """The packaged ``dp`` preset of a method is the setting its privacy row measured (the
    grid's eps-8 row for FCF; for FedGRec, the tuning candidate named after the preset): the
    figures quoted for it are of exactly these options; only how the sum is computed differs
    (masked by the preset, in clear in the grid: the same decoded sum)."""
    from fedrec.config import presets

    preset = presets(method)["dp"]
    row = {"fcf": "dp/fcf/ml-100k/eps-8", "fedgrec": "tune/fedgrec/preset-dp"}[method]
    config = json.loads((REPO / "results/privacy/runs" / row / "seed-0/results.json")
                        .read_text())["config"]
    how = {"secagg_variant", "dp_masking"}
    for key, value in preset.items():
        if key not in how and not (method == "fedgrec" and key in ("target_epsilon",
                                                                   "secagg_threshold")):
            assert config[key] == value, (key, config[key], value)
