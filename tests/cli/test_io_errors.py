"""Issue 42 item 5: what used to end in a traceback is one line, ``fedrec: error: ...``, and
exit status 2 -- a full disk while writing a checkpoint, results.json or the TensorBoard log;
ids beyond int64; CSV fields over the csv module's limit, an unterminated quote, an unknown
encoding; unreadable results among many; an --out that is a file or empty. In process (main),
on a file of 5 users written here, so that a write can be made to fail."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.cli.main import main
from fedrec.errors import FedrecError
from fedrec.federation import checkpoint as checkpoint_module
from fedrec.federation.checkpoint import load_checkpoint, save_checkpoint

RATINGS = "user,item,rating\n" + "".join(
    f"{u},{i},{(u * i) % 5 + 1}\n" for u in range(1, 6) for i in range(1, 6))
RUN = ("--set", "rounds=2", "--set", "dim=4", "--threads", "1", "--quiet")


def one_error(capsys, rc: int, *fragments: str) -> str:
    """rc 2 and exactly one ``fedrec: error:`` line, the last one on stderr."""
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert "Traceback" not in captured.err + captured.out
    assert err and err[-1].startswith("fedrec: error: "), err
    assert sum(ln.startswith("fedrec: error:") for ln in err) == 1
    for fragment in fragments:
        assert fragment in err[-1], (fragment, err[-1])
    return err[-1]


def enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def ratings(tmp_path: Path) -> Path:
    path = tmp_path / "r.csv"
    path.write_text(RATINGS)
    return path


# --- a full disk ---------------------------------------------------------------------------

def test_a_full_disk_while_saving_a_checkpoint_keeps_the_previous_one(tmp_path: Path,
                                                                      monkeypatch) -> None:
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"round": 1})
    monkeypatch.setattr(checkpoint_module.torch, "save", enospc)
    with pytest.raises(FedrecError, match=r"could not write the checkpoint .*No space left"
                       r".*previous checkpoint is intact"):
        save_checkpoint(path, {"round": 2})
    monkeypatch.undo()
    assert load_checkpoint(path) == {"round": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # no temporary left


def test_a_full_disk_during_a_run_s_checkpoint_is_one_line(ratings: Path, tmp_path: Path,
                                                           monkeypatch, capsys) -> None:
    real_save, calls = torch.save, []

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            enospc()
        return real_save(*args, **kwargs)

    monkeypatch.setattr(checkpoint_module.torch, "save", second_fails)
    out = tmp_path / "out"
    rc = main(["run", "pmf", "--dataset", str(ratings), "--out", str(out), *RUN])
    one_error(capsys, rc, "could not write the checkpoint", "No space left on device",
              "previous checkpoint is intact")
    assert load_checkpoint(out / "checkpoint.pt")["round"] == 1
    assert not (out / "results.json").exists()


def test_a_full_disk_while_writing_results_json_is_one_line(ratings: Path, tmp_path: Path,
                                                            monkeypatch, capsys) -> None:
    real = Path.write_text

    def full(self: Path, *args, **kwargs):
        if self.name.startswith("results.json"):
            enospc()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "out"
    rc = main(["run", "pmf", "--dataset", str(ratings), "--out", str(out), *RUN])
    one_error(capsys, rc, "could not write the run's results", "results.json",
              "No space left on device", "--resume")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt"]
    # Space freed: --resume writes them from the finished run's checkpoint.
    monkeypatch.undo()
    assert main(["run", "pmf", "--dataset", str(ratings), "--out", str(out), "--resume",
                 *RUN]) == 0
    assert json.loads((out / "results.json").read_text())["status"] == "complete"


def test_a_full_disk_while_writing_the_tensorboard_log_is_one_line(ratings: Path,
                                                                   tmp_path: Path, monkeypatch,
                                                                   capsys) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.summary.writer import record_writer

    monkeypatch.setattr(record_writer.RecordWriter, "write", enospc)
    rc = main(["run", "pmf", "--dataset", str(ratings), "--log-dir", str(tmp_path / "tb"), *RUN])
    one_error(capsys, rc, "could not write the TensorBoard log", str(tmp_path / "tb"),
              "No space left on device")
    assert threading.excepthook is threading.__excepthook__ or "TensorBoardLog" not in repr(
        threading.excepthook)  # put back


# --- ids beyond int64 ------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "info"])
def test_a_user_id_beyond_int64_is_one_line(tmp_path: Path, capsys, command: str) -> None:
    path = tmp_path / "big.csv"
    path.write_text(RATINGS + "99999999999999999999,1,3\n")
    argv = (["run", "pmf", "--dataset", str(path), *RUN] if command == "run"
            else ["datasets", "info", str(path)])
    one_error(capsys, main(argv), str(path), "user id 99999999999999999999",
              "64-bit integer")


@pytest.mark.parametrize("command", ["run", "info"])
def test_a_graph_edge_beyond_int64_is_one_line(tmp_path: Path, capsys, command: str) -> None:
    graph = tmp_path / "graph"
    graph.mkdir()
    np.save(graph / "features.npy", np.eye(4, dtype=np.float32))
    (graph / "edges.csv").write_text("0,1\n1,2\n2,99999999999999999999\n")
    (graph / "labels.csv").write_text("0\n1\n0\n1\n")
    argv = (["run", "fedgnn", "--dataset", str(graph), *RUN] if command == "run"
            else ["datasets", "info", str(graph)])
    one_error(capsys, main(argv), "edges.csv line 3", "99999999999999999999", "is not a node")


def test_a_graph_label_beyond_int64_is_one_line(tmp_path: Path, capsys) -> None:
    graph = tmp_path / "graph"
    graph.mkdir()
    np.save(graph / "features.npy", np.eye(4, dtype=np.float32))
    (graph / "edges.csv").write_text("0,1\n1,2\n2,3\n")
    (graph / "labels.csv").write_text("0\n1\n99999999999999999999\n1\n")
    one_error(capsys, main(["datasets", "info", str(graph)]), "labels.csv line 3",
              "label 99999999999999999999 is too large")


# --- CSV ---------------------------------------------------------------------------------------

def test_a_field_over_the_csv_limit_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "field.csv"
    path.write_text(RATINGS + '1,"' + "x" * 140_000 + '",3\n')
    one_error(capsys, main(["datasets", "info", str(path)]), f"{path} line 27",
              "longer than 131,072 characters")


def test_an_unterminated_quote_is_one_line_naming_where_it_opens(tmp_path: Path,
                                                                 capsys) -> None:
    path = tmp_path / "quote.csv"
    path.write_text(RATINGS + '1,"abc,3\n2,3,4\n')
    one_error(capsys, main(["datasets", "info", str(path)]), f"{path} line 27",
              "quoted field is never closed")


def test_text_after_a_closing_quote_is_still_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "lenient.csv"
    path.write_text(RATINGS + '1,"a"b,3\n')
    assert main(["datasets", "info", str(path)]) == 0


@pytest.mark.parametrize("encoding", ["nope", "rot13"])
@pytest.mark.parametrize("command", ["run", "info"])
def test_an_unknown_encoding_is_one_line(ratings: Path, capsys, command: str,
                                         encoding: str) -> None:
    opt = ["--data-opt", f"encoding={encoding}"]
    argv = (["run", "pmf", "--dataset", str(ratings), *opt, *RUN] if command == "run"
            else ["datasets", "info", str(ratings), *opt])
    one_error(capsys, main(argv), f"encoding={encoding!r}", "not a text encoding")


# --- fedrec results ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def a_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    data = root / "r.csv"
    data.write_text(RATINGS)
    assert main(["run", "pmf", "--dataset", str(data), "--out", str(root / "good"), *RUN]) == 0
    return root / "good" / "results.json"


WRONG = {
    "final": "x",
    "config": [1, 2],
    "history": "abc",
    "communication": {"totals": {"bytes_up": "many"}},
    "wall_time_s": "long",
    "selection": 5,
}


@pytest.mark.parametrize("field", list(WRONG))
def test_results_leave_out_a_wrong_typed_file_and_show_the_rest(a_run: Path, tmp_path: Path,
                                                                capsys, field: str) -> None:
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({**json.loads(a_run.read_text()), field: WRONG[field]}))
    assert main(["results", str(a_run.parent), str(bad.parent)]) == 0
    captured = capsys.readouterr()
    # Its row, named by its folder under the one the table's title names; not the bad one's.
    assert f"\n{a_run.parent.name} " in captured.out and str(bad.parent) not in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fedrec: warning: left out ")
    assert str(bad) in err[0]
    # Alone: nothing to show, one line naming it.
    one_error(capsys, main(["results", str(bad.parent)]), "no completed run", str(bad))


def test_results_leave_out_an_unreadable_file_among_many(a_run: Path, tmp_path: Path,
                                                         capsys) -> None:
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    bad.write_text('{"status": "complete", ')
    assert main(["results", str(a_run.parent), str(bad.parent)]) == 0
    captured = capsys.readouterr()
    assert f"\n{a_run.parent.name} " in captured.out
    assert f"left out {bad}: not a readable results file" in captured.err


def test_results_plot_into_a_path_that_cannot_be_made_is_one_line(a_run: Path,
                                                                  capsys) -> None:
    rc = main(["results", str(a_run.parent), "--plot", "/proc/x/y.png"])
    one_error(capsys, rc, "--plot /proc/x/y.png", "cannot be written")


# --- --out -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["reproduce", "fedgnn", "--quick"],
    ["deploy", "fedavg-ncf", "--dataset", "ml-100k"],
    ["run", "pmf", "--dataset", "DATA", "--quiet"],
])
@pytest.mark.parametrize("where", ["file", "below-a-file"])
def test_an_out_that_is_a_file_is_one_line(ratings: Path, tmp_path: Path, capsys,
                                           argv: list[str], where: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = afile if where == "file" else afile / "sub"
    argv = [str(ratings) if a == "DATA" else a for a in argv]
    one_error(capsys, main([*argv, "--out", str(out)]), f"output directory {out} (--out)",
              "is a file")
    assert afile.read_text() == "x"


@pytest.mark.parametrize("argv", [
    ["run", "pmf", "--dataset", "DATA", *RUN],
    ["reproduce", "fedgnn", "--quick"],
    ["deploy", "fedavg-ncf", "--dataset", "ml-100k"],
])
def test_an_empty_out_is_refused_not_the_current_directory(ratings: Path, tmp_path: Path,
                                                           monkeypatch, capsys,
                                                           argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [str(ratings) if a == "DATA" else a for a in argv]
    one_error(capsys, main([*argv, "--out", ""]), "--out is empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_the_api_refuses_an_empty_out_dir(ratings: Path, tmp_path: Path, monkeypatch) -> None:
    from fedrec.errors import ConfigError
    from fedrec.experiment import run_experiment

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="out_dir is empty"):
        run_experiment("pmf", str(ratings), overrides={"rounds": 1}, out_dir="")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]
