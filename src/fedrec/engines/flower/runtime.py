"""``FlowerRuntime``: the :class:`~fedrec.federation.runtime.Runtime` of a ServerApp.

The orchestrator (an algorithm's :meth:`ServerLogic.run_round`) calls :meth:`FlowerRuntime.call`
exactly as it calls the simulator's. Here a call

1. meters every request in the :class:`~fedrec.federation.ledger.CommunicationLedger` (exact
   codec size, as the simulator does) and refuses non-finite ones;
2. sends **one Flower message per SuperNode** holding the requests of the parties that node
   hosts (a broadcast payload is encoded once), plus the sealed mail waiting for them;
3. waits for the replies (``call_timeout``; once a reply is in, at most ``straggler_timeout``
   more seconds for the others). A node that does not answer in time (killed, crashed, cut off)
   is absent from the replies -- exactly a dropout in the simulator -- and is not asked again;
   a node that hosts a service (a party of another role than client that is not co-located
   with clients: Feras's aggregation server, FedGNN's third party) is no dropout: the run
   stops with a :class:`~fedrec.errors.ProtocolError` naming that party (the simulator never
   loses one);
4. decodes and meters each reply, rejects non-finite ones, and keeps each sealed routed message
   (client -> third party, a view -> its device, ...) as ciphertext in the receiver's mailbox
   until that receiver is next called, even when both live on one SuperNode (a co-located
   party, :mod:`fedrec.engines.flower.node`). The ServerApp never holds a routed payload in the
   clear.

A SuperNode's setup reply names its parties (of its role) and the parties co-located with its
clients (``guests``, each with its role); each is then reached on that node.

Replies are returned in the simulator's order (by role in order of first appearance, then in
request order), so that an orchestrator summing them adds the same numbers in the same order.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fedrec.core.codec import Payload, all_finite, payload_size
from fedrec.engines import wire
from fedrec.engines.flower.envelope import HELLO, MESSAGE_TYPE, from_content, to_content, wire_size
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import CLIENT, SERVER, Message, PartyId, role_of
from fedrec.federation.runtime import Observer, Runtime, sample_cohort
from fedrec.federation.secrets import ROOT_BYTES, PartySecret

Log = Callable[[str], None]


@dataclass
class Mail:
    """A sealed routed message waiting at the relay for its receiver."""

    sender: PartyId
    receiver: PartyId
    step: str
    round: int
    ciphertext: bytes


@dataclass
class WireStats:
    """Flower-level traffic (serialised message objects), by round: setup is round 0."""

    sent: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    received: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    messages: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def to_dict(self) -> dict[str, dict[int, int]]:
        return {"sent": dict(self.sent), "received": dict(self.received),
                "messages": dict(self.messages)}


class FlowerRuntime(Runtime):
    """Runs protocol steps on SuperNodes through a Flower ``Grid``. The timeouts have no
    defaults here: they are the run's options (:class:`fedrec.options.RunOptions`, stated
    there), which the ServerApp reads from its run config."""

    def __init__(
        self,
        grid: Any,
        *,
        seed: int,
        expected_nodes: int,
        connect_timeout: float,
        call_timeout: float,
        straggler_timeout: float,
        poll_interval: float = 0.2,
        log: Log | None = None,
    ) -> None:
        self.grid = grid
        self.seed = seed
        self.expected_nodes = expected_nodes
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.straggler_timeout = straggler_timeout
        self.poll_interval = poll_interval
        self.log = log or (lambda _m: None)
        self.ledger = CommunicationLedger()
        self.wire = WireStats()
        self.observers: list[Observer] = []
        # The ServerApp's own secret: fresh, held by this process only (see Runtime).
        self.server_secret = PartySecret(os.urandom(ROOT_BYTES))
        self.round = 0
        self.node_of: dict[PartyId, int] = {}
        #: Each hosted party's role, as its SuperNode reports it.
        self.role_of_party: dict[PartyId, str] = {}
        self.meta: dict[str, Any] | None = None
        self.dead: set[int] = set()
        self.errors: list[str] = []
        self._client_ids: list[PartyId] = []
        self._directory: dict[str, Any] = {}
        self._told_directory: set[int] = set()
        self._mail: dict[PartyId, list[Mail]] = defaultdict(list)
        #: Parties of another role than client that live on a node of their own (not guests).
        self.services: set[PartyId] = set()

    # -- setup -------------------------------------------------------------------------------
    def connect(self) -> None:
        """Wait for ``expected_nodes`` SuperNodes, learn which parties each hosts (and their
        public keys and the public dataset metadata)."""
        start = time.monotonic()
        while True:
            nodes = sorted(self.grid.get_node_ids())
            if len(nodes) >= self.expected_nodes:
                break
            if time.monotonic() - start > self.connect_timeout:
                raise ProtocolError(
                    f"only {len(nodes)} of {self.expected_nodes} SuperNodes connected within "
                    f"{self.connect_timeout:.0f} s")
            time.sleep(self.poll_interval)
        replies = self._exchange({n: to_content({"kind": HELLO}, {}) for n in nodes}, 0)
        keys: list[list[Any]] = []
        metas = []
        guests: set[PartyId] = set()
        for node in nodes:
            if node not in replies:
                raise ProtocolError(f"SuperNode {node} did not answer the setup message")
            header, _ = replies[node]
            hosted = [(p, str(header["role"])) for p in header["parties"]]
            for party, role in hosted + [(p, str(r)) for p, r in header.get("guests", [])]:
                if party in self.node_of:
                    raise ProtocolError(f"party {party!r} is hosted by two SuperNodes")
                if role == CLIENT and party not in header["parties"]:
                    raise ProtocolError(f"SuperNode {node} names client {party!r} a guest")
                self.node_of[party] = node
                self.role_of_party[party] = role
            guests.update(p for p, _ in header.get("guests", []))
            keys += header["keys"]
            if header.get("meta") is not None:
                metas.append(header["meta"])
        if not metas or any(m != metas[0] for m in metas):
            raise ProtocolError("the SuperNodes disagree on the dataset (or none holds data)")
        self.meta = metas[0]
        # Sorted until the job gives its own order (adopt_clients); ints before names.
        self._client_ids = sorted((p for p, r in self.role_of_party.items() if r == CLIENT),
                                  key=lambda p: (isinstance(p, str), p))
        self._directory = {"meta": self.meta, "clients": self._client_ids, "keys": keys,
                           "roles": [[p, r] for p, r in self.role_of_party.items()]}
        self.services = {p for p, r in self.role_of_party.items()
                         if r != CLIENT and p not in guests}
        self.log(f"connected: {len(nodes)} SuperNodes, {len(self._client_ids)} clients, "
                 f"services {sorted(map(str, self.services))}, {len(guests)} parties "
                 "co-located with clients")

    def adopt_clients(self, client_ids: Sequence[PartyId]) -> None:
        """Take the clients in the order the job (built from the public metadata) declares them,
        which is the simulator's order (cohorts are drawn from it); the SuperNodes must host
        exactly these clients."""
        if len(set(client_ids)) != len(client_ids) or set(client_ids) != set(self._client_ids):
            raise ProtocolError("the SuperNodes host other clients than the job declares")
        self._client_ids = list(client_ids)
        self._directory["clients"] = self._client_ids

    def _role(self, party: PartyId) -> str:
        return SERVER if party == SERVER else self.role_of_party.get(party, role_of(party))

    # -- Runtime interface -------------------------------------------------------------------
    @property
    def client_ids(self) -> list[PartyId]:
        return self._client_ids

    def begin_round(self, rnd: int) -> None:
        self.round = rnd

    def sample_clients(self, count: int, among: Sequence[PartyId] | None = None
                       ) -> list[PartyId]:
        # The simulator's draw: same seed, same cohort.
        pool = self._client_ids if among is None else among
        return sample_cohort(pool, count, self.seed, self.round)

    def _deliver(self, msg: Message, finite: bool) -> bool:
        self.ledger.record(msg)
        if not finite:
            self.ledger.reject(msg, "non-finite values")
            return False
        for obs in self.observers:
            obs(msg)
        return True

    def _send(self, step: str, requests: Mapping[PartyId, Payload], *, sender: PartyId,
              broadcast: bool) -> dict[PartyId, Payload]:
        per_node: dict[int, list[tuple[PartyId, Payload]]] = defaultdict(list)
        sent_order: list[PartyId] = []
        cache: dict[int, tuple[int, bool]] = {}
        sender_role = self._role(sender)
        for party, payload in requests.items():
            if party not in self.node_of:
                raise ConfigError(f"unknown party {party!r}")
            if id(payload) not in cache:
                cache[id(payload)] = (payload_size(payload), all_finite(payload))
            nbytes, finite = cache[id(payload)]
            msg = Message(sender, party, step, self.round, payload, nbytes, sender_role,
                          self._role(party))
            if not self._deliver(msg, finite):
                continue
            node = self.node_of[party]
            if node in self.dead:
                continue
            per_node[node].append((party, payload))
            sent_order.append(party)
        contents = {node: self._request(step, sender, items, broadcast)
                    for node, items in per_node.items()}
        answers = self._exchange(contents, self.round)
        for node in per_node:
            if node not in answers and node not in self.dead:
                self.dead.add(node)
                self._refuse_lost_service(node, step)
                self.log(f"round {self.round} {step}: SuperNode {node} did not answer; its "
                         "parties are absent from now on")
        # Unpack per party, then route in the simulator's order.
        out: dict[PartyId, tuple[Payload | None, list[list[Any]]]] = {}
        for header, blobs in answers.values():
            for party, key in header["replies"]:
                out[party] = (wire.unpack(blobs[key], header["schemas"][key]), [])
            for party, receiver, nbytes, key in header["routed"]:
                out.setdefault(party, (None, []))[1].append([receiver, nbytes, blobs[key]])
            for party, reason in header.get("rejected_mail", []):
                self.ledger.reject(Message(party, party, step, self.round, {}, 0), reason)
        roles: dict[str, list[PartyId]] = defaultdict(list)
        for party in sent_order:
            roles[self._role(party)].append(party)
        replies: dict[PartyId, Payload] = {}
        for parties in roles.values():
            for party in parties:
                if party not in out:
                    continue
                payload, routed = out[party]
                if payload is not None:
                    msg = Message(party, sender, step, self.round, payload,
                                  sender_role=self._role(party), receiver_role=sender_role)
                    if self._deliver(msg, all_finite(payload)):
                        replies[party] = payload
                for receiver, nbytes, ct in routed:
                    # Metered at its plaintext codec size (what the simulator meters); the relay
                    # cannot check finiteness: the receiver does, and reports rejections.
                    self.ledger.record(Message(party, receiver, step, self.round, {}, nbytes,
                                               self._role(party), self._role(receiver)))
                    self._mail[receiver].append(Mail(party, receiver, step, self.round, ct))
        return replies

    def _refuse_lost_service(self, node: int, step: str) -> None:
        """ProtocolError naming the services (:attr:`services`) that SuperNode ``node``, which
        did not answer ``step``, hosts: a lost client is a dropout, a lost service ends the run
        (its hosts or clients would otherwise be blamed for the silence that follows)."""
        lost = sorted((p for p in self.services if self.node_of.get(p) == node), key=str)
        if not lost:
            return
        named = " and ".join(
            f"the {role}" if p == role else f"the {role} {p!r}"
            for p, role in ((p, str(self.role_of_party[p])) for p in lost))
        raise ProtocolError(
            f"round {self.round}, step {step!r}: SuperNode {node}, which hosts {named}, did not "
            "answer (killed, crashed or cut off); the run cannot go on without it")

    # -- transport ---------------------------------------------------------------------------
    def _request(self, step: str, sender: PartyId, items: list[tuple[PartyId, Payload]],
                 broadcast: bool) -> Any:
        blobs: dict[str, bytes] = {}
        schemas: dict[str, Any] = {}
        keys: dict[int, str] = {}
        targets = []
        mail = []
        for party, payload in items:
            if id(payload) not in keys:
                key = f"p{len(keys)}"
                keys[id(payload)] = key
                blobs[key], schemas[key] = wire.pack(payload)
            targets.append([party, keys[id(payload)]])
            for m in self._mail.pop(party, []):
                key = f"m{len(mail)}"
                blobs[key] = m.ciphertext
                mail.append([m.receiver, m.sender, m.step, m.round, key])
        header: dict[str, Any] = {"kind": "step", "step": step, "round": self.round,
                                  "caller": sender, "targets": targets, "schemas": schemas,
                                  "mail": mail, "broadcast": broadcast}
        node = self.node_of[items[0][0]]
        if node not in self._told_directory:
            header["directory"] = self._directory
            self._told_directory.add(node)
        return node, header, blobs

    def _exchange(self, contents: dict[int, Any], rnd: int
                  ) -> dict[int, tuple[dict[str, Any], dict[str, bytes]]]:
        from flwr.app import Message as FlowerMessage

        msgs = []
        for node, content in contents.items():
            if isinstance(content, tuple):
                _, header, blobs = content
                content = to_content(header, blobs)
            msg = FlowerMessage(content, node, MESSAGE_TYPE, group_id=str(rnd))
            self.wire.sent[rnd] += wire_size(msg)
            self.wire.messages[rnd] += 1
            msgs.append(msg)
        if not msgs:
            return {}
        ids = list(self.grid.push_messages(msgs))
        node_of_msg = {mid: m.metadata.dst_node_id for mid, m in zip(ids, msgs, strict=True)}
        pending = set(ids)
        answers: dict[int, tuple[dict[str, Any], dict[str, bytes]]] = {}
        start = last = time.monotonic()
        while pending:
            for rep in self.grid.pull_messages(list(pending)):
                mid = rep.metadata.reply_to_message_id
                if mid not in pending:
                    continue
                pending.discard(mid)
                last = time.monotonic()
                node = node_of_msg[mid]
                self.wire.received[rnd] += wire_size(rep)
                self.wire.messages[rnd] += 1
                if rep.has_error():
                    err = f"round {rnd}: SuperNode {node} failed: {rep.error.reason}"
                    self.errors.append(err)
                    self.log(err)
                    continue
                answers[node] = from_content(rep.content)
            if not pending:
                break
            now = time.monotonic()
            if now - start > self.call_timeout:
                break
            if self.straggler_timeout > 0 and answers and now - last > self.straggler_timeout:
                break
            time.sleep(self.poll_interval)
        return answers
