"""The child process of `backend.llama.isolated`: a model split across RPC servers.

Run as `python -m backend.llama.isolated_child FD`, FD being its end of a socket pair.
It reads a `ChildSpec` (as a dict), loads the model with the servers' devices first in
`llama_model_params.devices` (then this machine's GPUs, as llama.cpp orders them),
answers `("ready", n_ctx, n_vocab, placement)` or `("error", kind, message)`, then
serves the `Context` requests until `("close",)` or the end of the connection. If a
server dies, llama.cpp aborts this process; the parent notices the closed socket.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import llama_cpp

from backend.llama.context import LocalContext, load_model
from backend.llama.ggml_devices import (
    Device,
    device_array,
    local_offload_devices,
    on_abort,
    rpc_devices,
)
from backend.llama.log import install_llama_log
from backend.llama.rpc import Endpoint, RpcError, parse_endpoints
from sampling.errors import SamplescopeError


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """What the child loads (sent by the parent as a dict, its first message)."""

    path: str
    endpoints: tuple[str, ...]
    n_gpu_layers: int
    n_ctx: int
    n_batch: int
    n_threads: int
    log_path: str | None


#: Marks ggml's abort message in this process's output, for the parent to quote.
ABORT_MARK = "samplescope: ggml abort: "


def _report_abort(message: str) -> None:
    # ggml's message is "path/file.cpp:line: what happened"; keep what happened.
    what = message.split(": ", 1)[-1].strip()
    os.write(2, f"{ABORT_MARK}{what}\n".encode())


def placement(endpoints: tuple[Endpoint, ...], local: list[Device], model: Any, n_gpu: int) -> str:
    """What the status line says about where the layers are, e.g. "2 RPC servers"."""
    where = f"{len(endpoints)} RPC server{'s' if len(endpoints) != 1 else ''}"
    where += "".join(f" + {device.name}" for device in local)
    total = int(llama_cpp.llama_model_n_layer(model)) + 1  # + the output layer, as llama.cpp
    offloaded = total if n_gpu < 0 else min(n_gpu, total)
    return where if offloaded == total else f"{offloaded}/{total} layers on {where}"


def open_model(spec: ChildSpec) -> tuple[Any, LocalContext, str]:
    """Load the model across the servers and create its context.

    Raises:
        RpcError: A server offers no device.
        SamplescopeError: llama.cpp could not load the model or create the context.
    """
    llama_cpp.llama_backend_init()
    endpoints = parse_endpoints(list(spec.endpoints))
    devices = [device for endpoint in endpoints for device in rpc_devices(endpoint)]
    local = local_offload_devices()
    array = device_array(devices + local)
    model = load_model(Path(spec.path), n_gpu_layers=spec.n_gpu_layers, devices=array)
    try:
        context = LocalContext(model, spec.n_ctx, spec.n_batch, spec.n_threads)
    except BaseException:
        llama_cpp.llama_model_free(model)
        raise
    return model, context, placement(endpoints, local, model, spec.n_gpu_layers)


def serve(conn: Connection, context: LocalContext) -> None:
    """Answer requests until ("close",) or the end of the connection."""
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        op = request[0]
        try:
            if op == "decode":
                code = context.decode(request[1], request[2], request[3])
                logits = context.logits(-1) if code == 0 else None
                conn.send(("ok", code))
                if logits is not None:
                    conn.send_bytes(logits.data)
                continue
            if op == "decode_all":
                tokens, first_row = request[1], request[3]
                code = context.decode_all(tokens, request[2], first_row)
                conn.send(("ok", code))
                if code == 0:
                    n_rows = len(tokens) - min(first_row, len(tokens) - 1)
                    conn.send_bytes(context.all_logits(n_rows).data)
                continue
            if op == "seq_rm":
                result: Any = context.seq_rm(*request[1:])
            elif op == "seq_add":
                context.seq_add(*request[1:])
                result = None
            elif op == "can_shift":
                result = context.can_shift()
            elif op == "clear":
                context.clear()
                result = None
            elif op == "close":
                return
            else:
                conn.send(("error", f"internal: unknown request {op!r}"))
                continue
        except SamplescopeError as error:
            conn.send(("error", str(error)))
            continue
        conn.send(("ok", result))


def main(argv: list[str]) -> int:
    """Load the model the parent describes and serve it; returns the exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    on_abort(_report_abort)
    conn = Connection(int(argv[1]))
    spec = ChildSpec(**conn.recv())
    if spec.log_path:
        install_llama_log(Path(spec.log_path))
    try:
        model, context, where = open_model(spec)
    except RpcError as error:
        conn.send(("error", "rpc", str(error)))
        return 1
    except SamplescopeError as error:
        conn.send(("error", "llama", str(error)))
        return 1
    conn.send(("ready", context.n_ctx, context.n_vocab, where))
    try:
        serve(conn, context)
    finally:
        context.close()
        llama_cpp.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
