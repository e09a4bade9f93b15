"""The model split across RPC servers against the same model on this machine.

`run_rpc_bench(model_path, endpoints)` measures, in one run, on the same model,
prompts and settings: decode tokens/s of `LlamaBackend.generate` (greedy) and prefill
tokens/s (a raw prompt in `n_batch` chunks), first with the model on this machine,
then split across the servers. The two runs are sequential, not interleaved: two
llama.cpp thread pools spinning on the same cores slow each other down many times
over. Each figure is the best of `repeats`. The servers are started by the caller
(`samplescope bench --only rpc` starts two on loopback).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from backend.bench.generation import PREFILL_TEXT, _ours_decode, _ours_prefill
from backend.llama.rpc import Endpoint
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class RpcBenchRow:
    """One speed through the servers next to the same speed on this machine."""

    metric: str
    rpc: float
    local: float

    @property
    def ratio(self) -> float:
        """rpc / local."""
        return self.rpc / self.local if self.local else float("inf")


def _speeds(
    backend: LlamaBackend, decode_tokens: int, prefill_tokens: int, repeats: int
) -> tuple[float, float, int]:
    """Best decode and prefill tokens/s, and how many prompt tokens were prefilled."""
    greedy = SamplerSettings(temperature=0.0)
    tokens = backend.runtime.tokenize(PREFILL_TEXT * 40, special=False)[:prefill_tokens]
    text = b"".join(backend.runtime.token_bytes(t) for t in tokens).decode("utf-8", "ignore")
    decode = prefill = 0.0
    for _ in range(repeats):
        decode = max(decode, _ours_decode(backend, greedy, decode_tokens)[0])
        prefill = max(prefill, _ours_prefill(backend, text))
    return decode, prefill, len(tokens)


def run_rpc_bench(
    model_path: Path,
    endpoints: Sequence[Endpoint],
    *,
    n_threads: int,
    n_ctx: int = 2048,
    n_batch: int = 256,
    decode_tokens: int = 64,
    prefill_tokens: int = 512,
    repeats: int = 3,
    log_path: Path | None = None,
) -> list[RpcBenchRow]:
    """Decode and prefill speeds through `endpoints` against this machine alone."""
    figures = []
    for rpc in ((), tuple(endpoints)):
        backend = LlamaBackend.load(
            model_path,
            n_ctx=n_ctx,
            n_batch=n_batch,
            n_threads=n_threads,
            log_path=log_path,
            rpc=rpc,
        )
        try:
            figures.append(_speeds(backend, decode_tokens, prefill_tokens, repeats))
        finally:
            backend.close()
    (local_decode, local_prefill, n), (rpc_decode, rpc_prefill, _) = figures
    where = f"{len(endpoints)} loopback servers"
    return [
        RpcBenchRow(
            f"decode tok/s, greedy ({decode_tokens} tokens), {where}", rpc_decode, local_decode
        ),
        RpcBenchRow(
            f"prefill tok/s ({n} tokens, batch {n_batch}), {where}", rpc_prefill, local_prefill
        ),
    ]


def format_rpc_rows(rows: list[RpcBenchRow]) -> str:
    """The rows as a text table."""
    lines = [f"{'metric':<58} {'rpc':>9} {'local':>9} {'ratio':>6}"]
    for row in rows:
        lines.append(f"{row.metric:<58} {row.rpc:>9.1f} {row.local:>9.1f} {row.ratio:>6.3f}")
    return "\n".join(lines)
