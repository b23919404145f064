"""The experiment runner on real ML-100K: results file, interruption and exact resumption."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.engines.common import simulate
from fedrec.errors import ConfigError, DataError, FedrecError
from fedrec.experiment import RESULTS_NAME, check_resume, made_from, run_experiment
from fedrec.federation.checkpoint import (
    CHECKPOINT_NAME,
    PACKED,
    load_checkpoint,
    unpack_states,
)
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

# Small but real: sampled cohorts and dropouts make the resumed rounds depend on the keyed RNG.
SETTINGS = {
    "fcf": {"rounds": 4, "eval_every": 2, "dim": 8, "clients_per_round": 300, "dropout": 0.2},
    "pmf": {"rounds": 4, "eval_every": 2, "dim": 8, "batch_size": 4096},
    # The server's NGCF draws message dropout from torch's global generator: resuming must
    # restore it too.
    "ptf-fedrec": {"rounds": 4, "eval_every": 2, "clients_per_round": 200, "local_epochs": 1,
                   "server_epochs": 1, "eval_clients": False},
    # Every client per round, so an epoch is one round: the graph expansion happens in round 2,
    # before the stop, and the resumed rounds need the neighbour means, the decayed lr and each
    # client's pseudo-set key (pseudo_set kept across rounds).
    "fedgnn": {"rounds": 4, "eval_every": 2, "dim": 8, "clients_per_round": 943,
               "dropout": 0.2, "pseudo_items": 50, "neighbours": 4, "expand_after": 1,
               "pseudo_set": "fixed_coupled"},
}


QUIET = RunOptions(progress=False)
RESUME = RunOptions(progress=False, resume=True)


def _run(algorithm: str, data_root: Path, out: Path | None, **options):
    return run_experiment(algorithm, "ml-100k", data_dir=data_root,
                          overrides=dict(SETTINGS[algorithm]), out_dir=out,
                          options=RunOptions(progress=False, **options))


def _strip_times(history: list[dict]) -> list[dict]:
    """Rows without wall-clock fields (``time_s``, and ``time_*`` training statistics)."""
    return [{k: ({s: x for s, x in v.items() if not s.startswith("time_")}
                 if k == "train" else v) for k, v in row.items() if k != "time_s"}
            for row in history]


@pytest.fixture(scope="module", params=list(SETTINGS))
def runs(request, data_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """(algorithm, uninterrupted result+dir, interrupted dir after stop, resumed result)."""
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    alg = request.param
    # Bit-exact comparisons need one thread: with more, torch's CPU index_put_(accumulate=True)
    # (the backward of row indexing) adds duplicate rows in a varying order, so even two
    # uninterrupted runs differ in the last bits.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _make_runs(alg, data_root, tmp_path_factory)
    finally:
        torch.set_num_threads(before)


def _make_runs(alg: str, data_root: Path, tmp_path_factory: pytest.TempPathFactory):
    # The uninterrupted and the interrupted run share the experimenter's client secret; the
    # resumed run is given none and must continue with the checkpoint's.
    secrets = ClientSecrets(bytes(range(32)))
    full_dir = tmp_path_factory.mktemp(f"{alg}-full")
    full = _run(alg, data_root, full_dir, client_secret=secrets)
    part_dir = tmp_path_factory.mktemp(f"{alg}-part")
    partial = _run(alg, data_root, part_dir, stop_after=2, client_secret=secrets)
    after_stop = {
        "status": partial.status,
        "files": sorted(p.name for p in part_dir.iterdir()),
        "checkpoint_round": load_checkpoint(part_dir / CHECKPOINT_NAME)["round"],
    }
    resumed = _run(alg, data_root, part_dir, resume=True)
    return alg, full, full_dir, after_stop, resumed, part_dir


def test_checkpoint_every_two_rounds_resumes_to_the_uninterrupted_result(
        data_root: Path, tmp_path: Path) -> None:
    """A stop after round 3 with a checkpoint every 2 rounds loses round 3; the resumed run
    trains it again from round 2's state and ends where the uninterrupted run ends."""
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    settings = {**SETTINGS["fcf"], "eval_every": 4}
    secrets = ClientSecrets(bytes(range(32)))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        full = run_experiment("fcf", "ml-100k", data_dir=data_root, overrides=dict(settings),
                              out_dir=tmp_path / "full",
                              options=RunOptions(progress=False, client_secret=secrets))
        part = tmp_path / "part"
        every_2 = RunOptions(progress=False, checkpoint_every=2)
        stopped = run_experiment("fcf", "ml-100k", data_dir=data_root,
                                 overrides=dict(settings), out_dir=part,
                                 options=RunOptions.of(every_2, client_secret=secrets,
                                                       stop_after=3))
        assert stopped.status == "interrupted"
        assert load_checkpoint(part / CHECKPOINT_NAME)["round"] == 2
        resumed = run_experiment("fcf", "ml-100k", data_dir=data_root,
                                 overrides=dict(settings), out_dir=part,
                                 options=RunOptions.of(every_2, resume=True))
    finally:
        torch.set_num_threads(before)
    assert resumed.status == "complete" and resumed.final == full.final and full.final
    assert _strip_times(resumed.history) == _strip_times(full.history)
    assert resumed.communication["totals"] == full.communication["totals"]


def test_interrupted_run_leaves_only_a_checkpoint(runs) -> None:
    _, _, _, after_stop, _, _ = runs
    assert after_stop["status"] == "interrupted"
    assert RESULTS_NAME not in after_stop["files"]
    assert CHECKPOINT_NAME in after_stop["files"]
    assert after_stop["checkpoint_round"] == 2


def test_resume_gives_exactly_the_uninterrupted_result(runs) -> None:
    alg, full, _, _, resumed, _ = runs
    assert full.status == resumed.status == "complete"
    assert resumed.final == full.final and full.final  # exactly, not approximately
    assert resumed.communication["totals"] == full.communication["totals"]
    assert resumed.communication["by_step"] == full.communication["by_step"]
    assert resumed.communication["rejected"] == full.communication["rejected"]
    assert _strip_times(resumed.history) == _strip_times(full.history)
    assert [row["round"] for row in full.history] == [1, 2, 3, 4]
    assert [("eval" in row) for row in full.history] == [False, True, False, True]
    if alg == "pmf":
        assert full.communication["totals"]["bytes_total"] == 0  # centralized: nothing sent
    else:
        assert full.communication["totals"]["bytes_up"] > 0
    if alg == "fedgnn":
        assert ["expanded" in row["train"] for row in full.history] == [False, True, False, False]
    if alg in ("fcf", "fedgnn"):
        # Dropouts and sampling happened (or the resume test would be too easy).
        clients = [row["train"]["clients"] for row in full.history]
        cohort = SETTINGS[alg]["clients_per_round"]
        assert all(0 < c < cohort for c in clients) and len(set(clients)) > 1
    for value in full.final.values():
        assert math.isfinite(value)


def test_results_file_contents(runs) -> None:
    alg, full, full_dir, _, _, part_dir = runs
    for d in (full_dir, part_dir):
        data = json.loads((d / RESULTS_NAME).read_text())
        assert data["status"] == "complete"
        assert data["algorithm"] == alg and data["dataset"] == "ml-100k"
        for key, value in SETTINGS[alg].items():
            assert data["config"][key] == value
        assert data["seed"] == data["config"]["seed"] == 0
        assert {"python", "fedrec", "torch", "numpy"} <= set(data["versions"])
        assert [row["round"] for row in data["history"]] == [1, 2, 3, 4]
        assert data["final"] == pytest.approx(full.final, rel=0, abs=0)
        totals = data["communication"]["totals"]
        assert totals == full.communication["totals"]
        assert {"bytes_up", "bytes_down", "bytes_total"} <= set(totals)
        assert sum(row["communication"]["bytes_total"] for row in data["history"]) == (
            totals["bytes_total"]
        )
        assert data["wall_time_s"] >= 0


def test_rerun_into_a_finished_directory_is_refused_unless_overwrite(runs,
                                                                    data_root: Path) -> None:
    alg, _, full_dir, _, _, _ = runs
    finished = (full_dir / RESULTS_NAME).read_bytes()
    with pytest.raises(ConfigError, match=r"holds a finished run \(results.json\); give another "
                                          r"--out, or --overwrite to replace it or --resume"):
        _run(alg, data_root, full_dir, stop_after=1)
    assert (full_dir / RESULTS_NAME).read_bytes() == finished  # refused: nothing touched
    out = _run(alg, data_root, full_dir, stop_after=1, overwrite=True)
    assert out.status == "interrupted"
    assert not (full_dir / RESULTS_NAME).exists()  # nothing stale left looking complete


def test_resume_with_a_different_config_is_refused(runs, data_root: Path) -> None:
    alg, _, _, _, _, part_dir = runs
    if alg == "ptf-fedrec":
        changed, named = dict(SETTINGS[alg], alpha=7), r"alpha is \d+ in the checkpoint, 7 now$"
    else:
        changed, named = dict(SETTINGS[alg], dim=9), "dim is 8 in the checkpoint, 9 now"
    with pytest.raises(FedrecError, match=f"^--resume refused: {named}"):
        run_experiment(alg, "ml-100k", data_dir=data_root, overrides=changed, out_dir=part_dir,
                       options=RESUME)
    other = "pmf" if alg == "fcf" else "fcf"
    with pytest.raises(FedrecError, match=rf"^--resume refused: algorithm is {alg} in the "
                                          rf"checkpoint, {other} now$"):
        run_experiment(other, "ml-100k", data_dir=data_root, overrides=dict(SETTINGS[other]),
                       out_dir=part_dir, options=RESUME)


def test_resume_takes_an_option_added_since_the_checkpoint_as_its_default() -> None:
    cfg = resolve_config("fcf", "ml-100k", None, {"rounds": 2})
    record = made_from("fcf", cfg, "ml-100k", {})
    then = {k: v for k, v in record["config"].items() if k != "secagg_variant"}
    check_resume({"made_from": {**record, "config": then}}, record, None, cfg)
    changed = resolve_config("fcf", "ml-100k", None,
                             {"rounds": 2, "secagg_variant": "secagg+"})
    with pytest.raises(FedrecError, match=r"^--resume refused: secagg_variant is bonawitz in "
                                          r"the checkpoint, secagg\+ now$"):
        check_resume({"made_from": {**record, "config": then}},
                     made_from("fcf", changed, "ml-100k", {}), None, changed)


def test_resume_needs_a_checkpoint(data_root: Path, tmp_path: Path) -> None:
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    with pytest.raises(FedrecError, match="no checkpoint"):
        _run("pmf", data_root, tmp_path / "empty", resume=True)
    with pytest.raises(ConfigError, match="--out"):
        _run("pmf", data_root, None, resume=True)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / CHECKPOINT_NAME).write_bytes(b"not a checkpoint")
    with pytest.raises(FedrecError, match="unreadable"):
        _run("pmf", data_root, tmp_path / "bad", resume=True)


def test_unknown_names_and_wrong_kind(data_root: Path) -> None:
    with pytest.raises(ConfigError, match="unknown algorithm"):
        run_experiment("nope", "ml-100k", data_dir=data_root, options=QUIET)
    with pytest.raises(ConfigError, match="unknown"):
        run_experiment("pmf", "no-such-data", data_dir=data_root, options=QUIET)
    if (data_root / "planetoid/ind.cora.x").is_file():
        with pytest.raises(ConfigError, match="graph"):
            run_experiment("pmf", "cora", data_dir=data_root, options=QUIET)


# ---- What a resumed run is made from, and the checks made before any data is loaded. ----

QUICK = {"rounds": 2, "dim": 4, "batch_size": 4096}  # pmf: a round is ~0.1 s on ML-100K


def _pmf(data_root: Path, out: Path | None, dataset: str = "ml-100k", **kw):
    overrides = {**QUICK, **kw.pop("overrides", {})}
    return run_experiment("pmf", dataset, data_dir=data_root, overrides=overrides, out_dir=out,
                          dataset_options=kw.pop("dataset_options", None),
                          options=RunOptions(progress=False, **kw))


def _need(data_root: Path, *files: str) -> None:
    missing = [f for f in files if not (data_root / f).is_file()]
    if missing:
        pytest.skip(f"staged data not available: {', '.join(missing)}")


def _mirror(data_root: Path, dest: Path, edit=None) -> Path:
    """Symlinks to the staged ml-100k under ``dest``; ``edit(lines)`` rewrites a copy of u.data."""
    src = data_root / "ml-100k"
    for p in src.rglob("*"):
        if p.is_file():
            target = dest / "ml-100k" / p.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(p)
    if edit is not None:
        lines = (src / "u.data").read_text().splitlines(keepends=True)
        edit(lines)
        (dest / "ml-100k/u.data").unlink()
        (dest / "ml-100k/u.data").write_text("".join(lines))
    return dest


@pytest.fixture(scope="module")
def unreadable_root(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ml-100k whose u.data fails to parse on line 6: a check made after loading the data
    would report that instead of its own error."""
    _need(data_root, "ml-100k/u.data")

    def garble(lines: list[str]) -> None:
        lines[5] = "12\tabc\t3\t881250949\n"

    return _mirror(data_root, tmp_path_factory.mktemp("unreadable"), garble)


def test_a_refused_resume_names_the_setting_and_keeps_the_finished_result(
    data_root: Path, tmp_path: Path
) -> None:
    _need(data_root, "ml-100k/u.data")
    out = tmp_path / "run"
    _pmf(data_root, out)
    finished = (out / RESULTS_NAME).read_bytes()
    checkpoint = (out / CHECKPOINT_NAME).read_bytes()
    sha = r"[0-9a-f]{12}\.\.\."
    refusals = [  # each a regular expression of the whole message after "--resume refused: "
        ({"overrides": {"rounds": 3}}, "rounds is 2 in the checkpoint, 3 now"),
        ({"overrides": {"rounds": 3, "lr": 0.5}},
         r"rounds is 2 in the checkpoint, 3 now \(and 1 more\)"),
        # Another split is other data: refused on the loaded data's digest, naming the option.
        ({"dataset_options": {"split": "u2"}},
         rf"the data's sha256 is {sha} in the checkpoint, {sha} now "
         r"\(dataset option split is not set in the checkpoint, u2 now\)"),
    ]
    for kw, message in refusals:
        with pytest.raises(FedrecError) as err:
            _pmf(data_root, out, resume=True, **kw)
        # A refused resume touches nothing: the completed result is still there, unchanged.
        assert (out / RESULTS_NAME).read_bytes() == finished
        assert re.fullmatch("--resume refused: " + message, str(err.value)), str(err.value)
    with pytest.raises(FedrecError, match=r"^--resume refused: algorithm is pmf in the "
                                          r"checkpoint, fcf now$"):
        run_experiment("fcf", "ml-100k", data_dir=data_root, overrides={"rounds": 2, "dim": 4},
                       out_dir=out, options=RESUME)
    assert (out / RESULTS_NAME).read_bytes() == finished
    assert (out / CHECKPOINT_NAME).read_bytes() == checkpoint
    # Resuming the finished run as it was made rewrites the same result.
    again = _pmf(data_root, out, resume=True)
    assert again.status == "complete" and len(again.history) == 2
    assert json.loads((out / RESULTS_NAME).read_text())["final"] == json.loads(finished)["final"]


def test_a_resume_given_another_client_secret_is_refused_before_the_data_is_loaded(
    data_root: Path, unreadable_root: Path, tmp_path: Path
) -> None:
    """Issue 42: the secret was compared only when the trainer's state was restored, after the
    data was loaded and results.json deleted. The checkpoint's record is compared first now,
    on data that would fail to load too."""
    _need(data_root, "ml-100k/u.data")
    out = tmp_path / "run"
    fcf = {"rounds": 1, "dim": 4, "clients_per_round": 50}

    def run(root: Path, secret: bytes, **kw):
        return run_experiment("fcf", "ml-100k", data_dir=root, overrides=fcf, out_dir=out,
                              options=RunOptions(progress=False,
                                                 client_secret=ClientSecrets(secret), **kw))

    assert run(data_root, bytes(32)).status == "complete"
    finished = (out / RESULTS_NAME).read_bytes()
    checkpoint = (out / CHECKPOINT_NAME).read_bytes()
    for root in (data_root, unreadable_root):
        with pytest.raises(FedrecError) as err:
            run(root, bytes(range(32)), resume=True)
        assert (out / RESULTS_NAME).read_bytes() == finished
        assert (out / CHECKPOINT_NAME).read_bytes() == checkpoint
        assert str(err.value).startswith("--resume refused: the client secret differs from "
                                         "the checkpoint's")
        assert "\n" not in str(err.value)
    # No secret: the resumed run continues with the checkpoint's (nothing to compare).
    stored = load_checkpoint(out / CHECKPOINT_NAME)
    check_resume(stored, stored["made_from"], out, secrets=None)
    check_resume(stored, stored["made_from"], out, secrets=ClientSecrets(bytes(32)))


def test_a_run_that_fails_before_its_first_checkpoint_leaves_the_finished_result(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new run into a finished directory removed results.json before its first round; one
    that then failed left neither the old result nor a new one. The old result now goes only
    when the new run writes its first checkpoint in its place."""
    _need(data_root, "ml-100k/u.data")
    from fedrec.algorithms.methods.pmf import PMFTrainer

    out = tmp_path / "run"
    _pmf(data_root, out)
    finished = (out / RESULTS_NAME).read_bytes()
    checkpoint = (out / CHECKPOINT_NAME).read_bytes()

    def boom(self, rnd: int):
        raise RuntimeError("round 1 failed")

    with monkeypatch.context() as m:
        m.setattr(PMFTrainer, "train_round", boom)
        with pytest.raises(RuntimeError, match="round 1 failed"):
            _pmf(data_root, out, overrides={"lr": 0.5}, overwrite=True)
    assert (out / RESULTS_NAME).read_bytes() == finished
    assert (out / CHECKPOINT_NAME).read_bytes() == checkpoint
    # Once it has written a checkpoint, nothing stale looks complete beside it.
    assert _pmf(data_root, out, overrides={"lr": 0.5}, stop_after=1,
                overwrite=True).status == "interrupted"
    assert not (out / RESULTS_NAME).exists()


def test_resume_refuses_another_dataset_of_the_same_shape(
    data_root: Path, tmp_path: Path
) -> None:
    # Douban and Flixster are both 3000 x 3000: the resume went through and reported rounds
    # trained on Douban as Flixster's.
    _need(data_root, "douban/training_test_dataset.mat",
          "flixster/training_test_dataset_10_NNs.mat")
    out = tmp_path / "run"
    assert _pmf(data_root, out, "douban", stop_after=1).status == "interrupted"
    with pytest.raises(FedrecError, match=r"^--resume refused: dataset is douban in the "
                                          r"checkpoint, flixster now$"):
        _pmf(data_root, out, "flixster", resume=True)
    assert load_checkpoint(out / CHECKPOINT_NAME)["round"] == 1
    assert not (out / RESULTS_NAME).exists()


def test_resume_refuses_changed_data(data_root: Path, tmp_path: Path) -> None:
    _need(data_root, "ml-100k/u.data", "ml-100k/u1.test")
    test_pairs = {tuple(ln.split("\t")[:2])
                  for ln in (data_root / "ml-100k/u1.test").read_text().splitlines()}

    def change_one_training_rating(lines: list[str]) -> None:
        k = next(i for i, ln in enumerate(lines) if tuple(ln.split("\t")[:2]) not in test_pairs)
        user, item, rating, stamp = lines[k].split("\t")
        lines[k] = "\t".join([user, item, str(int(rating) % 5 + 1), stamp])

    out = tmp_path / "run"
    _pmf(data_root, out, overrides={"rounds": 3}, stop_after=1)
    changed = _mirror(data_root, tmp_path / "changed", change_one_training_rating)
    with pytest.raises(FedrecError) as err:
        _pmf(changed, out, overrides={"rounds": 3}, resume=True)
    assert re.fullmatch(r"--resume refused: the data's sha256 is [0-9a-f]{12}\.\.\. in the "
                        r"checkpoint, [0-9a-f]{12}\.\.\. now", str(err.value)), str(err.value)
    # The same files in another folder are the same data: that resume goes on.
    same = _mirror(data_root, tmp_path / "same")
    assert _pmf(same, out, overrides={"rounds": 3}, resume=True, stop_after=2).status == (
        "interrupted")
    assert load_checkpoint(out / CHECKPOINT_NAME)["round"] == 2


def test_resume_compares_what_the_data_is_not_how_it_was_named(
    data_root: Path, tmp_path: Path
) -> None:
    """Issue 42: the default split given explicitly (``split=u1``), or the same folder named
    by another path, made --resume refuse identical data; the loaded data's digest decides."""
    _need(data_root, "ml-100k/u.data")
    out = tmp_path / "run"
    _pmf(data_root, out, overrides={"rounds": 3}, stop_after=1)
    linked = tmp_path / "linked-data"
    linked.symlink_to(data_root)
    assert _pmf(linked, out, overrides={"rounds": 3}, dataset_options={"split": "u1"},
                resume=True, stop_after=2).status == "interrupted"
    assert load_checkpoint(out / CHECKPOINT_NAME)["round"] == 2


def test_resume_of_a_users_file_by_another_path(tmp_path: Path) -> None:
    """A user's file named by another path (a symlinked folder) with its default split spelled
    out is the same data; one changed rating is not, and the refusal names the digests."""
    rng = np.random.default_rng(0)
    rows = [f"{u},{i},{rng.integers(1, 6)}" for u in range(30) for i in range(u % 7, 40, 3)]
    first = tmp_path / "a" / "ratings.csv"
    first.parent.mkdir()
    first.write_text("user,item,rating\n" + "\n".join(rows) + "\n")
    (tmp_path / "b").symlink_to(first.parent)
    out = tmp_path / "run"

    def pmf(path: Path, **kw):
        return run_experiment("pmf", path, overrides={**QUICK, "rounds": 3}, out_dir=out,
                              dataset_options=kw.pop("dataset_options", None),
                              options=RunOptions(progress=False, **kw))

    assert pmf(first, stop_after=1).status == "interrupted"
    assert pmf(tmp_path / "b" / "ratings.csv", dataset_options={"split": "random"},
               resume=True, stop_after=2).status == "interrupted"
    rows[0] = rows[0][:-1] + str(int(rows[0][-1]) % 5 + 1)
    other = tmp_path / "c" / "ratings.csv"
    other.parent.mkdir()
    other.write_text("user,item,rating\n" + "\n".join(rows) + "\n")
    with pytest.raises(FedrecError) as err:  # the spelling of the run that wrote it last
        pmf(other, resume=True)
    assert re.fullmatch(r"--resume refused: the data's sha256 is [0-9a-f]{12}\.\.\. in the "
                        r"checkpoint, [0-9a-f]{12}\.\.\. now \(dataset is .*/b/ratings\.csv in "
                        r"the checkpoint, .*/c/ratings\.csv now; dataset option split is random "
                        r"in the checkpoint, not set now\)", str(err.value)), str(err.value)
    assert load_checkpoint(out / CHECKPOINT_NAME)["round"] == 2


@pytest.mark.parametrize(("algorithm", "count", "message"), [
    ("fcf", 944, r"^clients_per_round is 944 but ml-100k has 943 clients"),
    # Every sum of a secure aggregation is over two clients at least (issue 42: it failed
    # inside the protocol).
    ("fedgrec", 1, r"^clients_per_round is 1 but a sum by secure aggregation needs at least 2 "
                   r"clients; use 2 or more"),
])
def test_clients_per_round_the_run_cannot_draw_is_refused(
        data_root: Path, algorithm: str, count: int, message: str) -> None:
    _need(data_root, "ml-100k/u.data")
    with pytest.raises(ConfigError, match=message):
        run_experiment(algorithm, "ml-100k", data_dir=data_root, options=QUIET,
                       overrides={"rounds": 1, "dim": 4, "clients_per_round": count})


def _one_user_file(tmp_path: Path) -> Path:
    path = tmp_path / "one.csv"
    path.write_text("user,item,rating\n" + "".join(f"u1,i{i},{i % 5 + 1}\n" for i in range(40)))
    return path


@pytest.mark.parametrize("secure", [True, False])
def test_fedgrec_on_a_one_user_file_blames_the_data(tmp_path: Path, secure: bool) -> None:
    """Issue 42: FedGRec on a one-user file failed inside secure aggregation, also with
    secure_aggregation=false; every sum it makes needs two clients, which the data lacks."""
    what = ("a sum by secure aggregation" if secure else
            r"a plain sum of fixed-point uploads \(secure_aggregation=false\)")
    with pytest.raises(DataError, match=rf"^one\.csv has 1 client \(users with training data\), "
                                        rf"but {what} needs at least 2: give data of 2 or more "
                                        r"users$"):
        run_experiment("fedgrec", _one_user_file(tmp_path), options=QUIET,
                       overrides={"rounds": 1, "dim": 4, "clients_per_round": 0,
                                  "secure_aggregation": secure})


def test_a_plain_sum_of_raw_uploads_runs_on_one_user(tmp_path: Path) -> None:
    """FCF without secure aggregation adds raw uploads: one client is a run, not an error."""
    result = run_experiment("fcf", _one_user_file(tmp_path), options=QUIET,
                            overrides={"rounds": 1, "dim": 4, "clients_per_round": 0})
    assert result.status == "complete"


def test_a_run_removes_the_temp_files_of_a_checkpoint_write_that_was_killed(
        data_root: Path, tmp_path: Path) -> None:
    """A kill during save_checkpoint leaves its mkstemp file; the next run into that --out
    removes it once its checks pass (issue 42), and leaves other files alone."""
    _need(data_root, "ml-100k/u.data")
    out = tmp_path / "out"
    out.mkdir()
    stale = [out / "checkpoint.pt123.tmp", out / "checkpoint.ptq_x9.tmp"]
    for path in stale:
        path.write_bytes(b"half a checkpoint")
    (out / "notes.tmp").write_text("mine")
    with pytest.raises(ConfigError):  # refused before its checks pass: nothing is removed
        run_experiment("fcf", "ml-100k", data_dir=data_root, out_dir=out, options=QUIET,
                       overrides={"rounds": 1, "dim": 4, "clients_per_round": 944})
    assert all(path.exists() for path in stale)
    result = run_experiment("fcf", "ml-100k", data_dir=data_root, out_dir=out, options=QUIET,
                            overrides={"rounds": 1, "dim": 4})
    assert result.status == "complete"
    assert not any(path.exists() for path in stale) and (out / "notes.tmp").exists()
    assert sorted(p.name for p in out.glob("checkpoint.pt*")) == ["checkpoint.pt"]


def test_simulate_checks_clients_per_round_as_fedrec_run_does(data_root: Path) -> None:
    """The in-process twin of a deployment makes fedrec run's checks, on its slice of users."""
    _need(data_root, "ml-100k/u.data")
    with pytest.raises(ConfigError, match=r"^clients_per_round is 20 but ml-100k-first10 has 10 "
                                          r"clients"):
        simulate("fcf", "ml-100k", data_dir=data_root,
                 overrides={"rounds": 1, "dim": 4, "clients_per_round": 20},
                 options=RunOptions(max_users=10, progress=False))


def _blocked_out_dirs(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Output directories a run cannot write into, and the error naming each."""
    (tmp / "file").write_text("x")
    (tmp / "results-dir" / RESULTS_NAME).mkdir(parents=True)
    (tmp / "checkpoint-dir" / CHECKPOINT_NAME).mkdir(parents=True)
    return {
        "a file": (tmp / "file", "is a file, not a directory"),
        "under a file": (tmp / "file" / "sub", f"cannot be made: {tmp / 'file'} is a file"),
        # /proc refuses new entries even to root (a chmod'ed directory would not).
        "uncreatable": (Path("/proc/fedrec-no-such/out"), "cannot be made"),
        "results.json a directory": (tmp / "results-dir", f"{RESULTS_NAME} is a directory"),
        "checkpoint.pt a directory": (tmp / "checkpoint-dir", f"{CHECKPOINT_NAME} is a directory"),
    }


@pytest.mark.parametrize("case", ["a file", "under a file", "uncreatable",
                                  "results.json a directory", "checkpoint.pt a directory"])
def test_output_directory_is_checked_before_the_data_is_loaded(
    unreadable_root: Path, tmp_path: Path, case: str
) -> None:
    out, message = _blocked_out_dirs(tmp_path)[case]
    with pytest.raises(ConfigError, match=re.escape(message)):
        _pmf(unreadable_root, out)


def test_resume_compares_what_it_can_before_the_data_is_loaded(
    data_root: Path, unreadable_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _pmf(data_root, out, stop_after=1)
    with pytest.raises(FedrecError, match=r"^--resume refused: rounds is 2 in the checkpoint"):
        _pmf(unreadable_root, out, overrides={"rounds": 3}, resume=True)
    with pytest.raises(FedrecError, match="line 6"):  # the data is loaded once all else is fine
        _pmf(unreadable_root, out, resume=True)


# -- the test rows are never read to train or to choose ----------------------------------------

#: Short real runs that evaluate every round, so that a round is selected among three.
BLIND = {
    "fcf": {"rounds": 3, "eval_every": 1, "dim": 8, "clients_per_round": 300, "dropout": 0.2},
    "fedgnn": {"rounds": 3, "eval_every": 1, "dim": 8, "clients_per_round": 943,
               "pseudo_items": 50, "neighbours": 4, "expand_after": 1},
}


def _with_other_test_ratings(src: Path, dst: Path) -> Path:
    """A copy of the staged ML-100K whose u1 test ratings are replaced by ``6 - r`` (in
    ``u1.test`` and in the ratings file, which must agree); every training rating is kept."""
    test_lines = (src / "u1.test").read_text().splitlines()
    test_pairs = {tuple(line.split("\t")[:2]) for line in test_lines}

    def flipped(line: str) -> str:
        u, i, r, t = line.split("\t")
        return "\t".join([u, i, str(6 - int(r)), t]) if (u, i) in test_pairs else line

    dst.mkdir(parents=True)
    for p in src.rglob("*"):
        if p.is_file() and p.name not in ("u.data", "u1.test"):
            (dst / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            (dst / p.relative_to(src)).symlink_to(p)
    data = (src / "u.data").read_text().splitlines()
    (dst / "u.data").write_text("\n".join(flipped(x) for x in data) + "\n")
    (dst / "u1.test").write_text("\n".join(flipped(x) for x in test_lines) + "\n")
    return dst


def _tensors(state, path: str = "") -> dict[str, object]:
    """Every leaf of a (nested) checkpoint state, by its path (packed party states unpacked)."""
    out: dict[str, object] = {}
    if isinstance(state, dict) and state.get("format") == PACKED:
        state = unpack_states(state)
    if isinstance(state, dict):
        for key, sub in state.items():
            out.update(_tensors(sub, f"{path}/{key}"))
    elif isinstance(state, list | tuple):
        for n, sub in enumerate(state):
            out.update(_tensors(sub, f"{path}/{n}"))
    else:
        out[path] = state
    return out


def _same_leaf(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("alg", list(BLIND))
def test_changing_the_test_rows_changes_only_the_test_metrics(
    alg: str, data_root: Path, tmp_path: Path, one_thread_module
) -> None:
    if not (data_root / "ml-100k/u1.test").is_file():
        pytest.skip("staged ml-100k with its u1 split not available")
    other = _with_other_test_ratings(data_root / "ml-100k", tmp_path / "data" / "ml-100k")
    runs = {}
    for name, root in (("staged", data_root), ("flipped", other.parent)):
        out = tmp_path / name
        runs[name] = (run_experiment(alg, "ml-100k", data_dir=root, overrides=dict(BLIND[alg]),
                                     out_dir=out, options=RunOptions(
                                         progress=False, client_secret=bytes(range(32)).hex())),
                      load_checkpoint(out / CHECKPOINT_NAME))
    (a, ckpt_a), (b, ckpt_b) = runs["staged"], runs["flipped"]
    assert ckpt_a["made_from"]["data_sha256"] != ckpt_b["made_from"]["data_sha256"]
    # Training never read a test row: every training statistic, every byte on the wire ...
    assert [r["train"] for r in _strip_times(a.history)] == [
        r["train"] for r in _strip_times(b.history)]
    assert a.communication["by_step"] == b.communication["by_step"]
    # ... and every tensor of the server's and the parties' states, bit for bit.
    leaves_a, leaves_b = _tensors(ckpt_a["trainer"]), _tensors(ckpt_b["trainer"])
    assert leaves_a.keys() == leaves_b.keys()
    assert any(isinstance(v, torch.Tensor) for v in leaves_a.values())
    differ = [k for k in leaves_a if not _same_leaf(leaves_a[k], leaves_b[k])]
    assert differ == []
    # Selection read validation only: the same metrics and the same round ...
    for ra, rb in zip(a.history, b.history, strict=True):
        val_a = {k: v for k, v in ra["eval"].items() if k.startswith("val_")}
        assert val_a and val_a == {k: v for k, v in rb["eval"].items() if k.startswith("val_")}
    assert a.selection["select_on"] == "val_rmse"
    assert a.selection["round"] == b.selection["round"]
    data = json.loads((tmp_path / "staged" / RESULTS_NAME).read_text())
    assert data["selection"]["round"] == a.selection["round"]
    chosen = a.history[a.selection["round"] - 1]["eval"]
    assert data["selection"]["test"] == {k: v for k, v in chosen.items()
                                         if not k.startswith("val_")}
    assert data["selection"]["val_rmse"] == min(r["eval"]["val_rmse"] for r in a.history)
    # ... while the test metrics, computed on other ratings, do change.
    for ra, rb in zip(a.history, b.history, strict=True):
        assert ra["eval"]["rmse"] != rb["eval"]["rmse"]
    assert a.selection["test"]["rmse"] != b.selection["test"]["rmse"]


def test_peak_memory_is_each_runs_own() -> None:
    """Runs made one after another in one process (a reproduction) report their own peak."""
    from fedrec.rounds import peak_rss_mib, reset_peak_rss

    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no resettable peak memory (not Linux)")
    reset_peak_rss()
    big = np.ones(400 * 2**20 // 8)  # 400 MiB, touched
    high = peak_rss_mib()
    del big
    reset_peak_rss()
    assert peak_rss_mib() < high - 300


# -- issue 41: results.json says what the run ran; a finished --out is not run over ----------

def test_results_record_the_data_read_the_preset_and_the_reported_round(
        data_root: Path, tmp_path: Path) -> None:
    _need(data_root, "ml-100k/u.data", "ml-100k/u2.test")
    out = tmp_path / "run"
    result = _pmf(data_root, out, dataset_options={"split": "u2"},
                  overrides={"eval_every": 1})
    data = json.loads((out / RESULTS_NAME).read_text())
    record = data["data"]
    assert record == result.data and data["preset"] is None
    assert record["given"] == "ml-100k" and record["split"]["options"] == {"split": "u2"}
    assert record["split"]["name"].startswith("GroupLens u2")
    assert "ml-100k/u2.test" in [f["path"] for f in record["files"]]
    assert record["counts"]["test_rows"] == 20000
    rep = data["reported_round"]
    assert rep["round"] == data["selection"]["round"] and rep["select_on"] == "val_rmse"
    assert rep["test"] == data["selection"]["test"]
    assert rep["last_round"] == {"round": 2, "test": {
        k: v for k, v in data["final"].items() if not k.startswith("val_")}}


def test_only_a_finished_result_is_protected(data_root: Path, tmp_path: Path) -> None:
    """A results file that is not a finished run's (unreadable, or another status) is not
    refused: a run may write over it; a resume into a finished run continues it."""
    _need(data_root, "ml-100k/u.data")
    out = tmp_path / "run"
    out.mkdir()
    (out / RESULTS_NAME).write_text("{not json")
    assert _pmf(data_root, out).status == "complete"
    assert json.loads((out / RESULTS_NAME).read_text())["status"] == "complete"
    assert _pmf(data_root, out, resume=True).status == "complete"
    files = sorted(p.name for p in out.iterdir())
    with pytest.raises(ConfigError, match="--overwrite to replace it or --resume to continue"):
        _pmf(tmp_path / "no-such-data-root", out)  # refused before the data is looked for
    assert sorted(p.name for p in out.iterdir()) == files
