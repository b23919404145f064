"""Every script in examples/ runs, on small files written here and tiny settings (the scripts'
defaults are ML-100K; these checks are about the API calls, not the figures)."""

from __future__ import annotations

import math
import random
import runpy
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    return runpy.run_path(str(EXAMPLES / name))["main"]


def write_file(path: Path, ratings: bool) -> Path:
    rng = random.Random(1)
    header = "user,item,rating" if ratings else "user,item"
    rows = [f"u{u},m{i}" + (f",{rng.randint(1, 5)}" if ratings else "")
            for u in range(20) for i in rng.sample(range(30), 12)]
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_rating_prediction_fedgnn(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_file(tmp_path / "ratings.csv", ratings=True)
    final = example("rating_prediction_fedgnn.py")(
        ["--dataset", str(data), "--rounds", "1", "--clients-per-round", "8",
         "--pseudo-items", "10", "--neighbours", "5"])
    out = capsys.readouterr().out
    assert "ratings.csv: 20 users, 30 items" in out and "round 1: test RMSE" in out
    assert math.isfinite(final["rmse"]) and f"final test RMSE {final['rmse']:.4f}" in out


def test_ranking_ptf_fedrec(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_file(tmp_path / "clicks.csv", ratings=False)
    final = example("ranking_ptf_fedrec.py")(
        ["--dataset", str(data), "--rounds", "1", "--local-epochs", "1"])
    out = capsys.readouterr().out
    assert 0.0 <= final["Recall@20"] <= 1.0 and f"Recall@20 {final['Recall@20']:.4f}" in out
    assert "train (client->server):" in out and "top-guess attack F1" in out


def write_graph(root: Path) -> Path:
    """A small graph folder: two communities of 30 nodes, features that hint at the class."""
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1], 30)
    root.mkdir()
    np.save(root / "features.npy", rng.normal(labels[:, None], 1.0, (60, 8)))
    edges = [(u, v) for u in range(60) for v in rng.choice(60, 3)
             if labels[u] == labels[v] or rng.random() < 0.2]
    (root / "edges.csv").write_text("".join(f"{u},{v}\n" for u, v in edges))
    (root / "labels.csv").write_text("".join(f"{c}\n" for c in labels))
    return root


def test_node_classification_feras(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_graph(tmp_path / "two-communities")
    final = example("node_classification_feras.py")(
        ["--dataset", str(data), "--rounds", "1", "--iterations", "2", "--roots", "10",
         "--presample", "5"])
    out = capsys.readouterr().out
    assert "two-communities: 60 nodes" in out and "round 1: val accuracy" in out
    assert 0.0 <= final["accuracy"] <= 1.0
    assert f"final test accuracy {final['accuracy']:.4f}" in out and "aggregator: sent" in out
