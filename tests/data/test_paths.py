"""Data directory resolution: argument, then $FEDREC_DATA, then the user cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedrec.data.paths import ENV_VAR, dataset_dir, default_data_dir, resolve_data_dir


def test_explicit_argument_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/elsewhere")
    assert resolve_data_dir(tmp_path) == tmp_path.resolve()
    assert dataset_dir("planetoid", tmp_path) == tmp_path.resolve() / "planetoid"


def test_env_var_then_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert resolve_data_dir() == tmp_path.resolve()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_VAR, "rel/data")
    assert resolve_data_dir() == tmp_path.resolve() / "rel/data"
    monkeypatch.delenv(ENV_VAR)
    assert resolve_data_dir() == default_data_dir().resolve()
    assert default_data_dir().parts[-2:] == ("fedrec", "datasets")
