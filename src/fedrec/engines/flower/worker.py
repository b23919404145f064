"""A warm ClientApp executor for a SuperNode started with ``--isolation process``.

Flower's default (``--isolation subprocess``) starts a new ``flwr-clientapp`` process for every
message; importing torch and fedrec then costs seconds per protocol step. With ``--isolation
process`` the SuperNode leaves task execution to an outside process: this one. It connects to
the SuperNode's runtime API (loopback), acquires ClientApp tasks one after another and runs each
in this same (already warm) process, with Flower's own task I/O functions
(:func:`flwr.supernode.runtime.run_clientapp.pull_task_input`, ``push_message``,
``push_task_output``) and our :data:`fedrec.engines.flower.node.client_app` -- the ClientApp the
FAB names. Nothing is kept in this process between tasks: state lives in Flower's
``Context.state`` exactly as with per-message processes. It exits when its SuperNode does.

Written against flwr 1.42 (these are Flower's runtime internals: pinned ``flwr>=1.42,<1.43``).

    python -m fedrec.engines.flower.worker --runtime-api-address 127.0.0.1:PORT --parent-pid PID
"""

from __future__ import annotations

import argparse
import logging
import sys
import time


def run_task(address: str, token: str, app) -> None:
    from flwr.app import Error, Message
    from flwr.common.constant import ErrorCode, SubStatus
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supercore.interceptors import (
        RuntimeTokenHttpInterceptor,
        RuntimeVersionHttpInterceptor,
    )
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient
    from flwr.supernode.runtime.run_clientapp import (
        pull_task_input,
        push_message,
        push_task_output,
    )

    client = RuntimeHttpClient.from_server_address(
        server_address=address, insecure=True, root_certificates=None,
        interceptors=[RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"),
                      RuntimeTokenHttpInterceptor(token)],
        retry_invoker=make_simple_http_retry_invoker(),
    )
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    heartbeat.start()
    context = None
    status, details = SubStatus.FAILED, "ClientApp task failed"
    try:
        message, context, _run, _fab = pull_task_input(client)
        try:
            reply = app(message=message, context=context)
            status, details = SubStatus.COMPLETED, ""
        except Exception as exc:  # reported to the ServerApp as an error reply
            logging.exception("ClientApp raised an exception")
            reason = f"{type(exc).__name__}: {exc}"
            reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason),
                            reply_to=message)
            details = reason
        push_message(client, reply, context)
    finally:
        push_task_output(client=client, context=context, sub_status=status, details=details)
        if heartbeat.is_running:
            heartbeat.stop()
        client.close()


def serve(address: str, parent_pid: int | None, poll: float = 0.05) -> None:
    import torch

    torch.set_num_threads(1)
    from flwr.proto.runtime_pb2 import AcquireTaskRequest
    from flwr.supercore.app_utils import start_parent_process_monitor
    from flwr.supercore.constant import TaskType
    from flwr.supercore.interceptors import RuntimeVersionHttpInterceptor
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient

    from fedrec.engines.flower.node import client_app  # the warm part: imported once

    if parent_pid is not None:
        start_parent_process_monitor(parent_pid)
    link = RuntimeHttpClient.from_server_address(
        server_address=address, insecure=True, root_certificates=None,
        interceptors=[RuntimeVersionHttpInterceptor(component_name="SuperExec")],
        retry_invoker=make_simple_http_retry_invoker(),
    )
    while True:
        res = link.AcquireTask(AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP]))
        if res.HasField("task") and res.token:
            try:
                run_task(address, res.token, client_app)
            except Exception:
                logging.exception("task failed")
            continue
        time.sleep(poll)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runtime-api-address", required=True)
    p.add_argument("--parent-pid", type=int, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        serve(args.runtime_api_address, args.parent_pid)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
