"""``fedrec reproduce privacy``: the grid, its commands, and a quick reproduction's table."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from fedrec.cli.main import build_parser, main
from fedrec.config import parse_options
from fedrec.reproduce.privacy import EPSILONS, TARGET, TARGETS, plan
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
                            r"(\d\.\d{4}) \| [\d.]+ \w?i?B \| [\d.]+ \|$", text, re.M)
            assert row and float(row[1]) == pytest.approx(e, rel=0.01), (method, e)
            assert float(row[2]) < float(row[1])  # sampled: amplified for the released model
        assert re.search(rf"^\| {method} \| none \| none \| none \| – \| \d\.\d{{4}} \| ",
                         text, re.M)
        assert (tmp_path / f"{method}.png").is_file()
