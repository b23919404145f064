"""A real Flower deployment on loopback: 1 SuperLink, 3 client SuperNodes (+ FedGNN's third
party as a 4th SuperNode), separate processes talking HTTP on 127.0.0.1, 2 rounds on the first
40 users of ML-100K. Same metrics as the in-process simulator with the same seed:

* FCF: 1e-12 relative (observed bit-identical): its client step is row-wise, so splitting the
  cohort over SuperNodes changes no floating-point operation;
* FedGNN: 1e-6 relative (observed ~5e-8): each SuperNode pads its own chunk of clients to its
  longest subgraph, so float32 reductions run over differently padded tensors and round
  differently; a protocol error (a missing client, a wrong neighbour, another noise draw)
  moves the metrics by 1e-3 and more.

The ledgers (bytes and messages per round, direction, step) are identical. The third
deployment is FCF with secure aggregation (Bonawitz et al.): its round 1 equals the simulator's
secure run, the four secure-sum steps carrying the same bytes over Flower (the masks cancel
exactly in the ring, whatever keys the nodes draw); then one of its SuperNodes is killed
(SIGKILL, with its executor) when round 1 is done and is absent from round 2, whose secure sum
finishes with the 26 survivors (>= t = 24 of the 40-client cohort) whichever step the kill
landed in: exactly the simulator with those clients dropped. (SecAgg+ runs the same transport;
its apps are compared with the simulator on the in-memory grid, test_flower_runtime.py.)
When FCF's round 1 is done, the clock steps by 1 s as psutil sees it (every process's wall-clock
start time moves): the three deployments are running and must finish all the same.

The three run with every proxy variable pointing at a dead port (a user behind a proxy: their
loopback traffic must not go there) and with the client secret in ``$FEDREC_CLIENT_SECRET``. When
round 1 is done, each looks at what any local user could read meanwhile: no process's command
line holds a SuperNode's root secret (the client root, or the third party's derived one), no
process of the deployment holds it in its environment, and the files holding it are the
owner's only (0600, in a 0700 work directory).

The three deployments run concurrently (they mostly wait on Flower's polling), to keep the
module near a minute on two cores. They draw their ports concurrently too: the port tests at the
end start plain Python listeners on a port another program took after it was probed, and check
that a listener which is not the started process is not taken for it; the last ones run a
stand-in SuperExec and ServerApp (a script named ``flwr-serverapp``) that take turns with the
test through files, and step psutil's view of the clock under the ServerApp, or have it fork a
child that lives until the test lets it end.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import os
import socket
import sys
import time
from pathlib import Path

import psutil
import pytest

from fedrec.engines.common import simulate
from fedrec.engines.flower.deploy import (
    LOOPBACK,
    DeployError,
    Deployment,
    deploy,
    free_port,
    node_roots,
)
from fedrec.engines.flower.node import node_share
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import SECRET_ENV, RunOptions

pytestmark = pytest.mark.slow  # real Flower deployments (SuperLink + SuperNode processes)

USERS = 40
# One client secret for the deployment and the simulator: compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
# The simulator twin of the deployments here: the same users, the same client secret.
SIM = RunOptions(max_users=USERS, client_secret=SECRETS, progress=False)
DEPLOY = RunOptions.of(SIM, engine="flower", nodes=3, timeout=600, call_timeout=300)
FCF = {"rounds": 2, "eval_every": 1, "dim": 16}
FEDGNN = {"rounds": 2, "eval_every": 1, "dim": 16, "clients_per_round": 16, "pseudo_items": 50,
          "neighbours": 4, "expand_after": 0}
# Secure FCF, evaluated once (after the kill): both the secure deployment and the lost node.
KILL = {**FCF, "eval_every": 2, "secure_aggregation": True}
# The roots the SuperNodes are given: the clients', and the one derived for FedGNN's third party.
ROOTS = node_roots(SECRETS, ["third_party"])
# A proxy nobody listens at (port 9, discard): loopback traffic sent there never arrives.
DEAD_PROXY = "http://127.0.0.1:9"
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
              "grpc_proxy")


def _readable(dep: Deployment) -> dict:
    """What any local user could read of the SuperNodes' secrets while ``dep`` runs, and what
    its own user could (the round hook calls it when round 1 is done)."""
    secrets = set(ROOTS.values())
    cmdlines: dict[int, str] = {}
    for pid in psutil.pids():  # every process on the machine whose command line we can read
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        cmdlines[pid] = raw.replace(b"\0", b" ").decode(errors="replace")
    ours = {p.popen.pid for p in dep.procs} | set(dep.seen)
    live = {pid for pid in ours if psutil.pid_exists(pid)}
    environ = {}
    for pid in live:
        try:
            environ[pid] = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
    files = {}
    for path in dep.workdir.rglob("*"):
        try:
            if not path.is_file() or path.is_symlink():
                continue
            text = path.read_bytes().decode(errors="replace")
        except OSError:  # a file a process removed meanwhile
            continue
        if held := sorted(k for k, h in ROOTS.items() if h in text):
            files[str(path.relative_to(dep.workdir))] = (path.stat().st_mode & 0o777, held)
    return {
        "processes": len(cmdlines),
        "unread": sorted(live - set(cmdlines)),  # deployment processes whose line was unread
        "supernodes": sum("flower-supernode" in cmdlines.get(p.popen.pid, "")
                          for p in dep.procs),
        "cmdline_leaks": [(pid, c) for pid, c in cmdlines.items()
                          if any(h in c for h in secrets)],
        "environ_leaks": sorted(pid for pid, e in environ.items() if any(h in e for h in secrets)),
        "environ_read": len(environ),
        "files": files,
        "workdir_mode": dep.workdir.stat().st_mode & 0o777,
        "proxy": {k: os.environ.get(k) for k in PROXY_VARS},
    }


def _run(data_root, algorithm: str, overrides: dict, watch, straggler: float) -> dict:
    return deploy(algorithm, "ml-100k", data_dir=data_root, overrides=overrides,
                  options=RunOptions.of(DEPLOY, straggler_timeout=straggler), on_round=watch)


@pytest.fixture(scope="module")
def runs(ml100k_root, deploy_helpers):
    with pytest.MonkeyPatch.context() as mp:
        boot_time = psutil._pslinux.boot_time if sys.platform.startswith("linux") else None
        stepped = []

        def step_clock() -> None:
            # What an NTP step or a resumed VM does to every process's wall-clock start time
            # (see test_a_clock_step_neither_ends_nor_hides_a_live_serverapp): all three
            # deployments are running and must not notice.
            if boot_time is not None:
                mp.setattr(psutil._pslinux, "boot_time", lambda: boot_time() + 1.0)
                stepped.append(time.monotonic())

        # Behind a proxy, with the client secret in the environment (module docstring).
        for name in PROXY_VARS:
            mp.setenv(name, DEAD_PROXY)
        mp.setenv(SECRET_ENV, ROOTS["client"])
        watch = deploy_helpers.Watch
        watches = {"fcf": watch(after_round1=step_clock, probe=_readable),
                   "fedgnn": watch(probe=_readable),
                   "kill": watch(kill="supernode-2", probe=_readable)}
        jobs = {"fcf": ("fcf", FCF, 0.0), "fedgnn": ("fedgnn", FEDGNN, 0.0),
                "kill": ("fcf", KILL, 20.0)}
        with cf.ThreadPoolExecutor(len(jobs)) as pool:
            futs = {k: pool.submit(_run, ml100k_root, alg, ov, watches[k], st)
                    for k, (alg, ov, st) in jobs.items()}
            results = {k: f.result() for k, f in futs.items()}
    assert stepped or boot_time is None
    return results, watches


def test_fcf_deployment_equals_simulator(runs, ml100k_root, deploy_helpers) -> None:
    results, watches = runs
    res = results["fcf"]
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=FCF,
                   options=SIM).to_json()
    assert res["engine"]["nodes"] == 3 and res["engine"]["clients"] == USERS
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert deploy_helpers.rel_diff(a["eval"], b["eval"]) <= 1e-12
        assert a["train"] == b["train"] and a["communication"] == b["communication"]
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
    assert watches["fcf"].listening == {LOOPBACK}  # nothing listens beyond loopback
    deploy_helpers.no_process_left(watches["fcf"])


def test_fedgnn_deployment_with_third_party_node_equals_simulator(
        runs, ml100k_root, deploy_helpers) -> None:
    results, watches = runs
    res = results["fedgnn"]
    sim = simulate("fedgnn", "ml-100k", data_dir=ml100k_root, overrides=FEDGNN,
                   options=SIM).to_json()
    assert res["engine"]["nodes"] == 4  # 3 client SuperNodes + the third party's
    assert res["history"][0]["train"]["expanded"] == 1.0
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert deploy_helpers.rel_diff(a["eval"], b["eval"]) <= 1e-6
        assert deploy_helpers.rel_diff(a["train"], b["train"]) <= 1e-6
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    assert steps["expand_key (client->third_party)"]["messages"] == USERS
    assert watches["fedgnn"].listening == {LOOPBACK}
    deploy_helpers.no_process_left(watches["fedgnn"])


def test_secure_fcf_equals_the_simulator_and_survives_a_killed_supernode(
        runs, ml100k_root, simulate_lost, deploy_helpers) -> None:
    h = deploy_helpers
    results, watches = runs
    res, watch = results["kill"], watches["kill"]
    assert watch.killed  # the SuperNode and its executor were SIGKILLed after round 1
    for pid in watch.killed:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    # Round 1, before the kill: the simulator's secure round, step for step.
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=KILL,
                   options=SIM).to_json()
    assert res["history"][0]["train"] == sim["history"][0]["train"] == {
        "clients": USERS, "dropped_after_keys": 0}
    assert res["history"][0]["communication"] == sim["history"][0]["communication"]
    assert any(k.startswith("secagg_unmask") for k in res["communication"]["by_step"])
    # Round 2: whether the node answered its first steps before dying or not, its clients are
    # not in the sum; if it had shared keys, the others' unmasking shares removed its masks.
    lost = node_share(list(range(USERS)), 2, 3)
    assert res["status"] == "complete" and len(res["engine"]["dead_nodes"]) == 1
    round2 = res["history"][1]["train"]
    assert round2["clients"] == USERS - len(lost)
    assert round2["dropped_after_keys"] in (0, len(lost))
    assert res["final"]["eval_clients"] == USERS - len(lost)
    expected = simulate_lost(ml100k_root, KILL, USERS, lost, train_lost=True,
                             client_secrets=SECRETS)
    assert h.rel_diff(res["final"], expected) <= 1e-12
    h.no_process_left(watch)


def test_deployments_behind_a_dead_proxy_finish(runs) -> None:
    # With http(s)_proxy & co. set, `flwr run` sent its loopback request to the proxy, printed
    # "submitted run None" and the deployment waited out its timeout.
    results, watches = runs
    for name, watch in watches.items():
        assert watch.probed["proxy"] == dict.fromkeys(PROXY_VARS, DEAD_PROXY), name
        assert results[name]["status"] == "complete", name


def test_no_command_line_or_environment_holds_a_client_secret(runs) -> None:
    # Every local user reads every command line (`ps`): the roots went there in
    # `--node-config client-secret="HEX"`.
    _results, watches = runs
    for name, nodes, kinds in (("fcf", 3, ["client"]), ("fedgnn", 4, ["client", "third_party"]),
                               ("kill", 3, ["client"])):
        seen = watches[name].probed
        assert seen["supernodes"] == nodes and not seen["unread"], (name, seen)
        assert seen["processes"] > len(watches[name].dep.procs)  # the whole machine's
        assert seen["cmdline_leaks"] == [], name
        # Not in the environment of the SuperLink, SuperExec, ServerApp, nodes, executors.
        assert seen["environ_read"] >= nodes and seen["environ_leaks"] == [], name
        # Held in files only their owner reads, in a directory only its owner enters.
        assert seen["workdir_mode"] == 0o700, name
        assert sorted({k for _, held in seen["files"].values() for k in held}) == kinds, name
        assert {mode for mode, _ in seen["files"].values()} == {0o600}, (name, seen["files"])
        assert not watches[name].dep.workdir.exists()  # removed at the end, with the files


def test_a_failed_submission_fails_at_once(ml100k_root, monkeypatch) -> None:
    # The proxies left in the processes' environment (as before): `flwr run` cannot reach the
    # SuperLink and reports it as JSON without a run id. The deployment stops there with that
    # reason, instead of waiting out its timeout for a run that does not exist.
    deploy_module = importlib.import_module("fedrec.engines.flower.deploy")
    monkeypatch.setattr(deploy_module, "loopback_env", dict, raising=False)  # (none before)
    for name in PROXY_VARS:
        monkeypatch.setenv(name, DEAD_PROXY)
    t0 = time.monotonic()
    with pytest.raises(DeployError) as err:
        deploy("fcf", "ml-100k", data_dir=ml100k_root, overrides=FCF,
               options=RunOptions.of(DEPLOY, nodes=1, executor="subprocess", timeout=300))
    reason = str(err.value).splitlines()[-1]
    assert reason.startswith("--- the deployment failed: flwr run submitted no run: "), reason
    assert "Connection to the SuperLink is unavailable" in reason
    assert time.monotonic() - t0 < 300


# A real process that binds and listens on the port given as its argument.
LISTENER = ("import socket, sys, time\n"
            "s = socket.socket()\n"
            "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
            "s.listen()\n"
            "time.sleep(60)\n")


@pytest.fixture
def held_port():
    """A loopback port this test process listens on: another program's port."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        s.listen()
        yield s.getsockname()[1]


def test_free_port_never_gives_a_port_twice() -> None:
    # The kernel does hand a just-released port to the next probe; concurrent deployments of
    # one process would then share it.
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)


def test_a_port_taken_after_its_probe_is_replaced(monkeypatch, tmp_path, held_port) -> None:
    probes = iter([held_port])
    # The module itself (the package re-exports the function ``deploy`` under its name).
    deploy_module = importlib.import_module("fedrec.engines.flower.deploy")
    monkeypatch.setattr(deploy_module, "free_port", lambda: next(probes, None) or free_port())
    dep = Deployment(tmp_path, dict(os.environ))
    try:
        proc, port = dep.start_listening(
            "listener", lambda p: [sys.executable, "-c", LISTENER, str(p)], timeout=STEP_S)
        assert next(probes, None) is None and port != held_port  # the held port was tried
        assert dep.procs == [proc]  # the attempt on the taken port is not kept
        conns = psutil.Process(proc.popen.pid).net_connections(kind="tcp")
        assert any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns)
    finally:
        dep.stop()


def test_another_programs_listener_is_not_taken_for_ours(tmp_path, held_port) -> None:
    # Something answers on the port, but not the process started for it.
    dep = Deployment(tmp_path, dict(os.environ))
    try:
        proc = dep.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        with pytest.raises(DeployError, match="did not listen"):
            dep._wait_listening(proc, held_port, timeout=2.0)
    finally:
        dep.stop()


# The stand-in ServerApp's processes and the test take turns through files in a folder: each
# process says where it is (a file named after the step, holding its PID, created whole) and
# waits for the test's go-ahead (a file the test creates), so every check below happens in the
# state it is about, however slowly a busy machine runs either side.
TURNS = """
import os, signal, sys, time
from pathlib import Path
turns = Path(sys.argv[1])

def say(step):  # written whole: the test reads it as soon as it exists
    (turns / (step + ".tmp")).write_text(str(os.getpid()))
    os.replace(turns / (step + ".tmp"), turns / step)

def wait(step):  # no deadline: stop() or the test's end ends the process
    while not (turns / step).exists():
        time.sleep(0.01)
"""

# SuperExec's part: it forks the ServerApp, which runs SuperExec's command line until it
# executes flwr-serverapp (after the go-ahead "exec").
SUPEREXEC = TURNS + """
if (pid := os.fork()) == 0:
    say("before-exec")
    wait("exec")
    os.execv(sys.executable, [sys.executable, sys.argv[2], str(turns), *sys.argv[3:]])
os.waitpid(pid, 0)
"""

# The ServerApp, in a file named flwr-serverapp (what track() recognises): with "fork" it forks
# a child, which keeps the ServerApp's command line (it executes nothing) until the go-ahead
# "exit"; the ServerApp reaps it, then runs until it is stopped.
SERVERAPP = TURNS + """
say("serverapp")
if len(sys.argv) > 2 and (pid := os.fork()) == 0:
    say("forked")
    wait("exit")
    os._exit(0)
if len(sys.argv) > 2:
    os.waitpid(pid, 0)
    say("reaped")
signal.pause()
"""

# Bounds a wait for a step a process takes within seconds when the machine is idle; reached,
# it is a failure, never a timing that passes.
STEP_S = 120.0


def _step(turns: Path, step: str) -> psutil.Process:
    """Wait until a process of the stand-in has said ``step``; the process that said it."""
    end = time.monotonic() + STEP_S
    while not (turns / step).exists():
        assert time.monotonic() < end, f"the stand-in never said {step!r} within {STEP_S:.0f} s"
        time.sleep(0.01)
    return psutil.Process(int((turns / step).read_text()))


def _go(turns: Path, step: str) -> None:
    (turns / step).touch()


def _stand_in(tmp_path: Path, *app_args: str) -> tuple[Deployment, Path]:
    """A Deployment running the stand-in SuperExec, which will fork and execute the stand-in
    ServerApp (``app_args`` after its folder of turns); and that folder."""
    turns = tmp_path / "turns"
    turns.mkdir()
    app = tmp_path / "flwr-serverapp"
    app.write_text(SERVERAPP)
    dep = Deployment(tmp_path, dict(os.environ))
    dep.start("superexec", [sys.executable, "-c", SUPEREXEC, str(turns), str(app), *app_args])
    return dep, turns


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="steps psutil's Linux clock")
def test_a_clock_step_neither_ends_nor_hides_a_live_serverapp(monkeypatch, tmp_path) -> None:
    # A process's wall-clock create_time() is its start since boot plus the boot time the
    # kernel derives from the clock, so a clock step (NTP, a resumed VM) moves it for a live
    # process. Taken for an identity, it made a running ServerApp look gone (the run failed
    # "without results") and its process escape stop().
    dep, turns = _stand_in(tmp_path)
    try:
        _go(turns, "exec")
        server = _step(turns, "serverapp")
        dep.track()
        assert dep.serverapp is not None and dep.serverapp.pid == server.pid
        started = server.create_time()
        boot_time = psutil._pslinux.boot_time
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: boot_time() + 1.0)
        assert psutil.Process(server.pid).create_time() == started + 1.0  # the step shows
        dep.track()
        assert not dep.serverapp_gone()
    finally:
        dep.stop()
    assert dep.serverapp_gone()
    assert not psutil.pid_exists(server.pid) or psutil.Process(
        server.pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("seen_before_exec", [False, True])
def test_a_serverapps_forked_child_is_not_taken_for_it(tmp_path, seen_before_exec) -> None:
    # Until it executes another program, a child the ServerApp forks has its command line (at
    # start Flower's ServerApp runs `file -b python` through platform.architecture()). Taken for
    # the ServerApp, its exit ended the run "without results" (CI, and a run here). psutil lists
    # a parent before its children, so that took a ServerApp first seen between SuperExec's
    # fork and its exec, running SuperExec's command line (seen_before_exec); it was then never
    # looked at again, and the parent rule alone left the run without a known ServerApp.
    dep, turns = _stand_in(tmp_path, "fork")
    try:
        if seen_before_exec:
            before = _step(turns, "before-exec")
            dep.track()
            assert before.pid in dep.seen and dep.serverapp is None
        _go(turns, "exec")
        child = _step(turns, "forked")  # alive until "exit", with the ServerApp's command line
        server = _step(turns, "serverapp")
        assert not seen_before_exec or server.pid == before.pid  # the same process, executed
        assert child.cmdline() == server.cmdline() and child.ppid() == server.pid
        dep.track()
        assert child.pid in dep.seen  # looked at, and not taken for the ServerApp
        assert dep.serverapp is not None and dep.serverapp.pid == server.pid
        _go(turns, "exit")
        _step(turns, "reaped")  # the child has ended and is reaped
        assert not child.is_running()
        dep.track()
        assert dep.serverapp.pid == server.pid and not dep.serverapp_gone()
    finally:
        dep.stop()
    assert dep.serverapp_gone()
