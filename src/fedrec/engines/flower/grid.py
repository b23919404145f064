"""Flower without processes: the real ServerApp (:func:`~fedrec.engines.flower.server.run_server`)
driving :class:`~fedrec.engines.flower.runtime.FlowerRuntime` over an in-memory ``Grid`` whose
"SuperNodes" run the real ClientApp code (:class:`~fedrec.engines.flower.node.NodeHost`, each
with its own Flower ``Context.state``).

Everything a deployment runs but the transport: the server is built from the nodes' public
metadata, every message crosses as the envelope a SuperLink relays, and each node builds its
parties from its own share of the data. What only an in-memory grid can observe, it keeps:
every blob the relay handles (:attr:`InMemoryGrid.relayed`). Fast checks that a method on Flower
equals the simulator use it (the conformance suite); a loopback deployment
(:func:`~fedrec.engines.flower.deploy.deploy`) checks the transport itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from fedrec.engines.common import resolve, service_roles
from fedrec.engines.flower.deploy import SECRET_KEY, app_run_config, node_roots
from fedrec.engines.flower.envelope import from_content, to_content
from fedrec.engines.flower.node import NodeHost
from fedrec.engines.flower.server import run_server
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions


class InMemoryGrid:
    """A Flower ``Grid`` whose nodes answer in-process with the ClientApp's :class:`NodeHost`.
    ``kill={node: round}`` makes a node silent from that round on (a dead SuperNode)."""

    def __init__(self, run_config: dict[str, Any], node_configs: dict[int, dict[str, Any]],
                 kill: dict[int, int] | None = None) -> None:
        from flwr.app import RecordDict

        self.rc = run_config
        self.node_configs = node_configs
        self.states = {n: RecordDict() for n in node_configs}
        self.kill = kill or {}
        self.replies: dict[str, Any] = {}
        self.relayed: list[bytes] = []  # every blob the ServerApp sent or received

    def get_node_ids(self) -> list[int]:
        return list(self.node_configs)

    def push_messages(self, msgs: Sequence[Any]) -> list[str]:
        from flwr.app import Message

        ids = []
        for m in msgs:
            m.metadata.__dict__["_message_id"] = m.object_id
            node = m.metadata.dst_node_id
            header, blobs = from_content(m.content)
            self.relayed += blobs.values()
            ids.append(m.object_id)
            if node in self.kill and int(m.metadata.group_id) >= self.kill[node]:
                continue
            host = NodeHost(self.rc, self.node_configs[node], self.states[node])
            # A SuperNode is a process of its own: what it draws from torch's global generator
            # must not move the ServerApp's (PTF-FedRec's server draws its NGCF dropout there).
            with torch.random.fork_rng(devices=[]):
                out_header, out_blobs = host.handle(header, blobs)
            self.relayed += out_blobs.values()
            self.replies[m.object_id] = Message(to_content(out_header, out_blobs), reply_to=m)
        return ids

    def pull_messages(self, ids: Sequence[str]) -> list[Any]:
        return [self.replies.pop(i) for i in ids if i in self.replies]


def run_in_memory(
    algorithm: str,
    dataset: str,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    options: RunOptions,
    kill: dict[int, int] | None = None,
) -> tuple[dict[str, Any], InMemoryGrid]:
    """``algorithm`` on ``dataset`` over ``options.nodes`` client SuperNodes (ids 100, 101,
    ...) and one per service role the job declares (ids 900, ...) of an :class:`InMemoryGrid`,
    with ``options``' slice, client secret, timeouts and experimenter's oracle; the ServerApp's
    result (``results.json``'s content) and the grid."""
    from flwr.supercore.task_identity import TaskIdentity

    # The ids a Flower process is given at start: one run, one server node, one task.
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    options = options.with_engine("flower")
    spec, cfg = resolve(algorithm, dataset, None, overrides or {})
    roles = service_roles(spec, cfg)
    rc = app_run_config(algorithm, dataset, cfg, options, roles, Path(out_dir), Path(data_dir))
    secrets = options.client_secret
    if not isinstance(secrets, ClientSecrets):
        raise ConfigError("an in-memory Flower run needs the client secret in its options")
    roots = node_roots(secrets, roles)
    configs: dict[int, dict[str, Any]] = {
        100 + i: {"role": "client", "partition-id": i, "num-partitions": options.nodes,
                  "data-dir": str(data_dir), SECRET_KEY: roots["client"]}
        for i in range(options.nodes)}
    configs.update({900 + k: {"role": r, SECRET_KEY: roots[r]} for k, r in enumerate(roles)})
    grid = InMemoryGrid(rc, configs, kill)
    return run_server(grid, rc), grid
