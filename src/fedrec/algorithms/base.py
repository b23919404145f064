"""What an algorithm is, and the two trainers (federated, centralized) that the runner drives.

A federated algorithm (Flower's split, kept apart from transport) is:

* a :class:`ServerLogic`: the orchestrator, whose :meth:`~ServerLogic.run_round` is the
  protocol's steps in order, talking to other parties only through a
  :class:`~fedrec.federation.runtime.Runtime`;
* a client :class:`~fedrec.federation.runtime.PartyLogic` and, optionally, the logic of extra
  services (a third-party matcher, an aggregation server).

:class:`FederatedJob` bundles them with the partitioned data so that any runtime -- the
in-process simulator here, Flower in :mod:`fedrec.engines` -- can run the same code.
A centralized baseline subclasses :class:`CentralizedTrainer` and has an empty ledger.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from fedrec.algorithms.contract import Contract
from fedrec.algorithms.index import MethodInfo
from fedrec.attacks.poisoning import (
    DATA_ATTACKS,
    MODEL_ATTACKS,
    Adapter,
    ClientAttack,
    MaliciousClients,
    PoisoningOptions,
    model_attack,
    plan_attack,
    poisoned,
)
from fedrec.config import RunConfig
from fedrec.data.types import Dataset, check_split
from fedrec.errors import ConfigError
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import CLIENT, PartyId
from fedrec.federation.runtime import (
    InProcessRuntime,
    Observer,
    Party,
    PartyLogic,
    Runtime,
    check_parties,
)
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.report import PrivacyReport

#: What a server receives from a client's evaluation of explicit ratings, and of a ranking
#: (for :meth:`ServerLogic.receives`).
RATING_EVALUATION = "each client's summed squared and absolute rating errors and its count"
RANKING_EVALUATION = "each client's ranking metrics on its held-out items and its count"


class ServerLogic(ABC):
    """The server side of a federated algorithm."""

    #: In a poisoning experiment, the target items whose exposure the client-side evaluation
    #: measures (:mod:`fedrec.metrics.exposure`): the experimenter's, set before the first
    #: round (:meth:`AlgorithmSpec.poisoned_job`) and sent in the
    #: evaluation request (:func:`~fedrec.algorithms.mf_common.eval_request`); no training
    #: step reads it.
    exposure_targets: torch.Tensor | None = None

    @abstractmethod
    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        """Carry out one round's protocol steps; return training statistics."""

    @abstractmethod
    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        """Metrics on the held-out ``split`` (``valid`` or ``test``, see
        :data:`fedrec.data.types.EVAL_SPLITS`), computed where the algorithm keeps its model:
        server or clients. A client-side evaluation names the split in its (metered)
        ``evaluate`` request; each client then scores its own rows of that split."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def privacy(self) -> PrivacyReport | None:
        """What protects each party's data in the run so far (:mod:`fedrec.privacy.report`):
        the guarantee for what a party actually releases (its ``epsilon`` over the whole run)
        or "no formal guarantee" with what protects the data and any measured attack. None:
        the runner reports no protection at all. Methods override this."""
        return None

    def privacy_report(self) -> dict[str, Any] | None:
        """:meth:`privacy`'s JSON (``results.json["privacy"]`` less ``server_receives``)."""
        report = self.privacy()
        return None if report is None else report.to_json()

    def receives(self) -> dict[str, str]:
        """Every kind of message the server receives in this configuration, by step name, with
        what it holds (``{"train": "the cohort's masked gradient vectors", ...}``): the privacy
        report lists it under ``server_receives`` (:func:`privacy_report_of`),
        and the conformance suite checks that no message the server receives is missing.
        Steps of the shared protocols are named by their modules (secure sums:
        :func:`fedrec.federation.secure_sum.receives`)."""
        raise NotImplementedError(f"{type(self).__name__} does not say what it receives")

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """Hand the server the experimenter's instruments built by
        :attr:`AlgorithmSpec.instruments` (see there); only algorithms that declare them
        accept any."""
        if instruments:
            raise TypeError(f"{type(self).__name__} takes no experimenter's instruments")

    def observers(self) -> list[Observer]:
        """Instruments that watch what the server receives (attacks run as observers); the
        trainer registers them with its runtime before the first round (:func:`observe`)."""
        return []


def observe(server: ServerLogic, rt: Runtime) -> None:
    """Register ``server``'s :meth:`~ServerLogic.observers` with ``rt``, each once (a resumed
    run, or instruments attached after the trainer was built, call this again safely)."""
    for obs in server.observers():
        if not any(o is obs for o in rt.observers):
            rt.observers.append(obs)


@dataclass
class FederatedJob:
    """The server logic and the parties of one run, each with its id, role, logic and private
    data (:class:`~fedrec.federation.runtime.Party`). Every runtime reads the parties from here:
    the simulator hosts them all, a Flower deployment spreads the clients over its SuperNodes,
    runs each co-located party (``Party.host``) on its host's SuperNode and gives each other
    service a SuperNode of its own (:mod:`fedrec.engines.flower.node`).

    One way to declare them: ``FederatedJob(server, parties=[Party("host-0", "client", logic,
    data), ...])`` (ids need not be user ids); a job with one client per user of a
    recommendation dataset makes its list with
    :func:`~fedrec.federation.runtime.declare_parties`. :attr:`client_logic`,
    :attr:`client_data` and :attr:`services` are read-only views of the parties.
    """

    server: ServerLogic
    parties: list[Party] = field(kw_only=True)
    #: Public facts (JSON) that a server built from public metadata needs and cannot derive
    #: from it, computed on a client's data: e.g. the width of the public catalogue's item
    #: features. A SuperNode reports them beside the dataset's metadata
    #: (:func:`fedrec.engines.common.node_meta`); a job built from metadata reads them back
    #: (:func:`fedrec.engines.common.public_facts`).
    public_facts: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def __post_init__(self) -> None:
        self.parties = list(self.parties)
        check_parties(self.parties)

    @property
    def client_logic(self) -> PartyLogic | None:
        """The logic every client runs (None: the job has no client)."""
        clients = self.parties_of(CLIENT)
        return clients[0].logic if clients else None

    @property
    def client_data(self) -> dict[PartyId, Any]:
        """Each client's private data, by client id."""
        return {p.id: p.data for p in self.parties_of(CLIENT)}

    @property
    def services(self) -> dict[str, tuple[PartyLogic, Any]]:
        """Each role other than ``"client"``: its logic and the data of (one of) its parties."""
        return {p.role: (p.logic, p.data) for p in self.parties if p.role != CLIENT}

    @property
    def client_ids(self) -> list[PartyId]:
        """The clients, in the order the job declares them."""
        return [p.id for p in self.parties if p.role == CLIENT]

    def parties_of(self, role: str) -> list[Party]:
        return [p for p in self.parties if p.role == role]

    @property
    def service_roles(self) -> list[str]:
        """The roles other than ``"client"`` that stand alone (not co-located with a client:
        each is a SuperNode of its own on a deployment), sorted."""
        return sorted({p.role for p in self.parties if p.role != CLIENT and p.host is None})


def privacy_report_of(server: ServerLogic) -> PrivacyReport | None:
    """A run's privacy report, on every engine: the server's own (:meth:`ServerLogic.privacy`)
    with what the server receives (:meth:`ServerLogic.receives`) as its ``server_receives``."""
    report = server.privacy()
    return None if report is None else report.with_receives(server.receives())


class Trainer(ABC):
    """What the runner drives, round by round."""

    ledger: CommunicationLedger

    @abstractmethod
    def train_round(self, rnd: int) -> dict[str, float]: ...

    @abstractmethod
    def evaluate(self, split: str = "test") -> dict[str, float]:
        """Metrics on ``split``: ``valid`` (model selection) or ``test`` (reporting)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def privacy(self) -> PrivacyReport | None:
        """The run's privacy report so far (None: the runner reports no protection at all)."""
        return None

    def privacy_report(self) -> dict[str, Any] | None:
        """:meth:`privacy`'s JSON, ``results.json["privacy"]`` before the runner's caveats."""
        report = self.privacy()
        return None if report is None else report.to_json()

    def reproducible(self) -> bool | None:
        """Whether the parties' private randomness comes from the experimenter's secret (None:
        no parties)."""
        return None


class FederatedTrainer(Trainer):
    """Runs a :class:`FederatedJob` on the in-process simulator."""

    def __init__(self, job: FederatedJob, cfg: RunConfig, device: torch.device,
                 client_secrets: ClientSecrets | None = None) -> None:
        self.job = job
        self.runtime = InProcessRuntime(
            parties=job.parties,
            seed=cfg.seed,
            dropout=cfg.dropout,
            dropout_after_calls=cfg.dropout_after_calls,
            device=device,
            client_secrets=client_secrets,
        )
        self.ledger = self.runtime.ledger

    def train_round(self, rnd: int) -> dict[str, float]:
        self.runtime.begin_round(rnd)
        observe(self.job.server, self.runtime)
        return self.job.server.run_round(self.runtime, rnd)

    def evaluate(self, split: str = "test") -> dict[str, float]:
        return self.job.server.evaluate(self.runtime, check_split(split))

    def state_dict(self) -> dict[str, Any]:
        return {"server": self.job.server.state_dict(), "runtime": self.runtime.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.job.server.load_state_dict(state["server"])
        self.runtime.load_state_dict(state["runtime"])

    def privacy(self) -> PrivacyReport | None:
        return privacy_report_of(self.job.server)

    def reproducible(self) -> bool | None:
        return self.runtime.reproducible


class CentralizedTrainer(Trainer):
    """Base of non-federated baselines: all data in one place, nothing on the wire."""

    def __init__(self) -> None:
        self.ledger = CommunicationLedger()


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registry entry: how to build a trainer for a dataset from a config.

    A federated algorithm gives ``build_job`` (its :class:`FederatedJob`: the simulator runs it
    in :class:`FederatedTrainer`, a Flower deployment spreads its parties over SuperNodes); a
    centralized baseline gives ``build`` (its :class:`CentralizedTrainer`). Exactly one of the
    two; :meth:`trainer` builds either."""

    name: str
    summary: str
    paper: str
    config_cls: type[RunConfig]
    dataset_kinds: tuple[str, ...]
    build: Callable[[RunConfig, Dataset, torch.device], Trainer] | None = None
    build_job: Callable[[RunConfig, Dataset, torch.device], FederatedJob] | None = None
    #: The *experimenter's instruments* of a federated algorithm whose server-side evaluation
    #: needs ground truth the server never learns from the protocol (PTF-FedRec: the held-out
    #: interactions that rank its hidden model, the positives its top-guess attack is scored
    #: against), built from the ratings as ``{name: object}`` and handed to the server logic
    #: with :meth:`ServerLogic.attach_instruments`. They only compute metrics; no protocol step
    #: reads them. ``build_job`` attaches them itself on a real dataset and leaves them out on a
    #: metadata-only one (:func:`fedrec.engines.common.metadata_dataset`), where a deployment's
    #: ServerApp attaches them only when the experimenter hands it the ground truth
    #: (``fedrec deploy --experimenter-oracle``).
    instruments: Callable[[RunConfig, Dataset], dict[str, Any]] | None = None
    #: How the conformance suite checks a federated method (:mod:`fedrec.algorithms.contract`):
    #: its slice, settings, tolerances and declared exemptions.
    contract: Contract = field(default_factory=Contract)
    #: What an in-process run of a configuration allocates beyond the loaded dataset, in bytes
    #: by part (``{"5000 hosts' weights and Adam moments": ..., ...}``), estimated from the
    #: configuration and the dataset's sizes alone (:func:`fedrec.data.types.dataset_sizes`:
    #: its public metadata, and a graph's edge count), before anything is built. ``fedrec run``
    #: and the simulator refuse a run whose estimate exceeds the memory budget
    #: (:func:`fedrec.core.memory.check_fits`, from :func:`fedrec.experiment.check_loaded`).
    #: None: not estimated, never refused.
    memory_estimate: Callable[[RunConfig, dict[str, Any]], dict[str, int]] | None = None
    #: How a malicious client speaks the method's protocol, for model-poisoning attacks
    #: (:mod:`fedrec.attacks.poisoning`): the adapter made from the method's client logic.
    #: A method whose config has the poisoning options (``poisoning``, ...) supports the data
    #: attacks and the exposure measure without it; None refuses the model attacks.
    poisoning: Callable[[Any], Adapter] | None = None

    def __post_init__(self) -> None:
        if (self.build is None) == (self.build_job is None):
            raise TypeError(f"algorithm {self.name!r}: give build (a centralized trainer) or "
                            "build_job (a federated job), exactly one")

    @classmethod
    def of(cls, info: MethodInfo, **rest: Any) -> AlgorithmSpec:
        """The spec of the method ``info`` describes (its package's ``meta.py``, which the
        methods' index reads without importing the package): its name, summary, paper and
        dataset kinds from ``info``, everything else from ``rest``. TypeError when ``info``
        says federated and ``rest`` gives no ``build_job``, or the other way round."""
        spec = cls(name=info.name, summary=info.summary, paper=info.paper,
                   dataset_kinds=info.dataset_kinds, **rest)
        if spec.federated != info.federated:
            raise TypeError(f"algorithm {info.name!r}: its MethodInfo says federated="
                            f"{info.federated}, its spec gives "
                            f"{'build_job' if spec.federated else 'build'}")
        return spec

    @property
    def info(self) -> MethodInfo:
        """What the methods' index lists for this spec (:mod:`fedrec.algorithms.index`)."""
        return MethodInfo(self.name, self.summary, self.paper, self.dataset_kinds,
                          self.federated)

    @property
    def federated(self) -> bool:
        """Whether the algorithm is a federated job (parties, messages, a ledger)."""
        return self.build_job is not None

    def trainer(self, cfg: RunConfig, dataset: Dataset, device: torch.device,
                client_secrets: ClientSecrets | None = None) -> Trainer:
        """The trainer of one run; a federated one simulates its parties in-process with
        ``client_secrets`` (the experimenter's root of the clients' private randomness; fresh
        entropy when None)."""
        if self.build_job is None:
            assert self.build is not None  # (__post_init__)
            return self.build(cfg, dataset, device)
        job = (self.poisoned_job(cfg, dataset, device) if poisoned(cfg)
               else self.build_job(cfg, dataset, device))
        return FederatedTrainer(job, cfg, device, client_secrets)

    def poisoned_job(self, cfg: RunConfig, dataset: Dataset, device: torch.device
                     ) -> FederatedJob:
        """The job of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): built from the
        dataset with the malicious clients' profiles; its client role runs
        :class:`~fedrec.attacks.poisoning.MaliciousClients`; its server is told the targets
        whose exposure the evaluation measures."""
        assert self.build_job is not None and isinstance(cfg, PoisoningOptions)
        if cfg.poisoning in MODEL_ATTACKS and self.poisoning is None:
            raise ConfigError(f"{self.name} has no model-poisoning adapter: poisoning must be one "
                              f"of none, {', '.join(DATA_ATTACKS)}")
        plan = plan_attack(cfg, dataset)  # type: ignore[arg-type]
        job = self.build_job(cfg, plan.dataset, device)
        benign = job.client_logic
        assert benign is not None
        targets = torch.as_tensor(plan.targets, dtype=torch.int64)
        attack = (ClientAttack() if cfg.poisoning in DATA_ATTACKS else
                  model_attack(self.poisoning(benign), cfg.poisoning, cfg.poisoning_scale,
                               targets, torch.as_tensor(plan.by_popularity),
                               cfg.poisoning_clip))
        logic = MaliciousClients(benign, plan.malicious, attack)
        job.parties = [dataclasses.replace(p, logic=logic) if p.role == CLIENT else p
                       for p in job.parties]
        job.server.exposure_targets = targets
        return job


#: Prefix of the validation metrics in a history row's ``eval`` (``val_rmse``, ...).
VAL_PREFIX = "val_"


def evaluate_splits(trainer: Trainer) -> dict[str, float]:
    """One evaluation of a run: the validation metrics, prefixed :data:`VAL_PREFIX`, beside the
    test metrics. Validation is evaluated first; both are metered evaluation steps of the
    round. Nothing a run chooses may read the unprefixed (test) metrics."""
    valid = trainer.evaluate("valid")
    test = trainer.evaluate("test")
    return {**{VAL_PREFIX + k: v for k, v in valid.items()}, **test}
