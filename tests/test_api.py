"""The Python API at the top of the package (fedrec.api): the calls the CLI makes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import fedrec
import fedrec.api
from fedrec.cli.main import main
from fedrec.core.threads import default_threads
from fedrec.errors import ConfigError

SECRET = "ab" * 32


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api") / "ratings.csv"
    path.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{(u * 3 + i) % 5 + 1}\n" for u in range(6) for i in range(8)))
    return path


def test_make_config_layers_options_over_the_defaults() -> None:
    cfg = fedrec.make_config("pmf", "gowalla", rounds=3)
    assert (cfg.rounds, cfg.dim) == (3, 64)  # yours, then the packaged gowalla section
    with pytest.raises(ConfigError, match="colour"):
        fedrec.make_config("pmf", colour=1)


def test_run_read_results_and_the_ledger(ratings: Path, tmp_path: Path) -> None:
    cfg = fedrec.make_config("fcf", ratings, rounds=2, dim=4)
    result = fedrec.run("fcf", ratings, config=cfg, out=tmp_path, client_secret=SECRET)
    again = fedrec.run("fcf", ratings, config={"rounds": 2, "dim": 4}, client_secret=SECRET)
    assert result.final == again.final and result.status == "complete"
    stored = fedrec.read_results(tmp_path)
    assert stored.final == result.final and stored.config == result.config
    ledger = result.communication
    assert ledger["totals"]["bytes_total"] > 0
    assert ledger["totals"]["bytes_total"] == sum(h["communication"]["bytes_total"]
                                                  for h in result.history)
    assert "fcf" in fedrec.compare([tmp_path])


def test_engine_and_option_mistakes_are_config_errors(ratings: Path) -> None:
    with pytest.raises(ConfigError, match="engine must be one of simulator, flower"):
        fedrec.run("pmf", ratings, engine="ray")
    with pytest.raises(ConfigError, match="nodes: options of engine='flower' only"):
        fedrec.run("pmf", ratings, nodes=3)
    with pytest.raises(ConfigError, match="not a readable results file"):
        fedrec.read_results(ratings.parent / "nowhere")


@pytest.fixture
def threads_seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Torch's thread count inside every run_experiment call that fedrec.run makes."""
    seen: list[int] = []
    real = fedrec.api.run_experiment

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(fedrec.api, "run_experiment", spy)
    before = torch.get_num_threads()
    yield seen
    torch.set_num_threads(before)


def test_run_sets_torch_threads_as_the_cli_does(ratings: Path, tmp_path: Path,
                                                threads_seen: list[int]) -> None:
    """fedrec.run left torch at its own default (every core); it now sets what ``fedrec run``
    sets (half the cores, or ``threads``) for the call, and restores the count it found."""
    other = default_threads() + 1  # not what either sets by default
    torch.set_num_threads(other)
    tiny = {"rounds": 1, "dim": 4}
    fedrec.run("pmf", ratings, config=tiny, client_secret=SECRET, progress=False)
    assert torch.get_num_threads() == other  # restored
    fedrec.run("pmf", ratings, config=tiny, client_secret=SECRET, progress=False, threads=3)
    assert main(["run", "pmf", "--dataset", str(ratings), "--set", "rounds=1", "--set", "dim=4",
                 "--client-secret", SECRET, "--quiet", "--out", str(tmp_path / "a")]) == 0
    assert main(["run", "pmf", "--dataset", str(ratings), "--set", "rounds=1", "--set", "dim=4",
                 "--client-secret", SECRET, "--quiet", "--threads", "3",
                 "--out", str(tmp_path / "b")]) == 0
    # The API's default is the CLI's default, and threads=3 is --threads 3.
    assert threads_seen == [default_threads(), 3, default_threads(), 3]
    with pytest.raises(ConfigError, match="threads must be >= 1, got 0"):
        fedrec.run("pmf", ratings, threads=0)
