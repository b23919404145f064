"""How a run executes, as opposed to what it computes: :class:`RunOptions`.

What an algorithm computes (rounds, learning rate, seed, ...) is its
:class:`fedrec.config.RunConfig`, recorded in every result and checkpoint. A :class:`RunOptions`
says where and how that computation runs: the engine, the device, the progress display, the
checkpoints, a deployment's nodes and timeouts, the experimenter's client secret. It is the one
statement of each option's default and the one place they are checked; everything that runs a
job takes one:

* ``fedrec run`` and ``fedrec deploy`` (their flags' defaults and help come from the fields:
  :mod:`fedrec.cli.options`);
* :func:`fedrec.run` (its option keywords build one);
* the simulator: :func:`fedrec.experiment.run_experiment` (``fedrec run``'s flow) and
  :func:`fedrec.engines.common.simulate` (the in-process twin of a deployment);
* Flower: :func:`fedrec.engines.flower.deploy.deploy` and
  :func:`fedrec.engines.flower.simulation.simulate_on_flower`.

Some options belong to one engine (a field's ``metadata["engine"]``): a value other than the
default under the other engine is refused rather than ignored, so that a mistyped call cannot
run without the option it asked for. Every check raises :class:`~fedrec.errors.ConfigError`
with a one-line message, when the options are made (``__post_init__``): before any data is
loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedrec.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from fedrec.federation.secrets import ClientSecrets

#: The engines a run can execute on: fedrec's in-process simulator, or Flower.
ENGINES = ("simulator", "flower")
#: How a deployment's SuperNodes run ClientApps: ``warm``, one long-lived process per SuperNode;
#: ``subprocess``, Flower's default, a process per message.
EXECUTORS = ("warm", "subprocess")
#: The environment variable that may hold the experimenter's root (hex) for ``fedrec run`` and
#: ``fedrec deploy`` (the ``client_secret`` option's fallback); a deployment does not pass it on
#: to its processes.
SECRET_ENV = "FEDREC_CLIENT_SECRET"


def _doc(help: str, engine: str | None = None, type: type | None = None) -> dict[str, Any]:
    """A :class:`RunOptions` field's metadata: its one-line help (the CLI flag's), the engine it
    belongs to (None: both) and the CLI's value type (None: its default's type)."""
    return {"help": help, "engine": engine, "type": type}


@dataclass(frozen=True)
class RunOptions:
    """Where and how one run executes (module docstring); every default is stated here."""

    engine: str = field(default="simulator", metadata=_doc(
        "simulator (fedrec's in-process simulator) or flower"))
    # Shown by default: a run takes minutes to hours, and a silent one looks hung. Callers that
    # want silence (tests, a reproduction's grid) say so.
    progress: bool = field(default=True, metadata=_doc(
        "progress display: a bar (the simulator), a line per round (Flower)"))
    client_secret: ClientSecrets | str | None = field(default=None, metadata=_doc(
        "64 hex digits: the root of every client's private randomness (None: fresh OS entropy, "
        "and the run is not reproducible)", type=str))
    max_users: int | None = field(default=None, metadata=_doc(
        "keep only the first N users (a slice of the dataset)", type=int))
    # Off: a finished run in the output directory is refused (fedrec.experiment.check_finished),
    # so that a repeated command cannot replace results by accident.
    overwrite: bool = field(default=False, metadata=_doc(
        "replace the finished run in the output directory (refused without it): its "
        "results.json goes only once this run writes its own state there"))

    # The simulator's: fedrec run's device, checkpoints, resuming and TensorBoard log.
    device: str = field(default="cpu", metadata=_doc("cpu or cuda", "simulator"))
    log_dir: str | Path | None = field(default=None, metadata=_doc(
        "also write a TensorBoard log of every round's metrics, ledger totals and the run's "
        "epsilon (pip install 'fedrec[tensorboard]')", "simulator", type=str))
    # 1: an interruption loses no completed round. A larger N loses up to N-1 rounds, which a
    # resumed run trains again to the same result: for runs whose checkpoint costs as much as a
    # round (FedGRec on Gowalla: ~2.2 s of checkpoint against ~2.3 s of round).
    checkpoint_every: int = field(default=1, metadata=_doc(
        "write the checkpoint every N rounds and at each evaluation (an interruption loses up "
        "to N-1 rounds)", "simulator"))
    resume: bool = field(default=False, metadata=_doc(
        "continue from the output directory's checkpoint", "simulator"))
    # A test hook for resuming (no CLI flag): the results are those of an interrupted run.
    stop_after: int | None = field(default=None, metadata=_doc(
        "end after N rounds as if interrupted (no results file)", "simulator", type=int))

    # Flower's: the deployment's processes and how long it waits for them.
    nodes: int = field(default=3, metadata=_doc(
        "client SuperNodes; service parties (FedGNN's third party) get one SuperNode each on "
        "top", "flower"))
    # The whole run's bound. 1800 s (`fedrec deploy`'s, not the 900 s fedrec.run had): the call
    # and connect timeouts already end a run whose parties stopped answering, so this one only
    # stops a run that keeps progressing too slowly, and cutting off a healthy run wastes all of
    # it. Measured on the 2-core machine: a 2-round FedGRec deployment on 30 users took 392 s
    # (docs/fedgrec.md), so 900 s cut such a run off after about 5 rounds. Longer runs pass more.
    timeout: float = field(default=1800.0, metadata=_doc(
        "longest wall time of the whole run, seconds", "flower"))
    call_timeout: float = field(default=300.0, metadata=_doc(
        "longest wait for one step's replies, seconds", "flower"))
    # Once a reply is in, the step goes on without the late ones after this (they count as
    # dropped): a dead SuperNode then stalls a step for a minute, not the whole call timeout.
    straggler_timeout: float = field(default=60.0, metadata=_doc(
        "once a reply is in, longest wait for the others, seconds (0: the call timeout)",
        "flower"))
    connect_timeout: float = field(default=120.0, metadata=_doc(
        "longest wait for every SuperNode to connect and report its data, seconds", "flower"))
    executor: str = field(default="warm", metadata=_doc(
        "warm: one long-lived ClientApp process per SuperNode (fast); subprocess: Flower's "
        "default, a process per message", "flower"))
    experimenter_oracle: bool = field(default=False, metadata=_doc(
        "let the ServerApp load the held-out data as the experimenter's oracle, only to score a "
        "model that stays on the server and attacks (PTF-FedRec's server-model metrics and "
        "top-guess attack); never used for training", "flower"))
    keep_workdir: bool = field(default=False, metadata=_doc(
        "keep the deployment's temporary directory and logs", "flower"))

    def __post_init__(self) -> None:
        if isinstance(self.client_secret, str):  # hex, as the CLI and fedrec.run take it
            # Imported here: the CLI builds its flags from this module without torch.
            from fedrec.federation.secrets import ClientSecrets

            object.__setattr__(self, "client_secret", ClientSecrets.from_hex(self.client_secret))
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError (one line) at the first option that is out of range, unknown, or
        set (not at its default) under the other engine."""
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        check_checkpoint_every(self.checkpoint_every)
        _at_least_one("stop_after", self.stop_after, optional=True)
        _at_least_one("max_users", self.max_users, optional=True)
        _at_least_one("nodes", self.nodes)
        for name in ("timeout", "call_timeout", "connect_timeout"):
            value = getattr(self, name)
            if not value > 0:  # NaN too
                raise ConfigError(f"{name} must be > 0 seconds, got {value}")
        if not self.straggler_timeout >= 0:
            raise ConfigError(f"straggler_timeout must be >= 0 seconds (0: the call timeout), "
                              f"got {self.straggler_timeout}")
        if self.executor not in EXECUTORS:
            raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, "
                              f"got {self.executor!r}")
        parse_device(self.device)
        self._check_engine()

    def _check_engine(self, given: Iterable[str] = ()) -> None:
        """ConfigError naming the options of the other engine that are set: not at their
        defaults, or among ``given`` (named by the caller, even at their defaults)."""
        for engine in ENGINES:
            if engine != self.engine:
                theirs = [n for n, e in _ENGINE_OF.items() if e == engine]
                others = [n for n in theirs if n in set(given) or n in self.changed(theirs)]
                if others:
                    raise ConfigError(f"{', '.join(others)}: options of engine={engine!r} only")

    @classmethod
    def of(cls, options: RunOptions | None = None, **changes: Any) -> RunOptions:
        """``options`` (default: the defaults) with ``changes`` (option names as keywords);
        an unknown name is a ConfigError, as a value out of range is."""
        unknown = sorted(set(changes) - set(_ENGINE_OF))
        if unknown:
            raise ConfigError(f"unknown run option(s) {', '.join(unknown)}; known: "
                              f"{', '.join(_ENGINE_OF)}")
        base = options if options is not None else cls()
        if not changes:
            return base
        made = dataclasses.replace(base, **changes)
        made._check_engine(changes)  # nodes=3 asks for Flower even where 3 is the default
        return made

    def with_engine(self, engine: str) -> RunOptions:
        """These options for ``engine`` (checked again: another engine's options are refused)."""
        return self if engine == self.engine else dataclasses.replace(self, engine=engine)

    def changed(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` not at their defaults."""
        return [n for n in names if getattr(self, n) != _FIELDS[n].default]

    def refuse(self, names: Iterable[str], by: str) -> None:
        """ConfigError naming those of ``names`` that are set: options ``by`` does not take
        (refused rather than ignored, as another engine's options are)."""
        given = self.changed(names)
        if given:
            raise ConfigError(f"{', '.join(given)}: not taken by {by}")

    def torch_device(self) -> torch.device:
        """The device, once it is known to be there (cuda: a CUDA device is available)."""
        import torch

        dev = parse_device(self.device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"--device {self.device} was asked for but no CUDA device is "
                              f"available")
        return dev


_FIELDS = {f.name: f for f in dataclasses.fields(RunOptions)}
#: Option name -> the engine it belongs to (None: both).
_ENGINE_OF: dict[str, str | None] = {n: f.metadata["engine"] for n, f in _FIELDS.items()}


def option_field(name: str) -> dataclasses.Field:
    """The field of option ``name``: its ``default`` and ``metadata`` (``help``, ``engine``,
    ``type``), what the CLI builds its flags from."""
    return _FIELDS[name]


def check_checkpoint_every(every: int) -> None:
    """The check of ``checkpoint_every``, which :class:`fedrec.rounds.RoundCheckpoint` makes
    too (it can be built without a RunOptions)."""
    _at_least_one("checkpoint_every", every)


def parse_device(name: str) -> torch.device:
    import torch

    try:
        return torch.device(name)
    except (RuntimeError, TypeError):
        raise ConfigError(f"unknown device {name!r}; use cpu or cuda") from None


def _at_least_one(name: str, value: int | None, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value!r}")
