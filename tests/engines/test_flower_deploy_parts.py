"""Parts of ``fedrec deploy`` checked without a deployment (fast): reading ``flwr run``'s reply,
the processes' environment behind a proxy, and the SuperNodes' secret files. The deployments
themselves (``test_flower_deploy.py``) check the same end to end."""

from __future__ import annotations

import os
import stat

import pytest

from fedrec.engines.flower.deploy import (
    LOOPBACK,
    SECRET_FILE_KEY,
    SECRET_KEY,
    DeployError,
    Deployment,
    loopback_env,
    serverapp_failed,
    submitted_run_id,
    write_private,
)
from fedrec.engines.flower.node import node_secret
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets

# What `flwr run --format json` (flwr 1.42) printed, with status 0, when the SuperLink was behind
# a dead proxy: pretty-printed JSON without a run id.
UNREACHABLE = """{
  "success": false,
  "error-message": "Using SuperLink: fedrec-local (127.0.0.1:53089)\\n\\nConnection to the \
SuperLink is unavailable. Please check your network connection and 'address' in the SuperLink \
connection configuration."
}
"""
SUBMITTED = """{
  "success": true,
  "run-id": "4861392203462101862",
  "federation-id": "",
  "fab-id": "fedrec/fedrec-deploy"
}
"""


def test_the_run_id_is_read_from_flwr_runs_reply() -> None:
    assert submitted_run_id(SUBMITTED) == 4861392203462101862
    assert submitted_run_id("Loading project configuration...\n" + SUBMITTED) == \
        4861392203462101862


@pytest.mark.parametrize("output", [UNREACHABLE, '{"success": false, "run-id": null}', "",
                                    "Traceback (most recent call last): ...", "{not json"])
def test_a_reply_without_a_run_id_is_a_one_line_error(output) -> None:
    # It printed "submitted run None", and the deployment waited out its whole timeout.
    with pytest.raises(DeployError) as err:
        submitted_run_id(output)
    message = str(err.value)
    assert message.startswith("flwr run submitted no run: ") and "\n" not in message
    if output == UNREACHABLE:
        assert "Connection to the SuperLink is unavailable" in message


def test_the_processes_environment_has_no_proxy(monkeypatch) -> None:
    env = {"PATH": "/bin", "http_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://p:3128",
           "all_proxy": "socks5://p:1080", "ALL_PROXY": "x", "grpc_proxy": "http://p:1",
           "Https_Proxy": "x", "ftp_proxy": "x", "no_proxy": "example.org",
           "no_grpc_proxy": "x", "PROXY_HOME": "kept: not a proxy variable"}
    out = loopback_env(env)
    assert out == {"PATH": "/bin", "PROXY_HOME": "kept: not a proxy variable",
                   "no_proxy": out["no_proxy"], "NO_PROXY": out["no_proxy"]}
    assert LOOPBACK in out["no_proxy"].split(",") and "localhost" in out["no_proxy"].split(",")
    assert env["http_proxy"] == "http://127.0.0.1:9"  # the caller's own environment is left


def test_a_secret_file_is_the_owners_only(tmp_path) -> None:
    root = ClientSecrets(bytes(range(32)))
    old = os.umask(0)  # the most permissive umask: the file is 0600 all the same
    try:
        path = write_private(tmp_path / "client.hex", root.root_bytes().hex())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):  # never written through what someone placed there
        write_private(path, "00" * 32)
    assert node_secret({SECRET_FILE_KEY: str(path)}).root_bytes() == root.root_bytes()


def test_a_node_refuses_a_secret_file_others_can_read(tmp_path) -> None:
    path = write_private(tmp_path / "client.hex", "ab" * 32)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        node_secret({SECRET_FILE_KEY: str(path)})
    with pytest.raises(ConfigError, match="cannot read"):  # never fresh entropy instead
        node_secret({SECRET_FILE_KEY: str(tmp_path / "missing.hex")})
    empty = write_private(tmp_path / "empty.hex", "")
    with pytest.raises(ConfigError, match="empty"):
        node_secret({SECRET_FILE_KEY: str(empty)})


def test_a_node_config_may_still_hold_the_secret_itself() -> None:
    # The simulation's and the in-memory grid's node configs, which no command line shows.
    assert node_secret({SECRET_KEY: "cd" * 32}).root_bytes() == bytes([0xCD] * 32)
    assert not node_secret({}).given  # none: fresh entropy


def test_a_serverapp_that_ended_with_a_fedrec_error_is_one_line(tmp_path) -> None:
    """The ServerApp's error.txt holds its traceback; a fedrec error (a lost service, no update)
    is said in one line that points at it, anything else keeps the whole traceback."""
    error = tmp_path / "error.txt"
    error.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
                     "fedrec.errors.ProtocolError: round 2, step 'average_embeddings': SuperNode "
                     "900, which hosts the aggregator, did not answer\n")
    assert str(serverapp_failed(error)) == (
        "the ServerApp failed: round 2, step 'average_embeddings': SuperNode 900, which hosts "
        f"the aggregator, did not answer (traceback in {error})")
    error.write_text("Traceback (most recent call last):\nKeyError: 'x'\n")
    assert str(serverapp_failed(error)) == ("the ServerApp failed:\nTraceback (most recent call "
                                            "last):\nKeyError: 'x'\n")


def test_a_full_disk_while_starting_a_deployment_s_process_is_one_line(
        tmp_path, monkeypatch) -> None:
    """Each process of a deployment writes into its log in the work folder; a full disk there
    is one WriteError naming the logs, not a traceback, and nothing is started."""
    import errno
    from pathlib import Path

    from fedrec.errors import WriteError

    real_open = Path.open

    def full(self, mode="r", *args, **kwargs):
        if self.suffix == ".log":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full)
    dep = Deployment(tmp_path, dict(os.environ))
    with pytest.raises(WriteError, match=r"^could not write the deployment's logs to .*logs "
                                         r"\(No space left on device\)$"):
        dep.start("superlink", ["true"])
    assert dep.procs == [] and dep.reaper is None
