"""The ClientApp: a SuperNode runs the protocol steps of the parties it hosts.

A SuperNode is started with ``--node-config``:

* ``role="client"`` (default), ``partition-id=i``, ``num-partitions=n``, ``data-dir="..."``: it
  loads the dataset from *its own* data directory, builds the algorithm's job on it and hosts
  the ``i``-th of ``n`` contiguous shares of the clients the job declares, in the job's order
  (one client per user for a recommendation algorithm, one per host of a graph for
  ``fedavg-gcn``: :attr:`~fedrec.algorithms.base.FederatedJob.parties`), and every party
  *co-located* with one of them (below);
* ``role="third_party"`` (or any other service role of the algorithm): it hosts that party,
  holds no data, and builds the service's logic from the public metadata the server relays;
* ``client-secret-file="PATH"`` (optional, any role): a file only its owner may read (mode
  0600; one readable by others is refused) holding, in hex, the root of its parties' private
  randomness (:mod:`fedrec.federation.secrets`); how ``fedrec deploy`` gives it, since a node
  config on the command line is visible to every local user. ``client-secret="HEX"`` gives the
  root itself, for a node config that never is on a command line (the simulation's and the
  in-memory grid's). Without either the node draws fresh OS entropy once. Nodes given the same
  root draw exactly what the simulator draws with it.

**Co-located parties.** A party declared with a ``host`` (:class:`~fedrec.federation.runtime.
Party`; FL-MV-DSSM's views, apps on their user's device) runs on the SuperNode that hosts its
host client, on the party's share of the data that node loaded from its own data directory,
never on a node of its own (:attr:`~fedrec.algorithms.base.FederatedJob.service_roles` leaves its
role out). It stays a party of its own: the setup reply names it (``guests``, with its role) and
its own public key; it gets its own state in ``Context.state`` and its own secret, derived from
the node's root exactly as the simulator derives it (``root.for_service(role).party(id)``), and
a step hands it only its own data, state and inbox. Nothing passes between it and its host (or
any other party) inside the node: its routed outputs are sealed for their receiver and go to the
ServerApp's relay like all routed mail, which meters them and hands them over on the receiver's
next request. So the server sees and meters every such message as the simulator does, and, as
for every routed message on this engine, sees only its ciphertext. A request for parties of
several roles runs one cohort call per role, in the order the roles first appear (the
simulator's).

On every message the node builds the algorithm's job with the algorithm's own ``build_job`` (no
second copy of any algorithm), restores its parties' persistent state from Flower's
``Context.state`` (``torch.save`` bytes; Flower keeps it across rounds), runs
:meth:`~fedrec.federation.runtime.PartyLogic.handle_cohort` for the targeted parties with the
same :class:`~fedrec.federation.runtime.PartyContext` the simulator builds (private randomness
keyed by the party's secret, round and step), opens the sealed mail addressed to them into
their inbox, and replies with codec bytes; routed outputs are sealed for their receivers.
"""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedrec.core.codec import all_finite
from fedrec.engines import wire
from fedrec.engines.common import (
    load_sliced,
    metadata_dataset,
    node_meta,
    resolve,
)
from fedrec.engines.flower.deploy import SECRET_FILE_KEY, SECRET_KEY, decode_config
from fedrec.engines.flower.envelope import HELLO, STYPE, from_content, to_content
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.message import CLIENT, Message, PartyId
from fedrec.federation.runtime import Party, PartyContext, Routed, seed_everything
from fedrec.federation.secrets import ClientSecrets

STATE_KEY = "fedrec"
STATES_KEY = "fedrec_states"


def node_share(client_ids: Sequence[PartyId], partition_id: int,
               num_partitions: int) -> list[PartyId]:
    """The ``partition_id``-th of ``num_partitions`` contiguous shares of the ids, in their
    order (a job declares one client per user in user-id order)."""
    if not 0 <= partition_id < num_partitions:
        raise ConfigError(f"partition-id {partition_id} is not in [0, {num_partitions})")
    positions = np.array_split(np.arange(len(client_ids)), num_partitions)[partition_id]
    return [client_ids[i] for i in positions.tolist()]


def node_secret(node_config: dict[str, Any]) -> ClientSecrets:
    """The root secret of a node's parties: read from the owner-only file its node config names
    (``client-secret-file``), else its ``client-secret`` (hex), else fresh entropy (module
    docstring). A named file that is missing, readable by group or others, or not hex is an
    error, never fresh entropy: the run would silently draw other secrets."""
    path = str(node_config.get(SECRET_FILE_KEY, ""))
    if not path:
        return ClientSecrets.from_hex(str(node_config.get(SECRET_KEY, "")))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ConfigError(f"cannot read the client secret file {path}: {exc}") from None
    with os.fdopen(fd) as f:
        if stat.S_IMODE(os.fstat(f.fileno()).st_mode) & 0o077:
            raise ConfigError(f"the client secret file {path} is readable by others "
                              f"(chmod 600 {Path(path).name})")
        text = f.read().strip()
    if not text:
        raise ConfigError(f"the client secret file {path} is empty")
    return ClientSecrets.from_hex(text)


class NodeHost:
    """One message's worth of work on a SuperNode (Flower starts a process per message)."""

    def __init__(self, run_config: dict[str, Any], node_config: dict[str, Any],
                 state: Any) -> None:
        self.rc = run_config
        self.nc = node_config
        self.state = state  # Flower's Context.state (a RecordDict), persistent across messages
        self.role = str(node_config.get("role", "client"))
        self.spec, self.cfg = resolve(str(run_config["algorithm"]), str(run_config["dataset"]),
                                      None, decode_config(str(run_config["config"])))

    # -- persistent node state ---------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        if STATE_KEY not in self.state:
            return {}
        return json.loads(str(self.state[STATE_KEY]["info"]))

    def _save_info(self, info: dict[str, Any]) -> None:
        from flwr.app import ConfigRecord

        self.state[STATE_KEY] = ConfigRecord({"info": json.dumps(info)})

    def _load_states(self) -> dict[PartyId, dict[str, Any]]:
        if STATES_KEY not in self.state:
            return {}
        raw = bytes(self.state[STATES_KEY]["blob"].data)
        # The node's own bytes, written by this code: a full (not weights-only) unpickle.
        return torch.load(io.BytesIO(raw), weights_only=False)

    def _save_states(self, states: dict[PartyId, dict[str, Any]]) -> None:
        from flwr.app import Array, ArrayRecord

        buf = io.BytesIO()
        torch.save(states, buf)
        raw = buf.getvalue()
        self.state[STATES_KEY] = ArrayRecord(
            {"blob": Array(dtype="uint8", shape=(len(raw),), stype=STYPE, data=raw)})

    # -- data and logic ----------------------------------------------------------------------
    def _dataset(self):
        max_users = int(self.rc.get("max-users", 0)) or None
        return load_sliced(str(self.rc["dataset"]), str(self.nc["data-dir"]), max_users)

    def _build_job(self, ds: Any) -> Any:
        seed_everything(self.cfg.seed)
        return self.spec.build_job(self.cfg, ds, torch.device("cpu"))

    def _hello(self) -> dict[str, Any]:
        meta = None
        guests: list[list[Any]] = []
        if self.role == CLIENT:
            ds = self._dataset()
            job = self._build_job(ds)
            meta = node_meta(ds, job)
            parties: list[PartyId] = node_share(
                job.client_ids, int(self.nc.get("partition-id", 0)),
                int(self.nc.get("num-partitions", 1)))
            # The parties co-located with our clients live here too (module docstring).
            mine = set(parties)
            guests = [[p.id, p.role] for p in job.parties if p.host is not None and p.host in mine]
        else:
            parties = [self.role]
        everyone = parties + [p for p, _ in guests]
        keys = {str(p): wire.PartyKeys() for p in everyone}
        # The root of this node's parties' private randomness: named by the node's own
        # configuration (the experimenter gives it to the clients' side only), else fresh
        # entropy. Never the run config, which the ServerApp reads.
        secret = node_secret(self.nc)
        self._save_info({"parties": everyone, "guests": guests,
                         "secret": secret.root_bytes().hex(),
                         "private": {p: k.private_bytes().hex() for p, k in keys.items()}})
        return {"parties": parties, "role": self.role, "meta": meta, "guests": guests,
                "keys": [[p, keys[str(p)].public_bytes.hex()] for p in everyone]}

    def _job(self, directory: dict[str, Any], hosted: set[PartyId]) -> dict[PartyId, Party]:
        """The job's parties this node hosts, by id: its clients and the parties co-located with
        them, built from this node's own data, or its service's party, built from the public
        metadata the server relays."""
        if self.role == CLIENT:
            job = self._build_job(self._dataset())
            return {p.id: p for p in job.parties if p.id in hosted}
        job = self._build_job(metadata_dataset(directory["meta"], directory["clients"]))
        parties = job.parties_of(self.role)
        if not parties:
            raise ConfigError(f"{self.spec.name} has no party of role {self.role!r}")
        return {p.id: p for p in parties}

    # -- one step ----------------------------------------------------------------------------
    def handle(self, header: dict[str, Any], blobs: dict[str, bytes]
               ) -> tuple[dict[str, Any], dict[str, bytes]]:
        if header["kind"] == HELLO:
            return self._hello(), {}
        info = self._info()
        if "directory" in header:
            info["directory"] = header["directory"]
            self._save_info(info)
        directory = info["directory"]
        public = {p: bytes.fromhex(h) for p, h in directory["keys"]}
        role_of_party = {p: r for p, r in directory["roles"]}
        private = {p: wire.PartyKeys.from_private_bytes(bytes.fromhex(h))
                   for p, h in info["private"].items()}
        step, rnd, caller = header["step"], int(header["round"]), header["caller"]
        # A broadcast is one payload (one blob) for every target, and the header says so.
        broadcast = bool(header["broadcast"])
        if broadcast and len({k for _, k in header["targets"]}) != 1:
            raise ProtocolError(f"broadcast of {step!r} carries more than one payload")
        hosted = set(info["parties"])
        mine = self._job(directory, hosted)
        states = self._load_states()

        # Mail: sealed routed messages for our parties, opened into their inboxes.
        inbox: dict[PartyId, list[Message]] = {}
        rejected = []
        for receiver, sender, m_step, m_round, key in header["mail"]:
            if receiver not in hosted:
                raise ProtocolError(f"mail for {receiver!r} reached the wrong SuperNode")
            payload = wire.open_sealed(blobs[key], private[str(receiver)], public[sender],
                                       sender=sender, receiver=receiver, step=m_step, rnd=m_round)
            if not all_finite(payload):
                rejected.append([sender, "non-finite values (rejected by the receiver)"])
                continue
            inbox.setdefault(receiver, []).append(
                Message(sender, receiver, m_step, m_round, payload,
                        sender_role=role_of_party.get(sender, ""),
                        receiver_role=role_of_party.get(receiver, self.role)))

        decoded = {k: wire.unpack(blobs[k], s) for k, s in header["schemas"].items()}
        parties = [p for p, _ in header["targets"]]
        if any(p not in hosted for p in parties):
            raise ProtocolError("a request reached the wrong SuperNode")
        secrets = ClientSecrets(bytes.fromhex(info["secret"]))
        # A party of another role than the node's (co-located with a client) draws from that
        # role's service root, derived from the node's root as the simulator derives it.
        roots = {self.role: secrets}
        # One cohort call per role, in the order the roles first appear (the simulator's).
        groups: dict[str, list[tuple[PartyId, PartyContext, Any]]] = {}
        for party, key in header["targets"]:
            if party not in mine:
                raise ProtocolError(f"the job declares no party {party!r} here")
            declared = mine[party]
            role = declared.role
            if role not in roots:
                roots[role] = secrets.for_service(role)
            root = roots[role]
            secret = root.party(party)
            if party not in states:
                states[party] = declared.logic.init_state(party, declared.data, secret)
            ctx = PartyContext(
                party=party, data=declared.data, state=states[party], round=rnd, step=step,
                secret=secret, role_secret=root.role(role), inbox=inbox.pop(party, []),
                device=torch.device("cpu"), broadcast=broadcast)
            groups.setdefault(role, []).append((party, ctx, decoded[key]))
        results: dict[PartyId, Any] = {}
        for items in groups.values():
            logic = mine[items[0][0]].logic
            outs = logic.handle_cohort(step, [c for _, c, _ in items], [x for _, _, x in items])
            results.update({p: out for (p, _, _), out in zip(items, outs, strict=True)})
        outs = [results[p] for p in parties]
        self._save_states(states)

        replies, routed, schemas, out_blobs = [], [], {}, {}
        for party, out in zip(parties, outs, strict=True):
            if out is None:
                continue
            targets = out.to if isinstance(out, Routed) else {caller: out}
            for receiver, payload in targets.items():
                key = f"b{len(out_blobs)}"
                if receiver == caller:
                    out_blobs[key], schemas[key] = wire.pack(payload)
                    replies.append([party, key])
                else:
                    if receiver not in public:
                        raise ProtocolError(f"no public key for {receiver!r}")
                    out_blobs[key], nbytes = wire.seal(
                        payload, private[str(party)], public[receiver], sender=party,
                        receiver=receiver, step=step, rnd=rnd)
                    routed.append([party, receiver, nbytes, key])
        return ({"replies": replies, "routed": routed, "schemas": schemas,
                 "rejected_mail": rejected}, out_blobs)


def _make_client_app():
    from flwr.app import Context
    from flwr.app import Message as FlowerMessage
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.query()
    def query(msg: FlowerMessage, context: Context) -> FlowerMessage:
        torch.set_num_threads(1)
        header, blobs = from_content(msg.content)
        host = NodeHost(dict(context.run_config), dict(context.node_config), context.state)
        out_header, out_blobs = host.handle(header, blobs)
        return FlowerMessage(to_content(out_header, out_blobs), reply_to=msg)

    return app


client_app = _make_client_app()
