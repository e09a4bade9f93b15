"""A model split across two llama.cpp RPC servers on loopback: same tokens, clear failures.

Each server is a `samplescope rpc-server` subprocess with one thread (the machine has
two cores), always terminated by the fixture. An rpc-server serves one client at a
time, so the servers a loaded backend holds are not probed again until it closes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, NoticeEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.rpc import Endpoint, RpcError
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.commands.bench.local_rpc_servers import LocalServer, free_port, local_servers
from tui.cli.commands.info import describe_servers

QUESTION = [ChatMessage("user", "Name three colours of the rainbow.")]
GREEDY = SamplerSettings(temperature=0.0)
SAMPLED = DEFAULT_CHAT_SETTINGS.with_changes(seed=2024)
MAX_TOKENS = 8


def _tokens(backend: LlamaBackend, settings: SamplerSettings) -> tuple[int, ...]:
    backend.reset()
    events = list(backend.generate(QUESTION, LiveSettings(settings), max_tokens=MAX_TOKENS))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason in ("eos", "max_tokens")
    return finished.token_ids


@pytest.fixture(scope="module")
def split_backend(
    default_model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LlamaBackend, Path, list[Endpoint]]]:
    """The default model split across two servers, loaded as the session's local one."""
    log = tmp_path_factory.mktemp("rpc-log") / "llama.log"
    with local_servers(2, threads=1) as servers:
        backend = LlamaBackend.load(
            default_model_path,
            n_ctx=2048,
            n_batch=64,
            n_threads=1,
            log_path=log,
            rpc=[s.endpoint for s in servers],
        )
        try:
            yield backend, log, [s.endpoint for s in servers]
        finally:
            backend.close()


def test_the_layers_are_on_both_servers(
    split_backend: tuple[LlamaBackend, Path, list[Endpoint]],
) -> None:
    backend, log, endpoints = split_backend
    assert backend.info.placement == "2 RPC servers"
    text = log.read_text(encoding="utf-8")
    # llama.cpp's load report: every layer offloaded, weights and KV on each server.
    assert "offloaded 31/31 layers to GPU" in text
    for endpoint in endpoints:
        assert f"[{endpoint}] model buffer size" in text
        assert f"[{endpoint}] KV buffer size" in text


def test_greedy_and_seeded_tokens_equal_a_local_run(
    split_backend: tuple[LlamaBackend, Path, list[Endpoint]], llama_backend: LlamaBackend
) -> None:
    backend = split_backend[0]
    assert _tokens(backend, GREEDY) == _tokens(llama_backend, GREEDY)
    assert _tokens(backend, SAMPLED) == _tokens(llama_backend, SAMPLED)


def test_an_unreachable_server_is_a_clear_error_within_seconds(default_model_path: Path) -> None:
    dead = Endpoint("127.0.0.1", free_port())
    started = time.monotonic()
    with pytest.raises(RpcError, match=f"RPC server {dead} cannot be reached: connection refused"):
        LlamaBackend.load(default_model_path, n_ctx=256, n_threads=1, rpc=[dead])
    assert time.monotonic() - started < 5
    # The command line: one line naming the server, no traceback, exit code 2.
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "generate", "hi", "--rpc", str(dead)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"samplescope: RPC server {dead} cannot be reached: connection refused"
    ]


def _kill(server: LocalServer) -> None:
    server.process.kill()
    server.process.wait()


def test_a_server_killed_mid_reply_ends_it_with_an_error_and_the_backend_recovers(
    default_model_path: Path, tmp_path: Path
) -> None:
    with local_servers(1, threads=1, mem_mb=256) as (server,):
        # --mem is what the server reports to clients (info --rpc).
        lines, usable = describe_servers((server.endpoint,))
        assert usable and lines[1].endswith("256.0 MiB free of 256.0 MiB")
        backend = LlamaBackend.load(
            default_model_path,
            n_ctx=256,
            n_batch=64,
            n_threads=1,
            log_path=tmp_path / "llama.log",
            rpc=[server.endpoint],
        )
        try:
            events = []
            for event in backend.generate(QUESTION, LiveSettings(GREEDY), max_tokens=64):
                events.append(event)
                if isinstance(event, TokenEvent) and event.index == 1:
                    _kill(server)
            finished = events[-1]
            assert isinstance(finished, FinishedEvent) and finished.reason == "error"
            assert finished.error is not None and "\n" not in finished.error
            assert f"RPC server {server.endpoint} cannot be reached" in finished.error
            # ggml's own abort message, quoted from the child process that held the model.
            assert "Remote RPC server crashed or returned malformed response" in finished.error
            assert len(finished.token_ids) == 2  # the partial reply is kept
            assert backend.runtime.lost and backend.context_used == 0
            # The next reply tries to load the model again and names the dead server.
            events = list(backend.generate(QUESTION, LiveSettings(GREEDY), max_tokens=4))
            assert isinstance(events[0], NoticeEvent)
            assert isinstance(events[-1], FinishedEvent) and events[-1].reason == "error"
            assert f"RPC server {server.endpoint} cannot be reached" in (events[-1].error or "")
            # A server back on the same port: the next reply works again.
            with local_servers(1, threads=1, ports=[server.endpoint.port]):
                again = list(backend.generate(QUESTION, LiveSettings(GREEDY), max_tokens=4))
            assert isinstance(again[-1], FinishedEvent), again[-1]
            assert again[-1].token_ids == finished.token_ids[:2] + again[-1].token_ids[2:]
        finally:
            started = time.monotonic()
            backend.close()
            assert time.monotonic() - started < 5
