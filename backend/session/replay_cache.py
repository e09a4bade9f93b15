"""Rebuild a backend's memory the way the original session built it.

llama.cpp computes a token decoded on its own (a batch of one: every sampled token,
and a one-token prefill chunk) with different kernels than a token inside a longer
prefill batch; on SmolLM2-135M Q4_1 the logits differ by up to ~1 (measured), enough
to change sampled tokens. So a reply generated on a warm cache (a chat continued in
the same session, or a regenerated reply) is reproduced only if the cache holds the
same tokens computed the same way. The reply's stats say how much of its prompt came
from the cache (prompt_tokens - prefilled_tokens); from that:

- a chain of earlier replies is replayed without sampling: each prompt prefilled in
  the same way (`Memory.prefill`) after keeping what the cache held, then each sampled token
  decoded alone (as many as the reply's stats say the cache held at its end: all but
  the last, unless the reply was cancelled or failed before sampling again) — exactly
  what the generation loop did;
- when a reply reused more of its prompt than that chain explains, a generation that
  was discarded (a regenerate: same prompt) had filled the cache: its prompt is
  prefilled the same way and the cache cut back to the recorded length.
"""

from __future__ import annotations

from backend.chat.completion import document_text
from backend.chat.events import Decoding
from backend.llama.context import Layout
from backend.session.backend import MAX_HEADROOM_SHARE, SessionBackend
from backend.store.records import ChatRecord, ReplyRecord
from sampling.settings.registry import registry_of


def reused_tokens(reply: ReplyRecord) -> int:
    """How many prompt tokens the reply took from the KV cache (0 if unknown)."""
    stats = reply.stats
    return 0 if stats is None else max(0, stats.prompt_tokens - stats.prefilled_tokens)


def warm_chain(chat: ChatRecord, reply: ReplyRecord) -> list[ReplyRecord]:
    """The earlier replies whose generations built the cache `reply` started from.

    A reply that reused cached tokens continued the previous reply's generation in
    the same session; that one may itself have continued the one before, and so on.

    Returns:
        The chain, oldest first ([] when `reply` started from an empty cache or is
        the chat's first reply).
    """
    replies = chat.replies
    chain: list[ReplyRecord] = []
    current = reply
    while reused_tokens(current) > 0 and current.number > 1:
        current = replies[current.number - 2]
        chain.insert(0, current)
    return chain


def decoded_tokens(reply: ReplyRecord) -> tuple[int, ...]:
    """The reply's tokens its generation decoded into the cache after its prompt.

    `generate` never decodes the last sampled token, unless it was cancelled (the
    cancel check comes after the decode) or failed before it could sample again; the
    recorded cache size tells which. Replies stored without it follow the rule.
    """
    stats = reply.stats
    if stats is not None and stats.cached_tokens is not None:
        return reply.token_ids[: max(0, stats.cached_tokens - stats.prompt_tokens)]
    cancelled = reply.finish_reason == "cancelled"
    return reply.token_ids if cancelled else reply.token_ids[:-1]


def prompt_of(backend: SessionBackend, chat: ChatRecord, reply: ReplyRecord) -> list[int]:
    """The prompt tokens `generate` fed for `reply` (same fitting budget)."""
    model = backend.model
    max_tokens = max(reply.max_tokens or len(reply.token_ids), len(reply.token_ids), 1)
    budget = model.n_ctx - min(max_tokens, int(model.n_ctx * MAX_HEADROOM_SHARE))
    if reply.mode == "completion":  # the document alone, cut as generate cuts it
        prompt = backend.prompt.raw_tokens(document_text(chat.conversation_before(reply)))
        keep = 1 if prompt and prompt[0] == model.bos else 0
        cut = max(0, len(prompt) - budget)
        return prompt[:keep] + prompt[cut + keep :] if cut else prompt
    return backend.prompt.fit(chat.conversation_before(reply), budget).tokens


def _prefill(backend: SessionBackend, tokens: list[int]) -> None:
    for _ in backend.session.memory.prefill(tokens):
        pass


def _fill_up(backend: SessionBackend, prompt: list[int], reply: ReplyRecord) -> tuple[int, str]:
    """Keep what the cache shares with `prompt`; redo a discarded generation if needed.

    Returns:
        (tokens the cache now holds, a notice or "").
    """
    memory = backend.session.memory
    kept = memory.reuse(prompt)  # the same reuse rule as generate
    target = reused_tokens(reply)
    if kept < target:
        _prefill(backend, prompt[kept:])
        kept = memory.keep(target)
    stats = reply.stats
    if stats is not None and (stats.prompt_tokens != len(prompt) or kept != target):
        return kept, (
            f"could not rebuild the KV cache of reply {reply.number} exactly (recorded "
            f"{stats.prompt_tokens} prompt tokens of which {target} cached; now "
            f"{len(prompt)} and {kept}): the replay may differ"
        )
    return kept, ""


def prepare_cache(backend: SessionBackend, chat: ChatRecord, reply: ReplyRecord) -> list[str]:
    """Reset the cache and rebuild what `reply` started from (see the module doc).

    Returns:
        Notices when the rebuilt cache cannot match the recorded one.
    """
    backend.reset()
    notices: list[str] = []
    if reused_tokens(reply) == 0:
        return notices
    memory = backend.session.memory
    lockstep = _lockstep(reply)
    if lockstep is not None:  # its warm cache was in its lockstep context: built there
        layout = Layout(lockstep.streams, lockstep.repack)
        memory.reserve(len(lockstep.settings), backend.model.n_ctx, layout)
    for earlier in warm_chain(chat, reply):
        prompt = prompt_of(backend, chat, earlier)
        kept, notice = _fill_up(backend, prompt, earlier)
        if notice:
            notices.append(notice)
        _prefill(backend, prompt[kept:])
        for token in decoded_tokens(earlier):
            if len(memory.tokens()) >= backend.model.n_ctx:
                break
            memory.append([token])
    _, notice = _fill_up(backend, prompt_of(backend, chat, reply), reply)
    if notice:
        notices.append(notice)
    return notices


def _lockstep(reply: ReplyRecord) -> Decoding | None:
    """The reply's lockstep record (None: decoded alone, or a beam, or unreadable)."""
    if reply.decoding is None:
        return None
    try:
        return Decoding.from_json(reply.decoding, registry_of(reply.settings_at(0)))
    except ValueError:
        return None
