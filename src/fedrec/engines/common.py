"""What every engine shares: the in-process simulation, a user slice of a dataset, public metadata.

* :func:`simulate` runs a job in fedrec's in-process simulator through the round loop of
  :func:`fedrec.experiment.run_experiment` (:func:`fedrec.rounds.run_rounds`, which the
  Flower ServerApp drives too), after the same checks, so the simulator and a deployment
  produce the same :class:`~fedrec.rounds.RunResult`;
* :func:`slice_users` keeps the first ``n`` users of a rating/interaction dataset (real data,
  fewer clients: what the engine tests and the benchmark run on);
* :func:`public_meta` / :func:`metadata_dataset`: a server process never loads the data. It
  builds its :class:`~fedrec.algorithms.base.ServerLogic` with the algorithm's own ``build_job``
  on a *metadata dataset*, which the dataset's type provides (:mod:`fedrec.data.types`: the
  public facts, e.g. catalogue size and rating scale, or a graph's node, feature and class
  counts; for recommendation data one placeholder row per registered client, so that
  ``partition_by_user`` yields the client ids and nothing else). The placeholders are never sent
  anywhere; an algorithm whose server logic read statistics from the dataset would give
  different results on the deployment than in the simulator, which the engine tests would show;
* :func:`probe_job`: an algorithm's job on a tiny metadata dataset, to learn which service roles
  it declares (how many SuperNodes a deployment starts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from fedrec.algorithms import AlgorithmSpec, get_algorithm, resolve_config
from fedrec.algorithms.base import FederatedJob
from fedrec.config import RunConfig, to_dict
from fedrec.data import InteractionDataset, RatingDataset, dataset_type, load_dataset
from fedrec.data import metadata_dataset as data_metadata_dataset
from fedrec.data import public_meta as data_public_meta
from fedrec.data.side_info import UserInfo
from fedrec.data.types import FACTS, PROBE, Dataset
from fedrec.errors import ConfigError
from fedrec.experiment import check_before_loading, check_loaded, describe_run
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import seed_everything
from fedrec.options import RunOptions
from fedrec.rounds import RunResult, run_rounds


def resolve(
    algorithm: str,
    dataset: str,
    config_file: str | Path | None = None,
    overrides: Sequence[str] | dict[str, Any] = (),
    preset: str | None = None,
) -> tuple[AlgorithmSpec, RunConfig]:
    """The algorithm's registry entry and its resolved configuration (as ``fedrec run``)."""
    return get_algorithm(algorithm), resolve_config(algorithm, dataset, config_file, overrides,
                                                    preset)


def slice_users(ds: Dataset, n: int | None) -> Dataset:
    """``ds`` restricted to users ``0..n-1`` (train, validation and test rows, user features,
    their demographics where the loader keeps them); items keep their ids and the catalogue its
    size. ``None`` or ``n >= num_users``: ``ds`` itself."""
    if n is None or n <= 0:
        return ds
    if not isinstance(ds, RatingDataset | InteractionDataset):
        raise ConfigError("max_users applies to rating and interaction datasets only")
    if n >= ds.num_users:
        return ds
    feats = ds.user_features[:n] if ds.user_features is not None else None
    graph = ds.user_graph[:n, :n] if ds.user_graph is not None else None
    meta = dict(ds.meta)
    if isinstance(meta.get("user_info"), UserInfo):
        meta["user_info"] = meta["user_info"].first(n)
    return dataclasses.replace(
        ds, name=f"{ds.name}-first{n}", num_users=n,
        train=ds.train.select(ds.train.users < n), test=ds.test.select(ds.test.users < n),
        valid=ds.valid.select(ds.valid.users < n),
        user_features=feats, user_graph=graph, meta=meta,
    )


def sliced_options(max_users: int | None) -> dict[str, Any]:
    """The data options a run's record names for a slice (:func:`slice_users`): ``max_users``
    where one is taken, else none."""
    return {"max_users": max_users} if max_users else {}


def load_sliced(dataset: str, data_dir: str | Path | None, max_users: int | None) -> Dataset:
    return slice_users(load_dataset(dataset, data_dir, download=False), max_users)


def public_meta(ds: Dataset) -> dict[str, Any]:
    """The public facts about a dataset that a server may know (its type's
    :meth:`~fedrec.data.types.GraphDataset.public_meta`; no rating, label or statistic)."""
    return data_public_meta(ds)


def node_meta(ds: Dataset, job: FederatedJob) -> dict[str, Any]:
    """What a client's node reports of its data: the dataset's public metadata and, if the job
    has any, its public facts (:attr:`~fedrec.algorithms.base.FederatedJob.public_facts`)
    under ``"facts"``."""
    meta = public_meta(ds)
    return {**meta, FACTS: dict(job.public_facts)} if job.public_facts else meta


def metadata_dataset(meta: dict[str, Any], client_ids: Sequence[PartyId] = ()) -> Dataset:
    """A dataset holding only ``meta`` (:func:`fedrec.data.metadata_dataset`; a
    :func:`node_meta`'s facts go into the dataset's ``meta``): what a server or a service party
    builds its logic from."""
    facts = meta.get(FACTS)
    ds = data_metadata_dataset({k: v for k, v in meta.items() if k != FACTS}, client_ids)
    if facts is None:
        return ds
    return dataclasses.replace(ds, meta={**ds.meta, FACTS: dict(facts)})


def probe_job(spec: AlgorithmSpec, cfg: RunConfig) -> FederatedJob:
    """``spec``'s job on a tiny metadata-only dataset of its first kind: what parties and roles
    the algorithm declares, without any data (marked as the probe:
    :func:`fedrec.data.types.public_facts`)."""
    if not spec.federated:
        raise ConfigError(f"{spec.name} is not a federated algorithm (nothing to deploy)")
    probe_type = dataset_type(spec.dataset_kinds[0])
    tiny = data_metadata_dataset(probe_type.probe_meta(), [0, 1])
    tiny = dataclasses.replace(tiny, meta={**tiny.meta, PROBE: True})
    return spec.build_job(cfg, tiny, torch.device("cpu"))


def service_roles(spec: AlgorithmSpec, cfg: RunConfig) -> list[str]:
    """The extra parties' roles (third party, aggregator, ...) an algorithm's job declares."""
    return probe_job(spec, cfg).service_roles


def simulate(
    algorithm: str,
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: Sequence[str] | dict[str, Any] = (),
    options: RunOptions | None = None,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    preset: str | None = None,
) -> RunResult:
    """The same job in fedrec's in-process simulator: what a deployment is compared with.

    ``options``: the deployment's own (``fedrec deploy --compare`` passes them) or any
    :class:`~fedrec.options.RunOptions`; read here: ``max_users`` (the same slice of the data
    as the deployment's nodes load), ``client_secret`` (give the deployment's to compare them
    draw for draw), ``device``, ``progress``; Flower's own options do not apply, and
    ``fedrec run``'s checkpoint and log options are refused (no output directory here). The
    checks are ``fedrec run``'s (:func:`fedrec.experiment.check_loaded`: the data's kind,
    ``clients_per_round`` against its clients), made on the sliced data."""
    opts = options or RunOptions()
    opts.refuse(["resume", "checkpoint_every", "stop_after", "log_dir"],
                "simulate (no output directory: use fedrec run)")
    spec, cfg = resolve(algorithm, dataset, config_file, overrides, preset)
    if not spec.federated:
        raise ConfigError(f"{algorithm} is not a federated algorithm")
    dev = opts.torch_device()
    check_before_loading(spec, dataset)
    ds = load_sliced(dataset, data_dir, opts.max_users)
    check_loaded(spec, cfg, dataset, ds)
    seed_everything(cfg.seed)
    trainer = spec.trainer(cfg, ds, dev, opts.client_secret)
    record = describe_run(ds, dataset, sliced_options(opts.max_users), preset)
    return run_rounds(trainer, cfg, RunResult(algorithm, dataset, to_dict(cfg), **record),
                      progress=f"{algorithm}/{dataset} (simulator)" if opts.progress else None,
                      on_round=on_round)
