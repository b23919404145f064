"""The federation runtime: how protocol steps reach parties, and the in-process simulator.

An algorithm is written once, as *protocol steps*:

* the **server** side is ordinary code (the orchestrator) that, each round, calls
  :meth:`Runtime.call` / :meth:`Runtime.broadcast` to run a named step on a set of parties and
  receive their replies;
* every other party (clients, a third-party matcher, an aggregation server) is a
  :class:`PartyLogic` whose declared steps (:func:`fedrec.federation.steps.step`) each run on
  that party's private data and persistent state and return what it sends: a payload for whoever
  called it, or :class:`Routed` payloads for other parties (client -> third party, third party
  -> client), which never pass through the orchestrator's memory.

The :class:`Runtime` is the only way parties talk, so it meters every message's exact size into a
:class:`~fedrec.federation.ledger.CommunicationLedger`, rejects updates that hold NaN/Inf, simulates
dropouts, and shows each delivered message to registered observers (what an attack sees).

It also holds the *round policy* that every server shares, so that a server keeps only its
protocol's steps: who takes part (:meth:`Runtime.cohort`: ``clients_per_round`` 0 means every
client, a count above the pool is the whole pool; :func:`cohort_size` for a plan made before
the first round), who drops out (the runtime's: a simulated dropout or a node that does not
answer is simply absent from a step's replies; no server draws its own), and what a step with no
reply at all means (:meth:`Runtime.updates`: one :class:`~fedrec.errors.NoUpdateError`, worded
alike for every algorithm).

The :class:`InProcessRuntime` may hand a whole cohort of clients to
:meth:`PartyLogic.handle_cohort` in one vectorised call; the contract is that each client's
outgoing payload depends only on its own data, state and ``ctx`` randomness
(checked for every method by the conformance suite, ``tests/conformance``). Engines for
real deployments (Flower) implement the same :class:`Runtime` interface over the network.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch

from fedrec.core.codec import Payload, all_finite, payload_size
from fedrec.core.rng import derive_seed, numpy_rng
from fedrec.errors import ConfigError, NoUpdateError
from fedrec.federation.checkpoint import pack_states, unpack_states
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import CLIENT, EXPERIMENTER, SERVER, Message, PartyId, role_of
from fedrec.federation.secrets import ClientSecrets, PartySecret
from fedrec.federation.steps import DeclaredStep, collect_steps, undeclared


@dataclass
class Routed:
    """Outgoing payloads addressed to parties other than the caller."""

    to: dict[PartyId, Payload]


Outgoing = Payload | Routed | None


@dataclass
class PartyContext:
    """What a party's step can see: its own id, private data, persistent state and inbox, and
    its secret (:mod:`fedrec.federation.secrets`), from which every private draw is keyed."""

    party: PartyId
    data: Any
    state: dict[str, Any]
    round: int
    step: str
    secret: PartySecret
    #: The secret shared by every party of this role (never the server's).
    role_secret: PartySecret
    inbox: list[Message] = field(default_factory=list)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    #: Whether this party's request is the one payload the caller broadcast to the whole
    #: cohort of the call (:meth:`Runtime.broadcast`), as the runtime says, not as guessed.
    broadcast: bool = False

    def generator(self, *extra: object) -> torch.Generator:
        """A torch generator unique to (this party's secret, round, step, extra)."""
        return self.secret.generator(self.round, self.step, *extra)

    def rng(self, *extra: object) -> np.random.Generator:
        return self.secret.rng(self.round, self.step, *extra)


def cohort_seeds(ctxs: Sequence[PartyContext], *keys: object) -> torch.Tensor:
    """One 63-bit key per party of a cohort, from each party's own secret (int64 tensor): the
    seeds of vectorised counter-based draws (:func:`fedrec.core.rng.counter_uniform`)."""
    return torch.tensor([c.secret.seed(*keys) for c in ctxs], dtype=torch.int64)


class PartyLogic:
    """The code that runs on one kind of party (a client device, a third-party server, ...).

    Its steps are methods declared with :func:`fedrec.federation.steps.step`; the default
    :meth:`handle` and :meth:`handle_cohort` dispatch to them. (A logic may instead override
    :meth:`handle`, which then runs every step it declares none for.)"""

    #: The steps this class declares, by name (collected when the class is defined).
    declared_steps: ClassVar[Mapping[str, DeclaredStep]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.declared_steps = collect_steps(cls)

    def init_state(self, party: PartyId, data: Any, secret: PartySecret) -> dict[str, Any]:
        """Persistent state created the first time the party is reached (private
        initialisation is keyed by the party's ``secret``)."""
        return {}

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Outgoing:
        """Run ``step`` on this party; return its reply or routed messages."""
        return self.handle_cohort(step, [ctx], [payload])[0]

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Outgoing]:
        """Run ``step`` on many parties at once: the declared step, else (for a logic that
        overrides :meth:`handle`) :meth:`handle` per party. A cohort step's output for each
        party is a function of that party's context and payload alone."""
        declared = self.declared_steps.get(step)
        if declared is not None:
            return declared.run(self, ctxs, payloads)
        if type(self).handle is PartyLogic.handle:
            raise undeclared(type(self).__name__, step, self.declared_steps)
        return [self.handle(step, c, p) for c, p in zip(ctxs, payloads, strict=True)]


@dataclass(frozen=True, eq=False)
class Party:
    """One party of a job: its id, its role (``"client"``: the role cohorts are sampled from;
    any other: a service such as FedGNN's ``"third_party"``), the code it runs and its private
    data. Every party of one role runs the same logic.

    ``host``: the client this party is *co-located* with (``None``: it stands alone). A
    co-located party is a party of its own -- own id, role, secret, state and data, reached only
    through the runtime -- that lives on its host's hardware and holds data of that host's
    (FL-MV-DSSM's views are apps on their user's device). The simulator treats it like any other
    party; a deployment runs it where its host runs, on the data that machine holds
    (:mod:`fedrec.engines.flower.node`), instead of on a node of its own. Either every party of a
    role is co-located or none is."""

    id: PartyId
    role: str
    logic: PartyLogic
    data: Any = None
    host: PartyId | None = None


def declare_parties(
    client_data: Mapping[PartyId, Any], client_logic: PartyLogic | None,
    services: Mapping[str, tuple[PartyLogic, Any]] | None = None,
) -> list[Party]:
    """The parties of a job with one client per user: one client per ``client_data`` entry (in
    id order, a user of a recommendation dataset) running ``client_logic``, then one party per
    service role, its id the role name (FedGNN's ``"third_party"``). A builder hands the list to
    :class:`~fedrec.algorithms.base.FederatedJob` (``parties=``), the one way a job declares
    its parties."""
    clients = []
    if client_data:
        if client_logic is None:
            raise ConfigError("clients were given data but no client logic")
        clients = [Party(c, CLIENT, client_logic, client_data[c]) for c in sorted(client_data)]
    return clients + [Party(role, role, logic, data)
                      for role, (logic, data) in (services or {}).items()]


def check_parties(parties: Sequence[Party]) -> None:
    """Raise ConfigError for two parties with one id, a role with two kinds of logic, a
    service party whose id names another role, or a co-located party whose host is no client
    or whose role mixes co-located and stand-alone parties."""
    seen: set[PartyId] = set()
    logic_of: dict[str, PartyLogic] = {}
    clients = {p.id for p in parties if p.role == CLIENT}
    colocated: dict[str, bool] = {}
    for p in parties:
        if colocated.setdefault(p.role, p.host is not None) != (p.host is not None):
            raise ConfigError(f"some parties of role {p.role!r} are co-located, some not")
        if p.host is not None and (p.role == CLIENT or p.host not in clients):
            raise ConfigError(f"party {p.id!r} is co-located with {p.host!r}, which is not a "
                              "client of the job")
        if p.id in seen:
            raise ConfigError(f"two parties have the id {p.id!r}")
        seen.add(p.id)
        if p.id == SERVER or p.role == SERVER:
            raise ConfigError("the server is the orchestrator, not a declared party")
        if logic_of.setdefault(p.role, p.logic) is not p.logic:
            raise ConfigError(f"the parties of role {p.role!r} run different logic")
        if p.role != CLIENT and role_of(p.id) != p.role:
            raise ConfigError(f"service party {p.id!r} must be named after its role {p.role!r}")


Observer = Callable[[Message], None]
Replies = TypeVar("Replies", bound=Mapping[PartyId, Any])


def cohort_size(clients_per_round: int, num_clients: int) -> int:
    """How many of ``num_clients`` clients a round asks: ``clients_per_round``, where 0 means
    every client and a count above ``num_clients`` is capped to it (a round cannot ask a client
    twice). The one definition of the option, for :meth:`Runtime.cohort` and for what is
    planned before the first round (FedGNN's epochs, the DP sampling rate). A negative count is
    a :class:`ConfigError`."""
    if clients_per_round < 0:
        raise ConfigError(f"clients_per_round must be >= 0 (0: every client), got "
                          f"{clients_per_round}")
    return num_clients if clients_per_round == 0 else min(clients_per_round, num_clients)


class Runtime(ABC):
    """What an orchestrator (the server side of an algorithm) may do."""

    ledger: CommunicationLedger
    observers: list[Observer]  # shown every delivered message (what an attack sees)
    round: int = 0
    seed: int = 0  # the run's public seed: client sampling
    #: The orchestrator's own secret, for the server's draws that other services must not
    #: predict (FedGNN's expansion key): no client's or service's secret derives from it.
    server_secret: PartySecret

    @property
    @abstractmethod
    def client_ids(self) -> list[PartyId]:
        """All clients that exist (their ids only; their data is out of reach), in the order
        the job declared them (by user id for one client per user)."""

    def call(
        self, step: str, requests: Mapping[PartyId, Payload], *, sender: PartyId = SERVER
    ) -> dict[PartyId, Payload]:
        """Send each target its request, run ``step`` there, return the replies addressed to
        ``sender``. Parties that dropped out or whose reply was rejected are absent."""
        return self._send(step, requests, sender=sender, broadcast=False)

    def broadcast(
        self, step: str, targets: Sequence[PartyId], payload: Payload, *, sender: PartyId = SERVER
    ) -> dict[PartyId, Payload]:
        """:meth:`call` with one payload for every target; the receiving parties are told
        (:attr:`PartyContext.broadcast`)."""
        return self._send(step, dict.fromkeys(targets, payload), sender=sender, broadcast=True)

    def gather(self, step: str, targets: Sequence[PartyId], payload: Payload,
               add: Callable[[PartyId, Payload], None], *, chunk: int = 0,
               sender: PartyId = SERVER) -> list[PartyId]:
        """:meth:`broadcast` whose replies are handed to ``add`` as they arrive and not kept,
        so that a large cohort's replies (29,858 dense vectors on Gowalla) are never all in
        memory: the simulator runs the step on ``chunk`` targets at a time (0: all at once).
        Returns who replied, in order. Messages are metered and observed as by
        :meth:`broadcast`; this base collects them first (an engine whose replies arrive one by
        one may override it)."""
        replies = self._send(step, dict.fromkeys(targets, payload), sender=sender,
                             broadcast=True)
        for party, reply in replies.items():
            add(party, reply)
        return list(replies)

    @abstractmethod
    def _send(self, step: str, requests: Mapping[PartyId, Payload], *, sender: PartyId,
              broadcast: bool) -> dict[PartyId, Payload]:
        """:meth:`call`; ``broadcast``: every request is the same one payload."""

    def sample_poisson(self, rate: float, among: Sequence[PartyId] | None = None
                       ) -> list[PartyId]:
        """This round's Poisson cohort (:func:`poisson_cohort`) from the run's public seed, of
        every client or of ``among`` (a subset in client order, as :meth:`sample_clients`)."""
        return poisson_cohort(self.client_ids if among is None else among, rate, self.seed,
                              self.round)

    @abstractmethod
    def sample_clients(self, count: int, among: Sequence[PartyId] | None = None
                       ) -> list[PartyId]:
        """This round's participants: ``count`` clients drawn without replacement from every
        client, or from ``among`` (a subset in client order, e.g. the clients that have
        training data when new users' clients only evaluate), with :func:`sample_cohort`. The
        engine's primitive; a server asks :meth:`cohort`."""

    def cohort(self, clients_per_round: int, among: Sequence[PartyId] | None = None
               ) -> list[PartyId]:
        """This round's training cohort, as the run option ``clients_per_round`` defines it:
        :func:`cohort_size` of the pool (every client, or ``among``) -- 0 means the whole pool,
        a larger count is capped to it --, drawn by :meth:`sample_clients` from the run's public
        seed (the same cohort on every engine). An empty pool gives an empty cohort, whose step
        then receives no update (:meth:`updates`)."""
        pool = self.client_ids if among is None else among
        count = cohort_size(clients_per_round, len(pool))
        return self.sample_clients(count, among) if count else []

    def updates(self, replies: Replies, step: str, hint: str = "") -> Replies:
        """``replies`` (what a call of ``step`` returned), unless none arrived: then
        :class:`~fedrec.errors.NoUpdateError` (:meth:`no_update`). A step that some parties
        answered goes on with those replies: who dropped out is the runtime's business
        (simulated dropouts, nodes that do not answer), so a server neither re-draws nor
        waits for them. ``hint``: what the user may do about it (e.g. lower a learning rate
        when updates diverge), added to the message."""
        if replies:
            return replies
        raise self.no_update(step, hint)

    def no_update(self, step: str, hint: str = "") -> NoUpdateError:
        """The error of a ``step`` of this round that no party answered, in the one wording
        every algorithm shares; it counts the step's messages the runtime rejected this round
        (non-finite values) from the ledger: the other parties dropped out or sent nothing."""
        rejected = [r for r in self.ledger.rejected
                    if r["round"] == self.round and r["step"] == step]
        reasons = sorted({str(r["reason"]) for r in rejected})
        why = f" as {', '.join(reasons)}" if reasons else ""
        return NoUpdateError(
            f"round {self.round}, step {step!r}: no update arrived ({len(rejected)} rejected"
            f"{why}, the rest dropped out or sent nothing){'; ' + hint if hint else ''}")


def sample_cohort(client_ids: Sequence[PartyId], count: int, seed: int,
                  rnd: int) -> list[PartyId]:
    """Round ``rnd``'s cohort: ``count`` of ``client_ids`` drawn without replacement from the run
    ``seed``, in the order of ``client_ids``; all of them when ``count`` is at least their
    number. Every runtime draws with this function, so that the same seed gives the same cohort
    on every engine. (For sorted integer ids the order of ``client_ids`` is the sorted order:
    the cohorts are those of the earlier ``sorted(ids[draw])``.)"""
    if count <= 0:
        raise ConfigError(f"clients per round must be positive, got {count}")
    return _draw(client_ids, count, numpy_rng(seed, rnd, "sample"))


def _draw(client_ids: Sequence[PartyId], count: int, rng: np.random.Generator
          ) -> list[PartyId]:
    """``count`` of ``client_ids`` drawn by ``rng`` without replacement, in their order; all
    of them (no draw) when ``count`` is at least their number."""
    n = len(client_ids)
    if count >= n:
        return list(client_ids)
    return [client_ids[i] for i in sorted(rng.choice(n, count, replace=False).tolist())]


def fixed_subset(client_ids: Sequence[PartyId], count: int, seed: int, stream: str
                 ) -> list[PartyId]:
    """``count`` of ``client_ids``, read as :func:`cohort_size` reads ``clients_per_round`` (0:
    all of them; more than there are: all), drawn once from the run's ``seed`` on a ``stream``
    of its own, in the order of ``client_ids``: the same clients every time, on every engine,
    and the training cohorts' draws untouched (the clients an evaluation asks when not all
    are)."""
    return _draw(client_ids, cohort_size(count, len(client_ids)), numpy_rng(seed, stream))


def poisson_cohort(client_ids: Sequence[PartyId], rate: float, seed: int,
                   rnd: int) -> list[PartyId]:
    """Round ``rnd``'s Poisson cohort: each of ``client_ids`` independently with probability
    ``rate``, from the run ``seed`` (in the order of ``client_ids``). The sampler of a DP run:
    the accountant's amplification by sampling assumes exactly this draw
    (:mod:`fedrec.privacy.user_level`)."""
    if not 0.0 < rate <= 1.0:
        raise ConfigError(f"Poisson sampling rate must be in (0, 1], got {rate}")
    if rate == 1.0:
        return list(client_ids)
    keep = numpy_rng(seed, rnd, "poisson-sample").random(len(client_ids)) < rate
    return [c for c, k in zip(client_ids, keep.tolist(), strict=True) if k]


def cohort_chunks(sizes: np.ndarray, budget: int, waste: float = 1.5) -> list[np.ndarray]:
    """A cohort's positions grouped (sorted by size) for padded, vectorised client work: each
    group has ``len * max_size <= budget`` (memory) and at most ``waste`` times as many padded
    slots as real ones (plus a small slack), so a few large clients do not pad every small one.
    Client computations are row-independent: the grouping changes a client's result at most by
    float rounding (a padded reduction may sum in another order)."""
    order = np.argsort(sizes, kind="stable")
    out, cur, total = [], [], 0
    for i in order.tolist():
        k = max(int(sizes[i]), 1)
        padded = (len(cur) + 1) * k
        if cur and (padded > budget or padded > waste * (total + k) + 256):
            out.append(np.asarray(cur))
            cur, total = [], 0
        cur.append(i)
        total += k
    if cur:
        out.append(np.asarray(cur))
    return out


class InProcessRuntime(Runtime):
    """The simulator: every party lives in this process; messages are metered, not copied.

    ``seed`` keys what is public (client sampling, simulated dropouts); ``client_secrets`` (the
    experimenter's root, fresh entropy by default) keys every other party's private draws and is
    held in a private attribute that only :meth:`_context` reads: the orchestrator is given the
    :class:`Runtime` interface, which has no way to it. ``parties``: every party it hosts (a
    job's :attr:`~fedrec.algorithms.base.FederatedJob.parties`; :func:`declare_parties` makes
    them for one client per user)."""

    def __init__(
        self,
        *,
        parties: Sequence[Party],
        seed: int = 0,
        dropout: float = 0.0,
        dropout_after_calls: int = 0,
        device: str | torch.device = "cpu",
        client_secrets: ClientSecrets | None = None,
    ) -> None:
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {dropout}")
        if dropout_after_calls < 0:
            raise ConfigError(f"dropout_after_calls must be >= 0, got {dropout_after_calls}")
        check_parties(parties)
        self._parties = {p.id: p for p in parties}
        self._client_ids = [p.id for p in parties if p.role == CLIENT]
        self._client_data = {p.id: p.data for p in parties if p.role == CLIENT}
        #: One party per service role, for ids that name the role without being declared
        #: (``"aggregator/2"`` reaches the ``"aggregator"`` party's logic and data).
        self._service_of_role = {p.role: p for p in parties if p.role != CLIENT}
        self.seed = seed
        self.dropout = dropout
        self.dropout_after_calls = dropout_after_calls
        self.device = torch.device(device)
        self.__secrets = client_secrets or ClientSecrets()
        self.__party_secrets: dict[PartyId, PartySecret] = {}
        self.server_secret = self.__secrets.for_service(SERVER).party(SERVER)
        self.ledger = CommunicationLedger()
        self.observers: list[Observer] = []
        self.states: dict[PartyId, dict[str, Any]] = {}
        self._inbox: dict[PartyId, list[Message]] = defaultdict(list)
        self._drop_after: dict[PartyId, int] = {}
        self._calls_answered: dict[PartyId, int] = defaultdict(int)
        self.round = 0

    # -- parties -----------------------------------------------------------------------------
    @property
    def client_ids(self) -> list[PartyId]:
        return self._client_ids

    def _party(self, party: PartyId) -> Party:
        found = self._parties.get(party)
        if found is None and not isinstance(party, int):
            found = self._service_of_role.get(role_of(party))
        if found is None:
            raise ConfigError(f"unknown client {party}" if isinstance(party, int)
                              else f"unknown party {party!r}")
        return found

    def role(self, party: PartyId) -> str:
        """The role of ``party`` (the server's, a declared party's, an undeclared id's)."""
        return party if party in (SERVER, EXPERIMENTER) else self._party(party).role

    def begin_round(self, rnd: int) -> None:
        """Draw this round's dropouts: each client drops with probability ``dropout``; a dropped
        client answers its first ``dropout_after_calls`` calls of the round (0: none; 2, say, to
        vanish after the key exchange of secure aggregation), then goes silent."""
        self.round = rnd
        self._calls_answered.clear()
        self._drop_after = {}
        if self.dropout > 0:
            rng = numpy_rng(self.seed, rnd, "dropout")
            drops = rng.random(len(self._client_ids)) < self.dropout
            dropped = [c for c, d in zip(self._client_ids, drops.tolist(), strict=True) if d]
            self._drop_after = dict.fromkeys(dropped, self.dropout_after_calls)

    def drop(self, client: PartyId, after_calls: int = 0) -> None:
        """Make ``client`` go silent this round after answering ``after_calls`` more calls."""
        self._drop_after[client] = self._calls_answered[client] + after_calls

    def sample_clients(self, count: int, among: Sequence[PartyId] | None = None
                       ) -> list[PartyId]:
        pool = self._client_ids if among is None else among
        return sample_cohort(pool, count, self.seed, self.round)

    # -- messaging ---------------------------------------------------------------------------
    def _deliver(self, msg: Message, finite: bool | None = None) -> bool:
        """Meter ``msg``; reject it if it carries NaN/Inf. Returns whether it was delivered."""
        self.ledger.record(msg)
        if not (all_finite(msg.payload) if finite is None else finite):
            self.ledger.reject(msg, "non-finite values")
            return False
        for obs in self.observers:
            obs(msg)
        return True

    def _context(self, party: PartyId, step: str, broadcast: bool = False) -> PartyContext:
        declared = self._party(party)
        role, logic, data = declared.role, declared.logic, declared.data
        # Clients derive from the root; a service from its own root (what its node is given).
        root = self.__secrets if role == CLIENT else self.__secrets.for_service(role)
        secret = self.__party_secrets.get(party)
        if secret is None:
            secret = self.__party_secrets[party] = root.party(party)
        if party not in self.states:
            self.states[party] = logic.init_state(party, data, secret)
        inbox = self._inbox.pop(party, [])
        return PartyContext(
            party=party, data=data, state=self.states[party], round=self.round, step=step,
            secret=secret, role_secret=root.role(role), inbox=inbox, device=self.device,
            broadcast=broadcast,
        )

    def _responsive(self, party: PartyId) -> bool:
        if party not in self._drop_after:  # only clients drop out
            return True
        return self._calls_answered[party] < self._drop_after[party]

    def gather(self, step: str, targets: Sequence[PartyId], payload: Payload,
               add: Callable[[PartyId, Payload], None], *, chunk: int = 0,
               sender: PartyId = SERVER) -> list[PartyId]:
        """:meth:`Runtime.gather` in parts of ``chunk`` targets: each part's replies are handed
        to ``add`` before the next part runs. A cohort step's output for each party depends on
        that party alone (the conformance contract), so the parts change no reply beyond the
        float rounding a method's contract declares."""
        targets = list(targets)
        size = chunk if chunk > 0 else max(len(targets), 1)
        replied: list[PartyId] = []
        for start in range(0, len(targets), size):
            part = targets[start:start + size]
            replies = self._send(step, dict.fromkeys(part, payload), sender=sender,
                                 broadcast=True)
            for party, reply in replies.items():
                add(party, reply)
                replied.append(party)
        return replied

    def _send(self, step: str, requests: Mapping[PartyId, Payload], *, sender: PartyId,
              broadcast: bool) -> dict[PartyId, Payload]:
        replies: dict[PartyId, Payload] = {}
        groups: dict[str, list[tuple[PartyId, Payload]]] = defaultdict(list)
        # Broadcasts share one payload object: size and check it once, not once per target.
        cache: dict[int, tuple[int, bool]] = {}
        sender_role = self.role(sender)
        for party, payload in requests.items():
            role = self._party(party).role
            if id(payload) not in cache:
                cache[id(payload)] = (payload_size(payload), all_finite(payload))
            nbytes, finite = cache[id(payload)]
            msg = Message(sender, party, step, self.round, payload, nbytes, sender_role, role)
            if not self._deliver(msg, finite):
                continue
            if self._responsive(party):
                groups[role].append((party, payload))
        for role, items in groups.items():
            logic = self._party(items[0][0]).logic
            ctxs = [self._context(p, step, broadcast) for p, _ in items]
            outs = logic.handle_cohort(step, ctxs, [pl for _, pl in items])
            for (party, _), out in zip(items, outs, strict=True):
                if role == CLIENT:
                    self._calls_answered[party] += 1
                self._route(step, party, sender, out, replies)
        return replies

    def _route(
        self, step: str, party: PartyId, caller: PartyId, out: Outgoing, replies: dict
    ) -> None:
        if out is None:
            return
        targets = out.to if isinstance(out, Routed) else {caller: out}
        for receiver, payload in targets.items():
            msg = Message(party, receiver, step, self.round, payload,
                          sender_role=self.role(party), receiver_role=self.role(receiver))
            if not self._deliver(msg):
                continue
            if receiver == caller:
                replies[party] = payload
            else:
                self._inbox[receiver].append(msg)

    # -- checkpointing -----------------------------------------------------------------------
    @property
    def reproducible(self) -> bool:
        """Whether the parties' private draws come from a root the experimenter gave."""
        return self.__secrets.given

    def state_dict(self) -> dict[str, Any]:
        """The simulated parties' states, the ledger and -- since a resumed run must draw what
        the uninterrupted one would -- the clients' root secret. A checkpoint therefore holds
        every simulated party's private state: it is the experimenter's, never the server's."""
        return {"states": pack_states(self.states), "ledger": self.ledger.state_dict(),
                "client_secret": self.__secrets.root_bytes(), "secret_given": self.__secrets.given}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        root = state["client_secret"]
        if self.__secrets.given and root != self.__secrets.root_bytes():
            raise ConfigError("--resume: the client secret differs from the checkpoint's")
        self.__secrets = ClientSecrets(root)
        self.__secrets.given = bool(state.get("secret_given", True))
        self.__party_secrets = {}
        self.server_secret = self.__secrets.for_service(SERVER).party(SERVER)
        self.states = unpack_states(state["states"])
        self.ledger.load_state_dict(state["ledger"])


def seed_everything(seed: int) -> None:
    """Seed torch's global generator (for code outside the runtime's keyed generators) and ask
    for deterministic kernels: multi-threaded CPU ``index_put_(accumulate=True)`` (the backward
    of row indexing) otherwise adds rows in a varying order, and a resumed run would differ from
    an uninterrupted one in the last bits."""
    torch.manual_seed(derive_seed(seed, "global"))
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
