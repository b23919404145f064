"""The ``fedrec`` command line, run as a real subprocess on the staged data."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from fedrec.algorithms import config_show_text
from fedrec.federation.checkpoint import load_checkpoint


def fedrec(*args: str, data_root: Path, timeout: float = 300,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "FEDREC_DATA": str(data_root), "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-m", "fedrec.cli.main", *args],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd,
    )


def fedrec_in_process(*args: str, data_root: Path) -> subprocess.CompletedProcess:
    """``fedrec ARGS`` through the same :func:`fedrec.cli.main.main` in this process: for the
    refusals, which end before any training (a subprocess each paid torch's import, about a
    minute over this module). An exception that escapes ``main`` fails the test, as a
    traceback in a subprocess would; argparse's own errors exit 2 as in a subprocess."""
    from fedrec.cli.main import main as fedrec_main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        mp.setenv("FEDREC_DATA", str(data_root))
        try:
            code = fedrec_main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def assert_clean_error(res: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, no traceback, and the last stderr line is the one-line error."""
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines, "no error message"
    last = lines[-1]
    assert last.startswith("fedrec: error: "), res.stderr
    assert sum(ln.startswith("fedrec: error:") for ln in lines) == 1
    for fragment in fragments:
        assert fragment in last, (fragment, last)
    return last


@pytest.fixture(scope="module")
def ml100k_root(data_root: Path) -> Path:
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    return data_root


def _mirror_ml100k(data_root: Path, dest: Path) -> Path:
    """A copy of the staged ml-100k (symlinks) whose files can be replaced one by one."""
    src = data_root / "ml-100k"
    for p in src.rglob("*"):
        if p.is_file():
            target = dest / "ml-100k" / p.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(p)
    return dest


BAD_INPUTS = {
    "algorithm": (["run", "nope", "--dataset", "ml-100k"], ["unknown algorithm", "nope"]),
    "dataset": (["run", "pmf", "--dataset", "no-such-data"], ["no-such-data"]),
    "option": (["run", "pmf", "--dataset", "ml-100k", "--set", "colour=blue"], ["colour"]),
    "lr": (["run", "pmf", "--dataset", "ml-100k", "--set", "lr=-1"], ["lr must be > 0"]),
    "flag": (["run", "pmf", "--dataset", "ml-100k", "--bogus-flag"], ["--bogus-flag"]),  # argparse
    "checkpoint-every": (["run", "pmf", "--dataset", "ml-100k", "--checkpoint-every", "0"],
                         ["checkpoint_every must be at least 1, got 0"]),
    "gowalla": (["reproduce", "fedgnn", "--gowalla"],
                ["--gowalla applies to fedgrec and ptf-fedrec only"]),
    "reproduction": (["reproduce", "fedgrecc", "--quick"], ["unknown reproduction", "fedgrec"]),
    "only-and-report-only": (["reproduce", "feras", "--only", "table/", "--report-only"],
                             ["--only and --report-only exclude each other"]),
    "only-empty": (["reproduce", "feras", "--only", ","], ["--only needs at least one"]),
    # Issue 42: accepted silently before, or (deploy) pinned.
    "only-no-match": (["reproduce", "feras", "--quick", "--only", "table/,tabel/"],
                      ["--only 'tabel/' matches no setting; the keys start with", "table/"]),
    "seeds-0": (["reproduce", "feras", "--seeds", "0"], ["--seeds must be at least 1, got 0"]),
    "sweep-seeds-0": (["reproduce", "fedgnn", "--sweep-seeds", "0"],
                      ["--sweep-seeds must be at least 1, got 0"]),
    "deploy-max-users-0": (["deploy", "fcf", "--dataset", "ml-100k", "--max-users", "0"],
                           ["max_users must be at least 1, got 0"]),
    "deploy-max-users-negative": (["deploy", "fcf", "--dataset", "ml-100k", "--max-users", "-3"],
                                  ["max_users must be at least 1, got -3"]),
    "deploy-timeout-0": (["deploy", "fcf", "--dataset", "ml-100k", "--timeout", "0"],
                         ["timeout must be > 0 seconds, got 0.0"]),
    "deploy-timeout-negative": (["deploy", "fcf", "--dataset", "ml-100k", "--timeout", "-1"],
                                ["timeout must be > 0 seconds, got -1.0"]),
}


# ``fedrec run`` arguments wrong in a way seen without the data ({tmp}: a folder that
# _make_preload_files fills), and what the error line must say.
PRELOAD = {
    "out-is-a-file": (["--out", "{tmp}/a-file"], ["is a file, not a directory"]),
    "out-under-a-file": (["--out", "{tmp}/a-file/sub"], ["cannot be made: ", "a-file is a file"]),
    "out-uncreatable": (["--out", "/proc/fedrec-no-such/out"], ["cannot be made"]),
    "results-is-a-dir": (["--out", "{tmp}/results-dir"], ["results.json is a directory"]),
    "checkpoint-is-a-dir": (["--out", "{tmp}/checkpoint-dir"], ["checkpoint.pt is a directory"]),
    "threads": (["--threads", "-1"], ["--threads must be >= 1, got -1"]),
    "config-not-utf8": (["--config", "{tmp}/latin.yaml"], ["line 2: not UTF-8"]),
    "config-is-a-dir": (["--config", "{tmp}"], ["is a directory, not a YAML file"]),
    "config-duplicate-key": (["--config", "{tmp}/dup.yaml"], ["line 2: 'rounds' is given twice"]),
    "config-unknown-dataset": (["--config", "{tmp}/typo.yaml"], ["unknown dataset 'ml100k'"]),
    "lr-inf": (["--set", "lr=inf"], ["lr must be a finite number, got inf"]),
    "data-opt-unknown": (["--data-opt", "colour=blue"], ["unknown option(s) colour"]),
    "data-opt-no-value": (["--data-opt", "split"], ["--data-opt expects key=value"]),
    "data-opt-twice": (["--data-opt", "split=u2", "--data-opt", "split=u3"],
                       ["--data-opt split is given twice"]),
}


def _make_preload_files(tmp: Path) -> None:
    (tmp / "results-dir" / "results.json").mkdir(parents=True)
    (tmp / "checkpoint-dir" / "checkpoint.pt").mkdir(parents=True)
    (tmp / "a-file").write_text("x")
    (tmp / "latin.yaml").write_bytes("rounds: 2\n# r\xe9glages\n".encode("latin-1"))
    (tmp / "dup.yaml").write_text("rounds: 2\nrounds: 3\n")
    (tmp / "typo.yaml").write_text("datasets:\n  ml100k: {dim: 3}\n")


@pytest.fixture(scope="module")
def runs(ml100k_root: Path, corrupt_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """Every command of this module, started a few at a time (most pay torch's import, ~2 s)."""
    tmp = tmp_path_factory.mktemp("cli")
    jobs: dict[str, tuple[tuple[str, ...], Path]] = {
        "algorithms": (("algorithms",), ml100k_root),
        "config": (("config", "show", "fcf"), ml100k_root),
        "list": (("datasets", "list"), ml100k_root),
        "info": (("datasets", "info", "ml-100k"), ml100k_root),
        "info-cora": (("datasets", "info", "cora"), ml100k_root),
        "verify": (("datasets", "verify", "ml-100k"), ml100k_root),
        "verify-corrupt": (("datasets", "verify", "ml-100k"), corrupt_root),
        "verify-corrupt-strict": (("datasets", "verify", "ml-100k", "--strict"), corrupt_root),
        "run": (("run", "pmf", "--dataset", "ml-100k", "--set", "rounds=2", "--set", "dim=8",
                 "--out", str(tmp / "run"), "--quiet", "--threads", "1"), ml100k_root),
        # ML-100K's third GroupLens fold instead of the packaged u1.
        "run-u3": (("run", "pmf", "--dataset", "ml-100k", "--set", "rounds=2", "--set", "dim=8",
                    "--data-opt", "split=u3", "--out", str(tmp / "run-u3"), "--quiet",
                    "--threads", "1"), ml100k_root),
        "malformed": (("run", "pmf", "--dataset", "ml-100k", "--set", "rounds=1",
                       "--out", str(tmp / "bad-malformed"), "--quiet"), corrupt_root),
        # --data-dir wins over $FEDREC_DATA (which points nowhere here).
        "malformed-data-dir": (("--data-dir", str(corrupt_root), "datasets", "info", "ml-100k"),
                               tmp / "elsewhere"),
    }
    for name, (args, _) in BAD_INPUTS.items():
        jobs[f"bad-{name}"] = ((*args, "--out", str(tmp / f"bad-{name}"), "--quiet"), ml100k_root)
    # Run on data that fails to load (u.data line 6): each must be refused before loading it.
    _make_preload_files(tmp / "preload")
    for name, (args, _) in PRELOAD.items():
        args = [a.format(tmp=tmp / "preload") for a in args]
        jobs[f"preload-{name}"] = (("run", "pmf", "--dataset", "ml-100k", "--quiet", *args),
                                   corrupt_root)
    # --data-dir after the subcommand's name (it was an unknown argument there).
    jobs["data-dir-after-run"] = (("run", "pmf", "--dataset", "ml-100k", "--quiet",
                                   "--data-dir", str(corrupt_root)), tmp / "elsewhere")
    jobs["data-dir-after-info"] = (("datasets", "info", "ml-100k", "--data-dir",
                                    str(corrupt_root)), tmp / "elsewhere")
    # Every refusal in this process, one after another (module docstring of fedrec_in_process);
    # the commands that work, and one refusal of each kind, as real subprocesses.
    in_process = [k for k in jobs if k.startswith(("bad-", "preload-", "data-dir-after-"))
                  and k not in ("bad-flag", "preload-out-is-a-file", "data-dir-after-run")]
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {k: pool.submit(fedrec, *a, data_root=root) for k, (a, root) in jobs.items()
                   if k not in in_process}
        results = {k: fedrec_in_process(*jobs[k][0], data_root=jobs[k][1]) for k in in_process}
        results.update({k: f.result() for k, f in futures.items()})
    return results, tmp


@pytest.fixture(scope="module")
def corrupt_root(ml100k_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _mirror_ml100k(ml100k_root, tmp_path_factory.mktemp("corrupt-data"))
    lines = (ml100k_root / "ml-100k/u.data").read_text().splitlines(keepends=True)
    lines[5] = "12\tabc\t3\t881250949\n"  # a non-numeric item id on line 6
    target = root / "ml-100k/u.data"
    target.unlink()
    target.write_text("".join(lines))
    return root


def test_algorithms(runs) -> None:
    res = runs[0]["algorithms"]
    assert res.returncode == 0, res.stderr
    names = [ln.split()[0] for ln in res.stdout.splitlines() if ln.strip()]
    assert {"pmf", "fcf"} <= set(names)


def test_config_show_prints_the_packaged_defaults(runs) -> None:
    res = runs[0]["config"]
    assert res.returncode == 0, res.stderr
    assert res.stdout == config_show_text("fcf")
    assert yaml.safe_load(res.stdout)["rounds"] >= 1  # a file a user can copy and edit


@pytest.mark.parametrize("show", [("fedgnn",), ("fedgnn", "--dataset", "ml-100k")],
                         ids=["show", "show-dataset"])
def test_an_edited_config_show_file_is_what_runs(show: tuple[str, ...], ml100k_root: Path,
                                                  tmp_path: Path) -> None:
    # The README's steps: `fedrec config show ... > my.yaml`, edit it, `fedrec run --config`.
    # FedGNN's packaged ML-100K section sets 640 rounds; the file's edited rounds must win.
    shown = fedrec("config", "show", *show, data_root=ml100k_root)
    assert shown.returncode == 0, shown.stderr
    assert ("rounds: 640 " in shown.stdout) == ("--dataset" in show)
    text = shown.stdout
    tiny = {"rounds": 2, "clients_per_round": 16, "dim": 8, "pseudo_items": 10, "neighbours": 5}
    for key, value in tiny.items():
        text, n = re.subn(rf"^{key}: \S+", f"{key}: {value}", text, flags=re.M)
        assert n == 1, key
    mine, out = tmp_path / "my.yaml", tmp_path / "run"
    mine.write_text(text)
    res = fedrec("run", "fedgnn", "--dataset", "ml-100k", "--config", str(mine),
                 "--set", "seed=3", "--out", str(out), "--quiet", "--threads", "1",
                 data_root=ml100k_root)
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["rounds"] == 2 and len(data["history"]) == 2
    sources = data["config_sources"]  # where each option not at its default came from
    assert {k: sources[k] for k in tiny} == dict.fromkeys(tiny, f"file {mine}")
    assert sources["seed"] == "--set"
    assert (sources.get("lr") == f"file {mine}") == ("--dataset" in show)  # packaged 0.2
    rows = dict(ln.strip().split("  ", 1) for ln in res.stdout.splitlines() if "  " in ln.strip())
    assert rows["rounds"].strip() == "2"
    assert rows[f"from file {mine}"].strip().startswith("rounds=2, clients_per_round=16")
    assert rows["from --set"].strip() == "seed=3"


def _status(res: subprocess.CompletedProcess) -> dict[str, str]:
    return {ln.split()[1]: ln.split()[2] for ln in res.stdout.splitlines() if ln.strip()}


def test_datasets_list_info_verify(runs) -> None:
    res = runs[0]["list"]
    assert res.returncode == 0, res.stderr
    listed = {ln.split()[0] for ln in res.stdout.splitlines() if ln.strip()}
    assert {"ml-100k", "gowalla", "cora"} <= listed
    res = runs[0]["info"]
    assert res.returncode == 0, res.stderr
    described, options = _info_sections(res.stdout)
    fields = dict(ln.split(None, 1) for ln in described[1:] if ln.strip())
    assert described[0] == "ml-100k"
    # The options `fedrec run --help` points to, each with its documentation.
    assert list(options) == ["split", "test_fraction", "seed", "source", "val_fraction",
                             "val_seed"]
    assert options["split"].startswith("'u1'..'u5' (GroupLens files)")
    assert fields["num_users"].strip() == "943" and fields["num_items"].strip() == "1682"
    # u1's 80,000 training ratings, of which 10% per user (rounded down) are validation.
    assert int(fields["num_train"]) + int(fields["num_valid"]) == 80000
    assert int(fields["num_valid"]) == 7592 and fields["num_test"].strip() == "20000"
    res = runs[0]["verify"]
    assert res.returncode == 0, res.stderr
    status = _status(res)
    assert status["u.data"] == "ok" and status["u1.test"] == "ok"


def _info_sections(stdout: str) -> tuple[list[str], dict[str, str]]:
    """``fedrec datasets info``'s lines before its options, and the options with their docs."""
    described, _, rest = stdout.partition("options (--data-opt KEY=VALUE)\n")
    options = dict(ln.split(None, 1) for ln in rest.splitlines() if ln.strip())
    return described.splitlines(), options


def test_datasets_info_lists_a_graphs_options(runs) -> None:
    res = runs[0]["info-cora"]
    if res.returncode == 2 and "ind.cora" in res.stderr:
        pytest.skip("staged cora not available")
    assert res.returncode == 0, res.stderr
    described, options = _info_sections(res.stdout)
    assert described[0] == "cora" and "num_nodes" in res.stdout
    assert list(options) == ["split", "seed", "val_fraction", "val_seed"]
    assert options["split"].startswith("'public' (default: Planetoid's")


def test_verify_reports_a_corrupted_file(runs) -> None:
    res = runs[0]["verify-corrupt"]
    assert res.returncode == 0  # a report, not an error...
    status = _status(res)
    assert status["u.data"] == "mismatch" and status["u.item"] == "ok"
    assert runs[0]["verify-corrupt-strict"].returncode == 1  # ...unless --strict


def test_run_pmf_writes_results_and_prints_a_summary(runs) -> None:
    res, out = runs[0]["run"], runs[1] / "run"
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    summary = dict(ln.strip().split(None, 1) for ln in res.stdout.splitlines()
                   if ln.strip().startswith(("rmse", "algorithm", "dataset", "rounds")))
    assert summary["algorithm"] == "pmf" and summary["dataset"] == "ml-100k"
    assert summary["rounds"] == "2"
    rmse = float(summary["rmse"])
    assert 0.8 < rmse < 1.5
    assert "bytes total" in res.stdout and "wall time" in res.stdout
    assert str(out / "results.json") in res.stdout
    data = json.loads((out / "results.json").read_text())
    assert data["status"] == "complete" and data["config"]["rounds"] == 2
    assert data["config"]["dim"] == 8
    assert round(data["final"]["rmse"], 4) == rmse
    assert len(data["history"]) == 2
    assert (out / "checkpoint.pt").is_file()


def test_data_opt_selects_the_fold_and_is_recorded(runs) -> None:
    res = runs[0]["run-u3"]
    assert res.returncode == 0, res.stderr
    u1, u3 = (runs[1] / name for name in ("run", "run-u3"))
    data = json.loads((u3 / "results.json").read_text())
    assert data["dataset_options"] == {"split": "u3"}
    assert json.loads((u1 / "results.json").read_text())["dataset_options"] == {}
    # Other rows were trained and tested on: the loaded data's fingerprints differ.
    made = [load_checkpoint(d / "checkpoint.pt")["made_from"] for d in (u1, u3)]
    assert made[1]["dataset_options"] == {"split": "u3"}
    assert made[0]["data_sha256"] != made[1]["data_sha256"]


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(runs, case: str) -> None:
    assert_clean_error(runs[0][f"bad-{case}"], *BAD_INPUTS[case][1])
    assert not (runs[1] / f"bad-{case}" / "results.json").exists()


def test_malformed_data_file_is_one_line_and_exit_2(runs) -> None:
    assert_clean_error(runs[0]["malformed"], "u.data", "line 6")
    assert not (runs[1] / "bad-malformed" / "results.json").exists()
    assert_clean_error(runs[0]["malformed-data-dir"], "line 6")


@pytest.mark.parametrize("case", list(PRELOAD))
def test_command_line_mistakes_are_one_line_before_the_data_is_loaded(runs, case: str) -> None:
    # The data root of these runs has a malformed u.data: an error that waited for the data
    # would name u.data line 6 instead.
    line = assert_clean_error(runs[0][f"preload-{case}"], *PRELOAD[case][1])
    assert "u.data" not in line


def test_data_dir_after_the_subcommand(runs) -> None:
    assert_clean_error(runs[0]["data-dir-after-run"], "u.data", "line 6")
    assert_clean_error(runs[0]["data-dir-after-info"], "u.data", "line 6")


@pytest.mark.parametrize("argv", [
    ["run", "pmf", "--dataset", "ml-100k"],
    ["reproduce", "fedgnn"],
    ["deploy", "fcf", "--dataset", "ml-100k"],
    ["algorithms"],
    ["config", "show", "fcf"],
    ["datasets", "verify"],
])
def test_data_dir_is_accepted_before_and_after_every_subcommand(argv: list[str]) -> None:
    from fedrec.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args([*argv, "--data-dir", "/d"]).data_dir == "/d"
    assert parser.parse_args(["--data-dir", "/d", *argv]).data_dir == "/d"
    assert parser.parse_args(["--data-dir", "/a", *argv, "--data-dir", "/b"]).data_dir == "/b"
    assert parser.parse_args(argv).data_dir is None


def test_default_threads_leave_room_for_another_process() -> None:
    from fedrec.core.threads import default_threads

    assert [default_threads(c) for c in (1, 2, 3, 16)] == [1, 1, 1, 8]


# -- issue 42: a refused run touches nothing; a run that cannot fit is refused -----------------

SECRET_A, SECRET_B = "a1" * 32, "b2" * 32
FCF_RUN = ("run", "fcf", "--dataset", "ml-100k", "--set", "rounds=1", "--set", "dim=4",
           "--quiet", "--threads", "1")


def test_a_resume_with_another_client_secret_is_refused_before_anything_is_touched(
        ml100k_root: Path, corrupt_root: Path, tmp_path: Path, monkeypatch) -> None:
    """It was refused only once the data was loaded and the trainer's state restored, after
    results.json had been deleted (the README promised the opposite)."""
    monkeypatch.delenv("FEDREC_CLIENT_SECRET", raising=False)
    out = tmp_path / "run"
    first = fedrec(*FCF_RUN, "--out", str(out), "--client-secret", SECRET_A,
                   data_root=ml100k_root)
    assert first.returncode == 0, first.stderr
    finished = (out / "results.json").read_bytes()
    checkpoint = (out / "checkpoint.pt").read_bytes()
    # On data that fails to load too: the secret is compared before the data is loaded.
    for root in (ml100k_root, corrupt_root):
        res = fedrec(*FCF_RUN, "--out", str(out), "--resume", "--client-secret", SECRET_B,
                     data_root=root)
        assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "results.json"]
        assert (out / "results.json").read_bytes() == finished
        assert (out / "checkpoint.pt").read_bytes() == checkpoint
        assert_clean_error(res, "--resume refused: the client secret differs from the "
                                "checkpoint's")
    # The run's own secret resumes (nothing is left to train) to the same result.
    again = fedrec(*FCF_RUN, "--out", str(out), "--resume", "--client-secret", SECRET_A,
                   data_root=ml100k_root)
    assert again.returncode == 0, again.stderr
    assert (json.loads((out / "results.json").read_text())["final"]
            == json.loads(finished)["final"])


def test_a_graph_run_that_cannot_fit_in_the_memory_budget_is_one_line_and_exit_2(
        data_root: Path, tmp_path: Path, monkeypatch) -> None:
    """Feras with many hosts on Cora: refused before anything is built, with the estimate and
    the budget (300 hosts here, under a 256 MiB budget: without the check they took 2.2 GB to
    build, and 5000 grew to 22 GB until the OOM killer ended them)."""
    if not (data_root / "planetoid/ind.cora.graph").is_file():
        pytest.skip("staged cora not available")
    monkeypatch.setenv("FEDREC_MEMORY_BUDGET_MIB", "256")
    out = tmp_path / "feras"
    res = fedrec("run", "feras", "--dataset", "cora", "--set", "num_hosts=300", "--set",
                 "rounds=1", "--set", "iterations_per_round=1", "--set", "presample=5",
                 "--out", str(out), "--quiet", "--threads", "1", data_root=data_root,
                 timeout=120)
    line = assert_clean_error(res, "fedrec: error: feras on cora would need about ",
                              "300 hosts'", "more than the budget of 256.0 MiB",
                              "$FEDREC_MEMORY_BUDGET_MIB")
    assert " MiB of memory (estimate; " in line or " GiB of memory (estimate; " in line
    assert list(out.iterdir()) == []
    monkeypatch.setenv("FEDREC_MEMORY_BUDGET_MIB", "lots")
    res = fedrec("run", "feras", "--dataset", "cora", "--set", "rounds=1", "--quiet",
                 data_root=data_root, timeout=120)
    assert_clean_error(res, "FEDREC_MEMORY_BUDGET_MIB must be a positive number of MiB, "
                            "got 'lots'")


@pytest.mark.parametrize("command", ["run", "deploy"])
def test_a_bad_client_secret_names_where_it_came_from(command: str, monkeypatch, capsys) -> None:
    """A stale $FEDREC_CLIENT_SECRET is named, not only "the client secret" (issue 42); the
    value itself is never echoed."""
    from fedrec.cli.main import main

    monkeypatch.setenv("FEDREC_CLIENT_SECRET", "xyz")
    assert main([command, "fcf", "--dataset", "ml-100k", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fedrec: error: $FEDREC_CLIENT_SECRET: the client secret must be hex digits "
                   "(64 of them)"]
    assert main([command, "fcf", "--dataset", "ml-100k", "--quiet", "--client-secret", "ab"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fedrec: error: --client-secret: a client secret has 32 bytes (64 hex "
                   "digits), got 1"]


# -- issue 41: runs say what they ran; a finished --out is refused; a default folder ---------

PMF_RUN = ("run", "pmf", "--dataset", "ml-100k", "--set", "rounds=2", "--set", "dim=4",
           "--set", "eval_every=1", "--quiet", "--threads", "1")


def _summary(res: subprocess.CompletedProcess) -> dict[str, str]:
    return dict(ln.strip().split("  ", 1) for ln in res.stdout.splitlines() if "  " in ln.strip())


def test_a_run_without_out_goes_to_runs_and_a_finished_out_is_refused(
        ml100k_root: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FEDREC_CLIENT_SECRET", SECRET_A)
    res = fedrec(*PMF_RUN, data_root=ml100k_root, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"pmf-ml-100k-\d{8}-\d{6}", folder.name)
    rows = _summary(res)
    assert rows["results"].strip() == f"runs/{folder.name}/results.json"
    data = json.loads((folder / "results.json").read_text())
    # The summary names what the run read and the round it reports, as results.json does.
    assert rows["preset"].strip() == "none"
    assert rows["data"].strip() == f"ml-100k: {data['data']['loader']}"
    assert rows["split"].strip().startswith("GroupLens u1: u1.test")
    rep = data["reported_round"]
    assert rows["reported round"].strip() == f"{rep['round']}: {rep['rule']}"
    assert float(rows["rmse"].split()[0]) == round(rep["test"]["rmse"], 4)
    # Into that folder again: refused, one line, before anything there is touched.
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = fedrec(*PMF_RUN, "--out", str(folder), data_root=ml100k_root)
    assert_clean_error(again, f"output directory {folder} holds a finished run (results.json); "
                              "give another --out, or --overwrite to replace it or --resume "
                              "to continue it")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files
    replaced = fedrec(*PMF_RUN, "--out", str(folder), "--overwrite", "--set", "seed=1",
                      data_root=ml100k_root)
    assert replaced.returncode == 0, replaced.stderr
    assert json.loads((folder / "results.json").read_text())["config"]["seed"] == 1


# -- issue 41, item 5: a fast start ------------------------------------------------------------

#: What the CLI's start must not import: each costs seconds (torch, scipy through dp-accounting)
#: or pulls in a method.
HEAVY = ("torch", "numpy", "scipy", "flwr", "dp_accounting", "fedrec.algorithms.base",
         "fedrec.federation", "fedrec.experiment")

_PROBE = """
import json, sys
from fedrec.cli.main import main
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit:  # --help exits
        pass
print(json.dumps(sorted(sys.modules)))
"""


def test_help_and_the_algorithm_list_import_no_torch_and_no_method() -> None:
    """``fedrec --help``, every subcommand's ``--help`` and ``fedrec algorithms`` import none of
    :data:`HEAVY` and no method package: what makes them start in a fraction of a second
    (``bench/startup.py`` times it; this checks the cause, not the clock)."""
    from fedrec.cli.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    argvs = [["--help"], ["algorithms"], *([name, "--help"] for name in commands)]
    res = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argvs)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert res.returncode == 0, res.stderr
    modules = json.loads(res.stdout.splitlines()[-1])
    assert "fedgnn " in res.stdout  # the list was printed
    assert [m for m in modules if m.startswith(HEAVY)] == []
    # The list read each package's meta.py from its file, importing no package.
    assert [m for m in modules if m.startswith("fedrec.algorithms.methods.")] == []
