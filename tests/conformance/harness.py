"""What the conformance checks share: the registry's federated methods, each one's contract,
configuration and data slice, a trainer, and the wire record of a run.

Nothing here knows a method: everything comes from the method's
:class:`~fedrec.algorithms.base.AlgorithmSpec` and its
:class:`~fedrec.algorithms.contract.Contract`.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch

from fedrec.algorithms import ALGORITHMS, AlgorithmSpec
from fedrec.algorithms.base import FederatedJob, FederatedTrainer, evaluate_splits
from fedrec.algorithms.contract import Contract
from fedrec.config import RunConfig
from fedrec.core.codec import encode
from fedrec.data.types import Dataset
from fedrec.engines.common import load_sliced, resolve
from fedrec.federation.message import Message, PartyId
from fedrec.federation.runtime import Party, seed_everything
from fedrec.federation.secrets import ClientSecrets

CPU = torch.device("cpu")
#: One client secret for every run of the suite: two runs are compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
#: Rounds of every check's run (each evaluated): enough for a second round to start from what
#: the first aggregated.
ROUNDS = 2

#: The registered federated methods, by name: the suite's parameters.
FEDERATED = sorted(name for name, spec in ALGORITHMS.items() if spec.federated)


def spec_of(name: str) -> AlgorithmSpec:
    return ALGORITHMS[name]


def contract_of(name: str) -> Contract:
    return spec_of(name).contract


def applies(name: str, check: str) -> Contract:
    """``name``'s contract, or skip the test with the method's declared reason."""
    contract = contract_of(name)
    if check in contract.exempt:
        pytest.skip(f"{name} is exempt from {check}: {contract.exempt[check]}")
    return contract


def config_of(name: str, **extra: Any) -> RunConfig:
    """The configuration the suite runs ``name`` with: its defaults for the contract's dataset,
    the contract's settings, :data:`ROUNDS` rounds each evaluated, then ``extra``."""
    contract = contract_of(name)
    overrides = {**contract.settings, "rounds": ROUNDS, "eval_every": 1, **extra}
    return resolve(name, contract.dataset, None, overrides)[1]


def has_option(name: str, option: str) -> bool:
    """Whether ``name``'s config has ``option``."""
    return option in {f.name for f in dataclasses.fields(spec_of(name).config_cls)}


def dp_settings(name: str) -> dict[str, Any]:
    """The settings of ``name``'s DP run (its contract's, or ``dp: distributed``)."""
    return dict(contract_of(name).dp_settings) or {"dp": "distributed"}


#: The federated methods whose config has the user-level DP aggregate (``dp``).
WITH_DP = [name for name in FEDERATED if has_option(name, "dp")]


def plain_sums(name: str) -> dict[str, Any]:
    """Settings that run ``name``'s secure sums in the clear, where it has them (the same
    vectors summed; the masks' randomness comes from ``os.urandom``, not from the client
    secret, so masked messages differ from run to run by design)."""
    return {"secure_aggregation": False} if has_option(name, "secure_aggregation") else {}


@cache
def _load(dataset: str, max_users: int | None, data_root: str) -> Dataset:
    return load_sliced(dataset, data_root, max_users)


def dataset_of(name: str, data_root: Any) -> Dataset:
    """The contract's slice of its real dataset (loaded once per slice; skipped if not
    staged)."""
    contract = contract_of(name)
    try:
        return _load(contract.dataset, contract.max_users, str(data_root))
    except FileNotFoundError as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"{contract.dataset} is not staged: {e}")


def trainer_of(name: str, cfg: RunConfig, ds: Dataset, job: FederatedJob | None = None
               ) -> FederatedTrainer:
    """A simulator trainer of ``name`` (its own job on ``ds`` unless ``job`` is given)."""
    seed_everything(cfg.seed)
    job = job if job is not None else spec_of(name).build_job(cfg, ds, CPU)
    return FederatedTrainer(job, cfg, CPU, SECRETS)


class Wire(NamedTuple):
    """One delivered message as the runtime's observers see it, the payload as wire bytes."""

    sender: PartyId
    receiver: PartyId
    step: str
    payload: bytes

    @classmethod
    def of(cls, msg: Message) -> Wire:
        return cls(msg.sender, msg.receiver, msg.step, encode(msg.payload))


def record(trainer: FederatedTrainer) -> list[Wire]:
    """Every message ``trainer``'s runtime delivers from now on, in order."""
    seen: list[Wire] = []
    trainer.runtime.observers.append(lambda m: seen.append(Wire.of(m)))
    return seen


def run(trainer: FederatedTrainer, cfg: RunConfig) -> list[dict[str, Any]]:
    """The rounds of ``cfg``, each evaluated as the round loop does; their rows."""
    rows = []
    for rnd in range(1, cfg.rounds + 1):
        rows.append({"train": trainer.train_round(rnd), "eval": evaluate_splits(trainer)})
    return rows


def with_party_data(job: FederatedJob, data: dict[PartyId, Any]) -> FederatedJob:
    """``job`` with the parties in ``data`` holding that data instead (same ids, roles, logic,
    hosts); the server logic is shared, so build a fresh job for each run."""
    parties = [dataclasses.replace(p, data=data[p.id]) if p.id in data else p
               for p in job.parties]
    return FederatedJob(job.server, parties=parties, public_facts=job.public_facts)


def swapped_data(target: Party, donor: Party) -> Any:
    """``target``'s data with every array replaced by ``donor``'s (its identity -- scalar fields
    such as a user id or a host number -- kept): other data of a valid shape and range, so the
    target still runs the protocol, on data that is not its own."""
    data = target.data
    if not dataclasses.is_dataclass(data):
        raise TypeError(f"party {target.id!r}: its data ({type(data).__name__}) is not a "
                        "dataclass of arrays")
    arrays = {f.name: getattr(donor.data, f.name) for f in dataclasses.fields(data)
              if isinstance(getattr(data, f.name), np.ndarray | torch.Tensor)}
    return dataclasses.replace(data, **arrays)


def same_arrays(a: Any, b: Any) -> bool:
    """Whether two data objects hold equal arrays in every field."""
    return all(np.array_equal(np.asarray(getattr(a, f.name)), np.asarray(getattr(b, f.name)))
               for f in dataclasses.fields(a)
               if isinstance(getattr(a, f.name), np.ndarray | torch.Tensor))


def shape_likeness(a: Any, b: Any) -> tuple[int, int]:
    """How alike two data objects' arrays are in shape: (equal-shaped float arrays, equal-shaped
    arrays): a donor of data for another party is chosen by it."""
    arrays = [(np.asarray(getattr(a, f.name)), np.asarray(getattr(b, f.name)))
              for f in dataclasses.fields(a)
              if isinstance(getattr(a, f.name), np.ndarray | torch.Tensor)]
    same = [x.shape == y.shape for x, y in arrays]
    floats = [x.dtype.kind == "f" for x, _ in arrays]
    return (sum(s and f for s, f in zip(same, floats, strict=True)), sum(same))


def equal_state(a: Any, b: Any) -> bool:
    """Deep equality of two states (dicts, sequences, tensors, arrays, scalars), bit for bit."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            equal_state(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return (isinstance(b, list | tuple) and len(a) == len(b)
                and all(equal_state(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and bool(torch.equal(a.cpu(), b.cpu())))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return type(a) is type(b) and a == b


def without_timings(row: dict[str, Any]) -> dict[str, Any]:
    """A row's statistics without wall-clock figures (``time_*``)."""
    return {k: v for k, v in row.items() if not k.startswith("time_")}


def relative_difference(a: dict[str, float], b: dict[str, float]) -> float:
    """Largest relative difference of two dicts of numbers over the same keys."""
    assert set(a) == set(b), (sorted(a), sorted(b))
    return max((abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in a if a[k] != b[k]),
               default=0.0)
