"""fedrec's ServerApp and ClientApp in Flower's simulation engine (Ray), for comparison.

:func:`simulate_on_flower` runs the *same* apps as ``fedrec deploy``
(:data:`fedrec.engines.flower.server.server_app`, :data:`fedrec.engines.flower.node.client_app`;
the orchestrator talks to the nodes through Flower's ``Grid`` with
:class:`~fedrec.engines.flower.runtime.FlowerRuntime`) with
:func:`flwr.simulation.run_simulation` and ``nodes + len(service roles)`` virtual SuperNodes,
instead of a SuperLink and SuperNode processes. Needs ``pip install .[flower]``
(``flwr[simulation]``, i.e. Ray).

Two things differ from a deployment, and a thin wrapper around each app bridges them (the apps
themselves are untouched):

* ``run_simulation`` gives the apps an empty run config, so both wrappers hand the apps the run
  config ``fedrec deploy`` would write into its FAB;
* the engine sets only ``partition-id``/``num-partitions`` (over *all* virtual SuperNodes) in a
  node's config. The ClientApp wrapper maps them to the deployment's node config: partitions
  ``0 .. nodes-1`` are client SuperNodes (``role="client"``, ``partition-id=i``,
  ``num-partitions=nodes``, ``data-dir`` from the run config), the next ones host the
  algorithm's service parties in sorted order (FedGNN: ``role="third_party"``).

The simulation runs in a child process in its own session, with a private Ray temporary
directory; at the end every process started -- the child, every descendant seen, and any process
naming that Ray directory on its command line (Ray's GCS, raylet, workers) -- is stopped by PID.

    python -m fedrec.engines.flower.simulation SPEC.json   # the child (internal)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.data.paths import resolve_data_dir
from fedrec.engines.common import resolve, service_roles
from fedrec.engines.flower.deploy import (
    SECRET_KEY,
    DeployError,
    Deployment,
    app_run_config,
    check_flower_job,
    loopback_env,
    node_roots,
    serverapp_failed,
    write_private,
)
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

DATA_DIR_KEY = "sim-data-dir"


def sim_node_config(node_config: dict[str, Any], run_config: dict[str, Any], nodes: int,
                    roles: Sequence[str], roots: dict[str, str]) -> dict[str, Any]:
    """The deployment's node config of the virtual SuperNode with the engine's ``node_config``
    (``partition-id`` over all ``nodes + len(roles)`` virtual SuperNodes); ``roots`` are the
    nodes' secrets (:func:`~fedrec.engines.flower.deploy.node_roots`), which only the ClientApp
    wrapper holds."""
    pid = int(node_config["partition-id"])
    if pid < nodes:
        return {"role": "client", "partition-id": pid, "num-partitions": nodes,
                "data-dir": str(run_config[DATA_DIR_KEY]), SECRET_KEY: roots["client"]}
    if pid - nodes < len(roles):
        return {"role": roles[pid - nodes], SECRET_KEY: roots[roles[pid - nodes]]}
    raise ConfigError(f"virtual SuperNode {pid} has no role ({nodes} clients, roles {roles})")


def simulation_apps(run_config: dict[str, Any], nodes: int, roles: Sequence[str],
                    roots: dict[str, str]):
    """A ServerApp and a ClientApp that give fedrec's apps the deployment's contexts (the
    client secret goes into the ClientApp's node configs only, as on a deployment)."""
    from flwr.app import Context
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    rc = dict(run_config)
    roles = list(roles)

    server = ServerApp()

    @server.main()
    def _main(grid, context):
        from fedrec.engines.flower.server import server_app

        server_app(grid, Context(run_id=context.run_id, node_id=context.node_id,
                                 node_config=context.node_config, state=context.state,
                                 run_config=dict(rc)))

    client = ClientApp()

    @client.query()
    def _query(msg, context):
        from fedrec.engines.flower.node import client_app

        nc = sim_node_config(dict(context.node_config), rc, nodes, roles, roots)
        # Same state object: what the app writes persists in the engine's node context.
        return client_app(msg, Context(run_id=context.run_id, node_id=context.node_id,
                                       node_config=nc, state=context.state,
                                       run_config=dict(rc)))

    return server, client


def _child(spec_path: str) -> None:
    import logging

    from flwr.simulation import run_simulation

    spec = json.loads(Path(spec_path).read_text())
    logging.getLogger("flwr").setLevel(logging.INFO)
    server, client = simulation_apps(spec["run_config"], spec["nodes"], spec["roles"],
                                     spec["roots"])
    run_simulation(server_app=server, client_app=client,
                   num_supernodes=spec["nodes"] + len(spec["roles"]),
                   backend_config=spec["backend_config"])


def _ray_processes(marker: str) -> list[int]:
    """Processes naming our private Ray directory (ours alone) on their command line."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(marker in a for a in (p.info["cmdline"] or [])):
                found.append(p.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def simulate_on_flower(
    algorithm: str,
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: Sequence[str] | dict[str, Any] = (),
    options: RunOptions | None = None,
    actors: int | None = None,
) -> dict[str, Any]:
    """Run ``algorithm`` in Flower's simulation engine (module docstring); returns the
    ServerApp's results (as :func:`~fedrec.engines.flower.deploy.deploy`). ``options`` as
    :func:`~fedrec.engines.flower.deploy.deploy`'s (``nodes`` virtual client SuperNodes;
    ``straggler_timeout`` and ``executor`` are refused: every virtual SuperNode answers, and Ray
    runs the ClientApps); ``actors``: Ray actors
    running ClientApps (default: one per virtual SuperNode), one CPU each."""
    import psutil

    opts = (options or RunOptions()).with_engine("flower")
    opts.refuse(["straggler_timeout", "executor"],
                "simulate_on_flower (Ray runs the ClientApps, and every one answers)")
    spec, cfg = resolve(algorithm, dataset, config_file, overrides)
    check_flower_job(algorithm, spec, cfg)
    nodes = opts.nodes
    roles = service_roles(spec, cfg)
    actors = actors or nodes + len(roles)
    data_root = resolve_data_dir(data_dir)
    work = Path(tempfile.mkdtemp(prefix="fedrec-flsim-"))
    ray_dir = Path(tempfile.mkdtemp(prefix="rayfs", dir="/tmp"))  # short: Ray's socket paths
    out = work / "out"
    out.mkdir()
    run_config = {
        **app_run_config(algorithm, dataset, cfg, opts, roles, out, data_root),
        # Every virtual SuperNode answers (no stragglers to cut off in a simulation).
        "straggler-timeout": 0.0,
        DATA_DIR_KEY: str(data_root),
    }
    backend_config = {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {"num_cpus": actors, "num_gpus": 0, "include_dashboard": False,
                      "_temp_dir": str(ray_dir), "object_store_memory": 128 * 2**20},
    }
    spec_file = work / "spec.json"
    roots = node_roots(opts.client_secret or ClientSecrets(), roles)
    # The roots: in an owner-only file (from its creation on) named on the child's command line,
    # never on it themselves (every local user reads command lines).
    write_private(spec_file, json.dumps({"run_config": run_config, "nodes": nodes,
                                         "roles": roles, "backend_config": backend_config,
                                         "roots": roots}))
    env = loopback_env(dict(os.environ))  # Ray's processes talk on loopback only (deploy.py)
    env.update(FLWR_TELEMETRY_ENABLED="0", FLWR_HOME=str(work / "flwr-home"),
               RAY_USAGE_STATS_ENABLED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONUNBUFFERED="1")
    dep = Deployment(work, env)
    t0 = time.monotonic()
    try:
        child = dep.start("simulation", [sys.executable, "-m", "fedrec.engines.flower.simulation",
                                         str(spec_file)])
        while child.popen.poll() is None:
            dep.track()
            if time.monotonic() - t0 > opts.timeout:
                raise DeployError(f"the simulation did not finish within {opts.timeout:.0f} s")
            time.sleep(0.2)
        if (out / "error.txt").is_file():
            raise serverapp_failed(out / "error.txt")
        if child.popen.returncode != 0 or not (out / "results.json").is_file():
            raise DeployError(f"the simulation exited with status {child.popen.returncode}:\n"
                              + child.log.read_text(errors="replace")[-4000:])
        result = json.loads((out / "results.json").read_text())
        result["engine"].update(name="flower-simulation", actors=actors,
                                deploy_wall_s=time.monotonic() - t0)
        return result
    finally:
        dep.stop()
        leftovers = _ray_processes(str(ray_dir))
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in leftovers:
            try:
                psutil.Process(pid).wait(timeout=5)
            except (psutil.NoSuchProcess, psutil.TimeoutExpired):
                pass
        shutil.rmtree(ray_dir, ignore_errors=True)
        if not opts.keep_workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    _child(sys.argv[1])
