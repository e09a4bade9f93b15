"""Rebuild a LlamaBackend's KV cache the way an earlier session built it.

llama.cpp computes a token decoded on its own (a batch of one: every sampled token,
and a one-token prefill chunk) with different kernels than a token inside a longer
prefill batch; on SmolLM2-135M Q4_1 the logits differ by up to ~1. So a reply
generated on a warm cache (a chat continued in the same session) is reproduced only
if the cache holds the same tokens computed the same way: each earlier prompt
prefilled in the same chunks (same n_batch, same reuse of what was cached), then each
earlier sampled token decoded alone, exactly as `LlamaBackend.generate` did.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.llama_backend import MAX_HEADROOM_SHARE, LlamaBackend
from backend.store_records import ChatRecord, ReplyRecord


def rebuild_cache(
    backend: LlamaBackend, chat: ChatRecord, chain: Sequence[ReplyRecord]
) -> list[str]:
    """Replay the cache effects of `chain` (oldest first) without sampling.

    For each reply: fit and prefill its prompt as `generate` does (keeping what the
    cache already holds), then decode its stored tokens one at a time — all but the
    last, which `generate` never decodes, except after a cancel.

    Returns:
        Notices when the rebuilt cache cannot match the recorded one (the prompt or
        the cached share differ from the reply's stats).
    """
    rt = backend.runtime
    notices: list[str] = []
    for reply in chain:
        max_tokens = max(reply.max_tokens or len(reply.token_ids), 1)
        budget = rt.n_ctx - min(max_tokens, int(rt.n_ctx * MAX_HEADROOM_SHARE))
        prompt = backend.prompt.fit(chat.conversation_before(reply), budget).tokens
        kept = backend._reuse_cache(prompt)  # the same reuse rule as generate
        stats = reply.stats
        if stats is not None and (
            stats.prompt_tokens != len(prompt) or stats.prefilled_tokens != len(prompt) - kept
        ):
            notices.append(
                f"could not rebuild the KV cache of reply {reply.number} exactly "
                f"(recorded {stats.prompt_tokens} prompt tokens, {stats.prefilled_tokens} "
                f"prefilled; now {len(prompt)} and {len(prompt) - kept})"
            )
        todo = prompt[kept:]
        for start in range(0, len(todo), rt.n_batch):
            rt.decode(todo[start : start + rt.n_batch])
        decoded = reply.token_ids if reply.finish_reason == "cancelled" else reply.token_ids[:-1]
        for token in decoded:
            if len(rt.cache) >= rt.n_ctx:
                break
            rt.decode_one(token)
    return notices
