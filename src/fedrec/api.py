"""fedrec from Python: the same steps as the command line, with the same functions under them.

::

    import fedrec

    ds = fedrec.load_dataset("ml-100k")                      # or a file: "my.csv", options
    cfg = fedrec.make_config("fedgnn", "ml-100k", rounds=2)  # defaults, per-dataset, yours
    result = fedrec.run("fedgnn", "ml-100k", config=cfg, client_secret="00" * 32)
    result.final["rmse"], result.communication["totals"], result.privacy
    fedrec.run("fcf", "ml-100k", config={"rounds": 2}, engine="flower", max_users=50)
    fedrec.read_results("runs/x")                            # a finished run's results.json
    print(fedrec.compare(["runs"]))                          # what ``fedrec results`` prints

* :func:`load_dataset`: a catalogue name or a user's file (:mod:`fedrec.data.user_files`);
* :func:`make_config`: the resolved configuration ``fedrec run`` would use (a dataclass of the
  algorithm's own options; :func:`fedrec.config.to_dict` gives its fields);
* :func:`run`: one run on the in-process simulator (``engine="simulator"``, what ``fedrec run``
  calls, with checkpoints and ``resume`` when ``out`` is given) or on a local Flower deployment
  (``engine="flower"``, what ``fedrec deploy`` calls); a :class:`~fedrec.rounds.RunResult`
  either way. How it runs is a :class:`~fedrec.options.RunOptions` (``fedrec.RunOptions``):
  given whole (``options=``) or as keywords, with the same defaults and checks as the CLI's;
  torch's threads are set for the call as ``fedrec run`` sets them (``threads=``, default
  half the cores);
* :func:`read_results`, :func:`compare`, :func:`plot_curves`: a finished run's results, and
  the comparison of ``fedrec results``.

The ledger of a run is in its result: ``result.communication`` (``totals``, ``by_step``,
``by_role``: the exact encoded bytes of every message, and ``rejected`` replies) and each round's
totals in ``result.history[k]["communication"]``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from fedrec.algorithms import resolve_config
from fedrec.config import RunConfig, to_dict
from fedrec.core.threads import check_threads, set_threads
from fedrec.data import load_dataset
from fedrec.errors import ConfigError
from fedrec.experiment import RESULTS_NAME, run_experiment
from fedrec.options import RunOptions
from fedrec.reproduce import compare as _compare
from fedrec.reproduce import compare_plot as _compare_plot
from fedrec.rounds import RunResult

__all__ = ["RunOptions", "RunResult", "compare", "load_dataset", "make_config", "plot_curves",
           "read_results", "result_from_json", "run"]


def make_config(algorithm: str, dataset: str | os.PathLike[str] | None = None,
           config_file: str | Path | None = None, preset: str | None = None,
           **options: Any) -> RunConfig:
    """The configuration of ``algorithm`` on ``dataset``: its defaults, the packaged
    per-dataset settings, ``preset`` (``"paper"``: the paper's settings), ``config_file``
    (YAML) and ``options`` (as ``--set`` gives them), in that order; an unknown option or
    preset, or a bad value, is a :class:`ConfigError`."""
    name = os.fspath(dataset) if dataset is not None else None
    return resolve_config(algorithm, name, config_file, options, preset)


def _overrides(cfg: RunConfig | dict[str, Any] | None) -> dict[str, Any]:
    if cfg is None:
        return {}
    if isinstance(cfg, dict):
        return dict(cfg)
    return to_dict(cfg)


def run(
    algorithm: str,
    dataset: str | os.PathLike[str],
    *,
    config: RunConfig | dict[str, Any] | None = None,
    config_file: str | Path | None = None,
    preset: str | None = None,
    dataset_options: dict[str, Any] | None = None,
    data_dir: str | Path | None = None,
    out: str | Path | None = None,
    options: RunOptions | None = None,
    threads: int | None = None,
    **run_options: Any,
) -> RunResult:
    """Train ``algorithm`` on ``dataset`` (a catalogue name or a file) and return its result.

    ``config``: a :func:`make_config` result or a dict of options (over the defaults,
    ``preset`` and ``config_file``; pass ``preset`` here too, so that the run records it).
    ``out``: the run's folder (``results.json``; on the simulator also the checkpoint a later
    ``resume=True`` continues from).

    How the run executes: ``options``, a :class:`~fedrec.options.RunOptions`, and/or its
    fields as keywords (over ``options``), each with its one default and check there:
    ``engine`` (``"simulator"``: :func:`fedrec.experiment.run_experiment`; ``"flower"``:
    :func:`fedrec.engines.flower.deploy.deploy`, needs ``pip install 'fedrec[flower]'``),
    ``client_secret`` (64 hex digits, the root of every client's private randomness; None:
    fresh OS entropy, the run is then not reproducible), ``progress``; the simulator's
    ``device``, ``resume``, ``checkpoint_every``, ``log_dir`` (a TensorBoard log, needs
    ``pip install 'fedrec[tensorboard]'``); Flower's ``nodes``, ``max_users``, ``timeout``,
    ``call_timeout``, ``straggler_timeout``, ... An unknown name, a value out of range or an
    option of the other engine is a :class:`ConfigError`.

    ``threads``: torch's threads (``torch.set_num_threads``) while the call runs, as
    ``fedrec run --threads`` sets them (:func:`fedrec.core.threads.set_threads`, the one rule
    both use); None: half the cores, at least one, on the simulator (``fedrec run``'s default),
    one on Flower (``fedrec deploy``'s: the work is in the deployment's processes). The count
    torch had before is restored when the call returns. Below 1 is a :class:`ConfigError`.
    """
    check_threads(threads)
    opts = RunOptions.of(options, **run_options)
    overrides = _overrides(config)
    if opts.engine == "flower" and dataset_options:
        raise ConfigError("engine='flower' takes no dataset_options (its nodes load the "
                          "catalogue dataset as it is)")
    before = torch.get_num_threads()
    try:
        set_threads(threads if threads is not None or opts.engine == "simulator" else 1)
        if opts.engine == "simulator":
            return run_experiment(algorithm, dataset, data_dir=data_dir,
                                  config_file=config_file, overrides=overrides, out_dir=out,
                                  dataset_options=dataset_options, options=opts,
                                  preset=preset)
        from fedrec.engines.flower.deploy import deploy

        result = deploy(algorithm, os.fspath(dataset), data_dir=data_dir,
                        config_file=config_file, overrides=overrides, out_dir=out, options=opts,
                        preset=preset)
        return result_from_json(result)
    finally:
        torch.set_num_threads(before)


def result_from_json(data: dict[str, Any]) -> RunResult:
    """A :class:`RunResult` of a ``results.json``'s contents (entries it does not hold, such as
    a deployment's ``engine`` section, are left out)."""
    keys = ("algorithm", "dataset", "config", "history", "final", "selection", "dataset_options",
            "communication", "privacy", "wall_time_s", "peak_rss_mib", "status", "config_sources",
            "data", "preset")
    return RunResult(**{k: data[k] for k in keys if k in data})


def read_results(path: str | Path) -> RunResult:
    """The result of a finished run: ``path`` is its ``--out`` folder or its results.json."""
    p = Path(path)
    file = p / RESULTS_NAME if p.is_dir() else p
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: not a readable results file ({exc})") from None
    if data.get("status") != "complete":
        raise ConfigError(f"{file}: the run is not complete")
    return result_from_json(data)


def compare(dirs: Sequence[str | Path], markdown: bool = False,
            metrics: Sequence[str] | None = None) -> str:
    """The table ``fedrec results DIR...`` prints: every completed run under ``dirs`` (folders
    or results.json files); ``metrics``: its metric columns (default: every test metric)."""
    return _compare.render(_compare.find_runs(dirs), markdown=markdown, metrics=metrics)


def plot_curves(dirs: Sequence[str | Path], png: str | Path) -> list[str]:
    """``fedrec results DIR... --plot PNG``: a panel per dataset and test metric over the rounds,
    a line per run (:mod:`fedrec.reproduce.compare_plot`); returns the metrics drawn."""
    return _compare_plot.plot_curves(_compare.find_runs(dirs), Path(png))
