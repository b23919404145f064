"""``fedrec deploy``: a SuperLink and N SuperNodes on 127.0.0.1, one run, everything stopped.

:func:`deploy` writes a Flower App (a ``pyproject.toml`` naming the ServerApp and ClientApp of
:mod:`fedrec.engines.flower`, with the resolved configuration as its run config) into a temporary
directory, then starts, each in its own process group and bound to loopback only:

* ``flower-superlink --insecure --host 127.0.0.1 --port P`` (Fleet, Control and the ServerApp's
  runtime API share that one HTTP port in Flower 1.42);
* ``nodes`` client SuperNodes (``--node-config 'role="client" partition-id=i num-partitions=n
  data-dir="..." client-secret-file="..."'``) and one SuperNode per service party of the
  algorithm (FedGNN: ``role="third_party"``, no data directory);

(each on its own :func:`free_port`, counted as started once it listens there itself), submits
the app with ``flwr run`` (with ``experimenter_oracle``, the run config names the data directory
as the ServerApp's experimenter's oracle: see :mod:`fedrec.engines.flower.server`; for an
algorithm without instruments it is ignored), follows ``progress.jsonl`` (a hook may act
after each round, e.g. kill a SuperNode), and returns the ServerApp's ``results.json``.
Everything that can be checked before a process starts (the job, the dataset's kind, the output
directory, which must not hold a finished run unless ``overwrite`` is asked for) is checked
before anything in the output directory is touched; a ``results.json`` already there is
replaced only by this run's, when it completes (the ServerApp writes it atomically), so a
deployment that fails leaves it as it was (``progress.jsonl``, ``server.log`` and
``error.txt`` are the last attempt's). The ServerApp never loads the data, so the run's record
of it (``data``: the files and their sha256, the split, the counts:
:func:`fedrec.experiment.describe_run`) is added by this process, from the nodes' load.
Telemetry is off (``FLWR_TELEMETRY_ENABLED=0``) and ``FLWR_HOME`` is a fresh temporary directory
for every process. At the end every process started -- and every descendant seen (SuperExec,
ServerApp, ClientApp processes) -- is stopped (SIGTERM, then SIGKILL). A descendant is known by
its PID and its start time counted since boot, which a clock step does not move (its wall-clock
start time does), so a step neither hides a live process nor makes it look ended. Should the
calling process die before it stops them, a :mod:`~fedrec.engines.flower.reaper` process does.

**Secrets stay off command lines.** Any local user reads every process's command line (``ps``),
so a SuperNode's root secret is not in its ``--node-config``: each root is written to a file only
its owner may read (mode 0600 from its creation, in ``secrets/`` of the deployment's work
directory, itself 0700; removed at the end, ``keep_workdir`` or not), and the node config names
that file (``client-secret-file``; :func:`fedrec.engines.flower.node.node_secret` reads it).
``$FEDREC_CLIENT_SECRET`` is not passed on: the SuperLink and the ServerApp never hold the root.

**Proxies.** Every process started (and ``flwr run``) talks to the others on loopback only,
over HTTP (``httpx``, which honours ``http_proxy``/``https_proxy``/``all_proxy`` and their
upper-case forms). Left in their environment, a proxy variable sent even loopback traffic to the
proxy: ``flwr run`` could not reach the SuperLink. :func:`loopback_env` removes every
``*_proxy`` variable from their environment rather than only adding loopback to ``no_proxy``:
nothing a deployment runs reaches beyond loopback (its processes read datasets, never download
them; runtime dependency installation is off), whereas ``no_proxy`` is honoured differently by
each client (its case, IP addresses, ports; gRPC's own ``grpc_proxy``/``no_grpc_proxy``), so only
the proxies' absence is certain. ``no_proxy`` is still set to loopback, for whatever finds a
proxy elsewhere.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedrec.algorithms import AlgorithmSpec, resolve_config_sources
from fedrec.attacks.poisoning import poisoned
from fedrec.config import RunConfig, to_dict
from fedrec.core.files import writing
from fedrec.data.paths import resolve_data_dir
from fedrec.engines.common import load_sliced, resolve, service_roles, sliced_options
from fedrec.engines.flower import reaper as reaper_script
from fedrec.engines.flower.reaper import end_processes, is_alive, note_descendants
from fedrec.errors import ConfigError, FedrecError
from fedrec.experiment import (
    RESULTS_NAME,
    check_before_loading,
    check_finished,
    check_out_dir,
    describe_run,
    write_atomic,
)
from fedrec.federation.dp_sum import check_engine
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import SECRET_ENV, RunOptions

if TYPE_CHECKING:
    import psutil

LOOPBACK = "127.0.0.1"
CONNECTION = "fedrec-local"
#: Node-config key of the root secret of a SuperNode's parties (hex; see
#: :mod:`fedrec.federation.secrets`): the node's own configuration, never the run config.
SECRET_KEY = "client-secret"
#: Node-config key of the file (mode 0600) that holds a SuperNode's root secret in hex: how
#: :func:`deploy` gives it, since a node config given on the command line is visible to all.
SECRET_FILE_KEY = "client-secret-file"
#: What ``no_proxy``/``NO_PROXY`` say in a deployment's processes (see :func:`loopback_env`).
LOOPBACK_NO_PROXY = "127.0.0.1,localhost,::1"

_APP_MODULE = '''"""Flower App entry points of fedrec (generated by fedrec deploy)."""
from fedrec.engines.flower.node import client_app
from fedrec.engines.flower.server import server_app

__all__ = ["client_app", "server_app"]
'''


def node_roots(secrets: ClientSecrets, roles: Sequence[str]) -> dict[str, str]:
    """The root (hex) each kind of SuperNode is given: the clients' root to client nodes, a
    one-way derived root to each service's node (which cannot derive any client's secret);
    the simulator derives its parties' secrets the same way."""
    return {"client": secrets.root_bytes().hex(),
            **{r: secrets.for_service(r).root_bytes().hex() for r in roles}}


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to a new file ``path`` that only its owner may read and write (0600 from
    its creation on: it never exists with wider permissions); refuses an existing path (a file
    or link someone else placed there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # exactly 0600, whatever the umask left
        f.write(text)
    return path


def loopback_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without any proxy variable (``http_proxy``, ``HTTPS_PROXY``, ``all_proxy``,
    ``grpc_proxy``, ... in any case) and with ``no_proxy``/``NO_PROXY`` naming loopback: the
    environment of every process of a deployment, which talk on loopback only (module
    docstring, **Proxies**, says why removed rather than bypassed)."""
    out = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
    out.update(no_proxy=LOOPBACK_NO_PROXY, NO_PROXY=LOOPBACK_NO_PROXY)
    return out


class DeployError(FedrecError):
    """The deployment did not finish (a process failed, or it timed out)."""


def serverapp_failed(error_file: Path) -> DeployError:
    """The error of a ServerApp that wrote ``error_file`` (its traceback): one line naming the
    fedrec error it ended with (a party lost, a step without updates, ...) and where the
    traceback is; anything else (a bug) with the whole traceback."""
    text = error_file.read_text(errors="replace")
    last = text.rstrip().rsplit("\n", 1)[-1]
    kind, _, message = last.partition(": ")
    if kind.startswith("fedrec.") and message:
        return DeployError(f"the ServerApp failed: {message} (traceback in {error_file})")
    return DeployError("the ServerApp failed:\n" + text)


def submitted_run_id(output: str) -> int:
    """The run id in the output of ``flwr run --format json``. Flower reports a failed
    submission (e.g. the SuperLink unreachable) as JSON without one, and exits with status 0:
    that is a :class:`DeployError` at once, in one line, never a wait for a run that does not
    exist."""
    start = output.find("{")
    try:
        reply = json.JSONDecoder().raw_decode(output[start:])[0] if start >= 0 else None
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict):
        reply = {"error-message": output or "(no output)"}
    run_id = reply.get("run-id")
    if run_id is None or not str(run_id).strip().isdigit():
        why = " ".join(str(reply.get("error-message") or reply).split())[-500:]
        raise DeployError(f"flwr run submitted no run: {why}")
    return int(run_id)


class _PortTaken(DeployError):
    """A process could not bind its port: another program took it after it was probed."""


_PORTS_GIVEN: dict[int, float] = {}  # port -> when free_port gave it (monotonic seconds)
_PORTS_LOCK = threading.Lock()
_START_WAIT_S = 60.0  # how long a started process may take to listen on its port
_PORT_HOLD_S = 5 * _START_WAIT_S  # by then the port's process bound it, or gave up


def _say(message: str) -> None:
    print(f"fedrec deploy: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    """A loopback port that is free now and that no call in this process returned in the last
    :data:`_PORT_HOLD_S` seconds.

    The port is only probed (bound and released): the process it is meant for binds it
    seconds later. The kernel may hand the same port to the next probe in that window
    (observed here: twice in a row), so concurrent deployments of one process would share a
    port; remembering the ports given closes that race. Another program may still take the
    port: :meth:`Deployment.start_listening` checks who listens and takes another port then."""
    with _PORTS_LOCK:
        now = time.monotonic()
        for old in [p for p, t in _PORTS_GIVEN.items() if now - t > _PORT_HOLD_S]:
            del _PORTS_GIVEN[old]
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((LOOPBACK, 0))
                port = int(s.getsockname()[1])
            if port not in _PORTS_GIVEN:
                _PORTS_GIVEN[port] = now
                return port


def encode_config(cfg: dict[str, Any]) -> str:
    """The resolved configuration as one run-config string (base64 of JSON: Flower parses
    run-config strings, so raw JSON would not survive)."""
    return base64.b64encode(json.dumps(cfg).encode()).decode()


def decode_config(text: str) -> dict[str, Any]:
    return json.loads(base64.b64decode(text))


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path


@dataclass
class Deployment:
    """The processes of one deployment; :meth:`stop` ends all of them. Should this process end
    without calling it, the deployment's :mod:`~fedrec.engines.flower.reaper` does."""

    workdir: Path
    env: dict[str, str]
    procs: list[Proc] = field(default_factory=list)
    seen: dict[int, psutil.Process] = field(default_factory=dict)  # descendants by PID
    nodes: dict[str, list[Proc]] = field(default_factory=dict)
    serverapp: psutil.Process | None = None
    reaper: subprocess.Popen | None = None

    @property
    def leaders_file(self) -> Path:
        return self.workdir / "reaper-leaders"

    def start(self, name: str, argv: list[str]) -> Proc:
        """Start ``argv`` as ``name``, its output in ``logs/<name>.log`` (a write refused
        there, a full disk, is a one-line WriteError)."""
        logdir = self.workdir / "logs"
        with writing("the deployment's logs", logdir):
            logdir.mkdir(exist_ok=True)
            if self.reaper is None:
                self.leaders_file.touch()
                with (logdir / "reaper.log").open("wb") as f:
                    self.reaper = subprocess.Popen(
                        [sys.executable, reaper_script.__file__,
                         "--host-pid", str(os.getpid()), "--leaders", str(self.leaders_file)],
                        stdout=f, stderr=subprocess.STDOUT, env=self.env,
                        start_new_session=True)
            log = logdir / f"{name}.log"
            with log.open("wb") as f:
                popen = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=self.env,
                                         cwd=self.workdir, start_new_session=True)
            with self.leaders_file.open("a") as f:
                f.write(f"{popen.pid}\n")
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def start_listening(self, name: str, argv: Callable[[int], list[str]],
                        timeout: float = _START_WAIT_S, attempts: int = 5
                        ) -> tuple[Proc, int]:
        """Start ``argv(port)`` on a :func:`free_port` and wait until that process itself
        listens on it -- not merely anyone: a connection test would pass on a port another
        program took, and this deployment's parties would then talk to that program. A process
        that exits because its port was taken in the meantime is started again on another."""
        for _ in range(attempts):
            port = free_port()
            proc = self.start(name, argv(port))
            try:
                self._wait_listening(proc, port, timeout)
                return proc, port
            except _PortTaken:
                self.procs.remove(proc)
        raise DeployError(f"{name} found no free port in {attempts} attempts")

    @staticmethod
    def _wait_listening(proc: Proc, port: int, timeout: float) -> None:
        import psutil

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if proc.popen.poll() is not None:
                log = proc.log.read_text(errors="replace") if proc.log.is_file() else ""
                error = _PortTaken if "address already in use" in log.lower() else DeployError
                raise error(f"{proc.name} exited with status {proc.popen.returncode} at start")
            try:
                conns = psutil.Process(proc.popen.pid).net_connections(kind="tcp")
            except psutil.NoSuchProcess:
                conns = []
            if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns):
                return
            time.sleep(0.1)
        raise DeployError(f"{proc.name} did not listen on {LOOPBACK}:{port} within "
                          f"{timeout:.0f} s")

    def track(self) -> None:
        """Remember every live descendant (they run in sessions of their own), and the
        ServerApp: a live process running ``flwr-serverapp`` whose parent does not.

        Until the ServerApp is known, every live descendant is looked at again on each call,
        not only the new ones: SuperExec starts the ServerApp with ``subprocess.Popen``, and a
        process seen between that fork and its exec (which tries each PATH entry in turn) runs
        SuperExec's command line then; the exec changes the command line, not the PID and start
        time it is known by. Looked at only once, such a ServerApp was never recognised, and a
        run whose ServerApp died waited for the whole timeout. A child the ServerApp forks
        carries its command line until it executes another program (the ServerApp runs
        ``file -b python`` at start, via ``platform.architecture()``); taken for the ServerApp,
        its exit ended the run "without results"."""
        import psutil

        def serverapp(proc: psutil.Process) -> bool:
            return any("flwr-serverapp" in a for a in proc.cmdline()[:2])

        note_descendants([p.popen.pid for p in self.procs], self.seen)
        if self.serverapp is not None:
            return
        for proc in list(self.seen.values()):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                if not is_alive(proc) or not serverapp(proc):
                    continue
                parent = proc.parent()
                if parent is None or not serverapp(parent):
                    self.serverapp = proc
                    return

    def serverapp_gone(self) -> bool:
        """Whether the ServerApp process was seen and has ended."""
        return self.serverapp is not None and not is_alive(self.serverapp)

    def kill_node(self, name: str) -> list[int]:
        """SIGKILL a SuperNode, its executor and their descendants at once (a machine that
        crashed); returns the PIDs."""
        import psutil

        pids = []
        for proc in self.nodes[name]:
            try:
                kids = psutil.Process(proc.popen.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                kids = []
            pids += [proc.popen.pid, *(k.pid for k in kids)]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.nodes[name]:  # it ends once scheduled: 60 s only bounds a hung kernel
            proc.popen.wait(timeout=60)
        return pids

    def stop(self, grace: float = 5.0) -> list[int]:
        """SIGTERM every started process and known descendant, then SIGKILL what is left.
        Returns the PIDs that had to be killed."""
        import psutil

        self.track()
        started = []
        for p in reversed(self.procs):  # SuperNodes before the SuperLink
            if p.popen.poll() is None:
                with contextlib.suppress(psutil.NoSuchProcess):
                    started.append(psutil.Process(p.popen.pid))
        killed = end_processes(started + list(self.seen.values()), grace)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(timeout=5)
        if self.reaper is not None:  # nothing left to reap: it exits once its file is gone
            self.leaders_file.unlink(missing_ok=True)
            try:
                self.reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.reaper.kill()
                self.reaper.wait()
        return killed


RoundHook = Callable[[dict[str, Any], Deployment], None]


def _identity(path: Path) -> tuple[int, ...] | None:
    """Which file ``path`` is now (device, inode, mtime, size), None when there is none: a
    file replaced by another (written beside it and renamed over it) is another identity."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def check_flower_job(algorithm: str, spec: AlgorithmSpec, cfg: RunConfig) -> None:
    """What a job must be to run on Flower (a deployment or Flower's simulation engine)."""
    if not spec.federated:
        raise ConfigError(f"{algorithm} is not a federated algorithm (nothing to deploy)")
    check_engine(cfg, "flower")
    if poisoned(cfg):
        raise ConfigError("malicious clients (poisoning) run on the simulator only, for now")
    if cfg.dropout > 0:
        raise ConfigError("dropout is simulated; on a deployment parties drop out for real "
                          "(set dropout=0)")


def app_run_config(algorithm: str, dataset: str, cfg: RunConfig, options: RunOptions,
                   roles: Sequence[str], out: Path, data_root: Path) -> dict[str, Any]:
    """The run config of the Flower App (:mod:`fedrec.engines.flower.server` reads it): the
    job, where the ServerApp writes, and ``options``' timeouts."""
    return {
        "algorithm": algorithm, "dataset": dataset, "config": encode_config(to_dict(cfg)),
        "max-users": int(options.max_users or 0), "num-nodes": options.nodes + len(roles),
        "out-dir": str(out), "connect-timeout": float(options.connect_timeout),
        "call-timeout": float(options.call_timeout),
        "straggler-timeout": float(options.straggler_timeout),
        "experimenter-oracle-dir": str(data_root) if options.experimenter_oracle else "",
    }


def deploy(
    algorithm: str,
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: Sequence[str] | dict[str, Any] = (),
    out_dir: str | Path | None = None,
    options: RunOptions | None = None,
    on_round: RoundHook | None = None,
    log: Callable[[str], None] | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    """Run ``algorithm`` on a local Flower deployment (see the module docstring); returns the
    ServerApp's results (``fedrec run``'s results.json plus an ``engine`` section).

    ``options`` (:class:`~fedrec.options.RunOptions`, engine ``flower``): ``nodes``,
    ``max_users``, the timeouts, ``executor``, ``experimenter_oracle``, ``keep_workdir``,
    ``progress`` (a line per step on stderr, unless ``log`` takes them) and ``client_secret``:
    the experimenter's root of the non-server parties' randomness (fresh entropy when None),
    given to every client SuperNode in an owner-only file its node config names
    (``client-secret-file``; a service's node gets its one-way derived root,
    :func:`node_roots`), never to the SuperLink or the ServerApp, never on a command line.
    One root for all clients is what the simulator does, and lets clients agree on shared keys
    (FedMF's key pair). ``on_round`` is called with each round's progress row and
    the :class:`Deployment` (a test may kill a SuperNode there). ``preset``: as ``fedrec run
    --preset``."""
    opts = (options or RunOptions()).with_engine("flower")
    say = log or (_say if opts.progress else (lambda _m: None))
    spec, cfg = resolve(algorithm, dataset, config_file, overrides, preset)
    check_flower_job(algorithm, spec, cfg)
    check_before_loading(spec, dataset)
    roles = service_roles(spec, cfg)
    data_root = resolve_data_dir(data_dir)
    bindir = Path(sys.executable).parent
    if out_dir is not None and not os.fspath(out_dir).strip():
        raise ConfigError("out_dir is empty: give the folder to write into ('.' for the "
                          "current one)")
    given = Path(out_dir).resolve() if out_dir is not None else None
    if given is not None:
        check_finished(given, opts, resumable=False)
        check_out_dir(given)
    # Every check made: from here on the output directory is written to.
    # A write refused from here on (a full disk) is one line naming the folder.
    with writing("the deployment's files", Path(tempfile.gettempdir())):
        work = Path(tempfile.mkdtemp(prefix="fedrec-deploy-"))
        out = given if given is not None else work / "out"
        out.mkdir(parents=True, exist_ok=True)
        # A finished result there stays until this run's replaces it (the ServerApp writes it
        # atomically, at the end): a deployment that fails leaves it as it was. This run's is the
        # results file that is not that one.
        old_result = _identity(out / RESULTS_NAME)
        for name in ("progress.jsonl", "error.txt", "server.log"):  # the last attempt's logs
            (out / name).unlink(missing_ok=True)
        home = work / "flwr-home"
        home.mkdir()
        app = work / "app"
        app.mkdir()
        (app / "fedrec_flower_app.py").write_text(_APP_MODULE)
        run_config = app_run_config(algorithm, dataset, cfg, opts, roles, out, data_root)
        lines = []
        for k, v in run_config.items():
            lines.append(f"{k} = {_toml_str(v) if isinstance(v, str) else repr(v)}")
        (app / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
            '[project]\nname = "fedrec-deploy"\nversion = "1.0.0"\ndescription = ""\n'
            'license = "Apache-2.0"\ndependencies = []\n\n'
            '[tool.flwr.app]\npublisher = "fedrec"\n\n[tool.flwr.app.components]\n'
            'serverapp = "fedrec_flower_app:server_app"\n'
            'clientapp = "fedrec_flower_app:client_app"\n\n'
            '[tool.flwr.app.config]\n' + "\n".join(lines) + "\n")
    env = loopback_env(dict(os.environ))
    env.pop(SECRET_ENV, None)  # the SuperLink and the ServerApp never hold the root
    env.update(FLWR_TELEMETRY_ENABLED="0", FLWR_HOME=str(home), OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}")
    dep = Deployment(work, env)
    secrets_dir = work / "secrets"
    t0 = time.monotonic()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def _terminate(signum: int, _frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        link, link_port = dep.start_listening("superlink", lambda port: [
            str(bindir / "flower-superlink"), "--insecure", "--host", LOOPBACK,
            "--port", str(port), "--disable-runtime-dependency-installation"])
        with writing("the deployment's files", work):
            (home / "config.toml").write_text(
                f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
                f'address = "{LOOPBACK}:{link_port}"\ninsecure = true\n')
            # Each root in an owner-only file, named in the node config: never on a command
            # line.
            secrets_dir.mkdir(mode=0o700)
            files = {kind: write_private(secrets_dir / f"{kind}.hex", root) for kind, root in
                     node_roots(opts.client_secret or ClientSecrets(), roles).items()}
        nodes = opts.nodes
        node_specs = [(f"supernode-{i}", f'role="client" partition-id={i} num-partitions={nodes}'
                       f" data-dir={_toml_str(str(data_root))} {SECRET_FILE_KEY}="
                       f"{_toml_str(str(files['client']))}") for i in range(nodes)]
        node_specs += [(f"supernode-{r}", f"role={_toml_str(r)} {SECRET_FILE_KEY}="
                        f"{_toml_str(str(files[r]))}") for r in roles]
        for name, node_config in node_specs:
            node, port = dep.start_listening(name, lambda port, node_config=node_config: [
                str(bindir / "flower-supernode"), "--insecure", "--superlink",
                f"{LOOPBACK}:{link_port}", "--host", LOOPBACK, "--port", str(port),
                "--isolation", "process" if opts.executor == "warm" else "subprocess",
                "--node-config", node_config])
            dep.nodes[name] = [node]
            if opts.executor == "warm":
                dep.nodes[name].append(dep.start(f"{name}-worker", [
                    sys.executable, "-m", "fedrec.engines.flower.worker",
                    "--runtime-api-address", f"{LOOPBACK}:{port}",
                    "--parent-pid", str(node.popen.pid)]))
        say(f"started SuperLink on {LOOPBACK}:{link_port} and {len(node_specs)} SuperNodes "
            f"(FLWR_HOME={home})")
        try:
            sub = subprocess.run(
                [str(bindir / "flwr"), "run", str(app), CONNECTION, "--format", "json"],
                env=env, cwd=work, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise DeployError("flwr run did not submit the app within 120 s") from None
        if sub.returncode != 0:
            raise DeployError(f"flwr run failed: {sub.stdout[-2000:]}{sub.stderr[-2000:]}")
        run_id = submitted_run_id(sub.stdout)
        say(f"submitted run {run_id} (flwr run)")
        seen_rounds = 0
        gone_since = None
        while True:
            dep.track()
            if (out / "error.txt").is_file():
                raise serverapp_failed(out / "error.txt")
            finished = _identity(out / RESULTS_NAME) not in (None, old_result)
            if dep.serverapp_gone() and not finished:
                gone_since = gone_since or time.monotonic()
                if time.monotonic() - gone_since > 3 and not (out / "error.txt").is_file():
                    try:
                        logs = subprocess.run(
                            [str(bindir / "flwr"), "log", str(run_id), CONNECTION, "--show"],
                            env=env, cwd=work, capture_output=True, text=True, timeout=60)
                        flwr_log = logs.stdout + logs.stderr
                    except subprocess.TimeoutExpired:  # still a DeployError, with our logs
                        flwr_log = "(flwr log did not answer within 60 s)"
                    server_log = out / "server.log"
                    if not server_log.is_file():
                        ours = "(none: it ended before fedrec's server code started)"
                    elif not (ours := server_log.read_text()[-2000:].rstrip()):
                        ours = "(empty: fedrec's server code started and logged nothing)"
                    raise DeployError("the ServerApp ended without results:\n"
                                      + flwr_log[-4000:]
                                      + f"\n--- its server.log\n{ours}")
            if (out / "error.txt").is_file():
                raise serverapp_failed(out / "error.txt")
            progress = out / "progress.jsonl"
            if progress.is_file():
                # Complete lines only: the ServerApp may be writing the next one.
                rows = [json.loads(x) for x in progress.read_text().split("\n")[:-1]
                        if x.strip()]
                for row in rows[seen_rounds:]:
                    say(f"round {row['round']} done ({row['time_s']:.1f} s)")
                    if on_round is not None:
                        on_round(row, dep)
                seen_rounds = len(rows)
            if finished:
                result = json.loads((out / RESULTS_NAME).read_text())
                break
            if link.popen.poll() is not None:
                raise DeployError("flower-superlink exited during the run")
            if time.monotonic() - t0 > opts.timeout:
                raise DeployError(f"the run did not finish within {opts.timeout:.0f} s")
            time.sleep(0.2)
        result["engine"]["deploy_wall_s"] = time.monotonic() - t0
        # What the nodes ran on, recorded by the experimenter's process (the ServerApp never
        # loads the data): the same load and slice as a node's.
        result.update(describe_run(load_sliced(dataset, data_root, opts.max_users), dataset,
                                   sliced_options(opts.max_users), preset))
        result["config_sources"] = resolve_config_sources(algorithm, dataset, config_file,
                                                          overrides, preset)
        write_atomic(out / RESULTS_NAME, json.dumps(result, indent=2, default=float),
                     "the run's results")
        return result
    except DeployError as exc:
        tails = []
        for p in dep.procs:
            text = p.log.read_text(errors="replace") if p.log.is_file() else ""
            tails.append(f"--- {p.name} (last lines)\n{text[-1500:]}")
        # The reason again after the tails: a log cut to its head and end keeps it.
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        reason = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        raise DeployError(f"{exc}\n" + "\n".join(tails)
                          + f"\n--- the deployment failed: {reason}") from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        killed = dep.stop()
        if killed:
            say(f"had to SIGKILL {len(killed)} process(es): {killed}")
        shutil.rmtree(secrets_dir, ignore_errors=True)  # kept work directory or not
        if not opts.keep_workdir:
            shutil.rmtree(work, ignore_errors=True)
