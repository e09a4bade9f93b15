"""A llama context in a child process: the way a model split across RPC servers runs.

llama.cpp's RPC client has no error path: when a server dies or answers nonsense it
calls `GGML_ABORT("Remote RPC server crashed or returned malformed response")`, which
ends the process that holds the connection. So that process is a child
(`backend.llama.isolated_child`) holding the model and its context; this process keeps
the vocabulary, the samplers and the screen. A dead child is a `ContextLostError`
naming the servers that no longer answer: the reply ends with an error, the chat is
kept, and `reconnect` loads the model through the servers again.

Requests and replies travel over a socket pair as pickled tuples; the logits come as
raw float32 bytes into one reusable buffer (one message per decoded token, about
0.2 MB for a 49k vocabulary: tens of microseconds, far below an RPC round trip).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from backend.llama import isolated_child
from backend.llama.context import BatchToken, ContextLostError, Layout, LlamaError, Switch
from backend.llama.log import current_log_path
from backend.llama.rpc import Endpoint, RpcError, probe, probe_all

#: How long `close` waits for the child to exit before killing it.
CLOSE_TIMEOUT_S = 5.0
#: The probe after a loss only has to tell a dead server from a live one.
LOSS_PROBE_TIMEOUT_S = 1.0
#: What the child was doing when it was lost, by request.
_DOING = {
    "decode": "decoding",
    "decode_all": "scoring",
    "seq_rm": "trimming the cache",
    "seq_add": "shifting the cache",
    "can_shift": "querying the cache",
    "clear": "clearing the cache",
}


class ChildContext:
    """The `backend.llama.context.Context` of a model loaded by a child process.

    Args:
        path: The GGUF file.
        endpoints: The RPC servers (already probed by the caller).
        n_gpu_layers: Layers to offload to the servers (negative: all).
        n_ctx: Context size.
        n_batch: Largest batch.
        n_threads: Threads for what runs on this machine.

    Raises:
        RpcError: A server failed while the model was loading (named).
        LlamaError: llama.cpp could not load the model or create the context.
    """

    def __init__(
        self,
        path: Path,
        endpoints: Sequence[Endpoint],
        n_gpu_layers: int,
        n_ctx: int,
        n_batch: int,
        n_threads: int,
    ) -> None:
        log = current_log_path()
        self._spec = isolated_child.ChildSpec(
            str(path),
            tuple(map(str, endpoints)),
            n_gpu_layers,
            n_ctx,
            n_batch,
            n_threads,
            None if log is None else str(log),
        )
        self._endpoints = tuple(endpoints)
        self.n_batch = n_batch
        self.n_seq_max = 1  # one sequence: see `decode_batch`
        self.n_ctx = n_ctx
        self.seq_cells = n_ctx
        self.placement = ""
        self.lost = False
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._logits: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._rows: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._start()

    # ---- the child ----------------------------------------------------------------

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        # The child's output (ggml's abort message); closed by `close`.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        # The package this module was imported from, for `python -m` in the child.
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-m", isolated_child.__name__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                env=env,
                # Its own session: a ctrl+c in the terminal is the parent's to handle.
                start_new_session=True,
            )
        self._conn = Connection(ours.detach())
        try:
            # A dict, not the dataclass: unpickling it would import the child's module
            # a second time under its package name.
            self._conn.send(dataclasses.asdict(self._spec))
            reply = self._receive("loading the model")
            if reply[0] == "error":
                error_type = RpcError if reply[1] == "rpc" else LlamaError
                raise error_type(reply[2])
        except BaseException:
            self.lost = True
            self.close()
            raise
        _, self.n_ctx, n_vocab, self.placement = reply
        self.seq_cells = self.n_ctx
        self._logits = np.zeros(n_vocab, dtype=np.float32)
        self.lost = False

    def _receive(self, doing: str) -> Any:
        assert self._conn is not None
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise self._loss(doing) from None

    def _request(self, *message: Any) -> Any:
        if self.lost or self._conn is None:
            raise ContextLostError(
                "the model is not loaded (its RPC connection was lost): send a message to"
                " load it again"
            )
        try:
            self._conn.send(message)
        except OSError:
            raise self._loss(_DOING.get(message[0], message[0])) from None
        reply = self._receive(_DOING.get(message[0], message[0]))
        if reply[0] != "ok":
            raise LlamaError(reply[1])
        return reply[1]

    def _loss(self, doing: str) -> ContextLostError:
        """Mark the context lost; the error says which servers stopped answering."""
        self.lost = True
        code = self._reap()
        said = _last_abort_message(self._stderr)
        dead = []
        for endpoint in self._endpoints:
            try:
                probe(endpoint, LOSS_PROBE_TIMEOUT_S)
            except RpcError as error:
                dead.append(str(error))
        cause = "; ".join(dead) if dead else f"its process exited with code {code}"
        detail = f" (llama.cpp: {said})" if said else ""
        return ContextLostError(f"lost the RPC model while {doing}: {cause}{detail}")

    def _reap(self) -> int | None:
        """Close the connection and wait for the child (killing it if it hangs)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        process, self._process = self._process, None
        if process is None:
            return None
        try:
            return process.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            return process.wait()

    def reconnect(self) -> None:
        """Start a new child: probe the servers, load the model, empty cache.

        Raises:
            RpcError: A server still cannot be used (named).
        """
        self.close()
        try:
            probe_all(self._endpoints)
        except RpcError as error:
            raise RpcError(
                f"cannot load the model through the RPC servers again: {error}"
            ) from None
        self._start()

    # ---- the Context interface ----------------------------------------------------

    def decode(self, tokens: Sequence[int], start: int, seq: int) -> int:
        """Decode in the child; its logits are copied here when it succeeds."""
        code = int(self._request("decode", list(tokens), start, seq))
        if code == 0:
            assert self._conn is not None
            try:
                self._conn.recv_bytes_into(self._logits)
            except (EOFError, OSError):
                raise self._loss(_DOING["decode"]) from None
        return code

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """One sequence in the model's own layout: nothing to do (no other is offered)."""
        if n_seqs > 1 or (layout is not None and layout.legacy):
            raise LlamaError("a model split across RPC servers decodes one sequence at a time")
        return "kept"

    def decode_batch(self, batch: Sequence[BatchToken]) -> int:
        """Not offered: a model split across servers holds one sequence."""
        raise LlamaError("a model split across RPC servers decodes one sequence at a time")

    def logits(self, row: int) -> npt.NDArray[np.float32]:
        """The last decoded token's logits (this process's copy; the next decode
        overwrites it, as llama.cpp's own buffer would be)."""
        return self._logits

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """Not offered: a model split across servers holds one sequence."""
        raise LlamaError("a model split across RPC servers decodes one sequence at a time")

    def decode_all(self, tokens: Sequence[int], start: int, first_row: int = 0) -> int:
        """Decode in the child with logits for every token from `first_row` on; the
        rows are copied here."""
        code = int(self._request("decode_all", list(tokens), start, first_row))
        if code == 0:
            assert self._conn is not None
            n_rows = len(tokens) - min(first_row, len(tokens) - 1)
            # Flat: `recv_bytes_into` sizes a buffer by its first dimension.
            flat = np.empty(n_rows * self._logits.shape[0], dtype=np.float32)
            try:
                self._conn.recv_bytes_into(flat)
            except (EOFError, OSError):
                raise self._loss(_DOING["decode_all"]) from None
            self._rows = flat.reshape(n_rows, -1)
        return code

    def all_logits(self, n: int) -> npt.NDArray[np.float32]:
        """The rows of the last `decode_all` (this process's copy)."""
        return self._rows[:n]

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """`llama_memory_seq_rm` in the child."""
        return bool(self._request("seq_rm", seq, p0, p1))

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        """`llama_memory_seq_add` in the child."""
        self._request("seq_add", seq, p0, p1, delta)

    def can_shift(self) -> bool:
        """`llama_memory_can_shift` in the child."""
        return bool(self._request("can_shift"))

    def clear(self) -> None:
        """Empty the child's KV cache."""
        self._request("clear")

    def close(self) -> None:
        """Ask the child to free the model and exit (idempotent)."""
        if self._conn is not None and not self.lost:
            with contextlib.suppress(OSError):  # already gone
                self._conn.send(("close",))
        self._reap()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _last_abort_message(stderr: IO[bytes] | None) -> str:
    """ggml's last abort message in the child's output (see `isolated_child`)."""
    if stderr is None:
        return ""
    try:
        stderr.seek(0, os.SEEK_END)
        stderr.seek(max(0, stderr.tell() - 8192))
        tail = stderr.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    found = [line for line in tail.splitlines() if line.startswith(isolated_child.ABORT_MARK)]
    return found[-1].removeprefix(isolated_child.ABORT_MARK).strip() if found else ""
