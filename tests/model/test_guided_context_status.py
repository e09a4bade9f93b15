"""The status line's context count after a guided reply, on the real default model: the
reply ran beside its negative prompt in a lockstep context that was freed, so the chat's
memory does not hold the conversation. The line counts the conversation's tokens (what
the next prompt needs before its message) and says the next reply prefills them again,
which it does; an unguided reply's count is what the memory holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.view import StatusLine

SIZE = (120, 40)
GUIDED = DEFAULT_CHAT_SETTINGS.with_changes(
    seed=5, guidance_scale=2.0, negative_prompt="Write about a desert."
)


@pytest.mark.anyio
async def test_after_a_guided_reply_the_status_counts_the_conversation_and_says_it_prefills(
    default_model_path: Path,
) -> None:
    from backend.session.llama_backend import LlamaBackend

    llama = LlamaBackend.load(default_model_path, n_threads=1, n_ctx=1024)
    app = SamplescopeApp(llama, max_tokens=12, cursor_blink=False, settings=GUIDED)
    try:
        async with app.run_test(size=SIZE) as pilot:
            first = await send_message(pilot, app, "Write one line about the sea.")
            await wait_until(pilot, lambda: not chat_of(app).runner.running)  # job returned
            # Its prompt and its tokens, the last one sampled but never decoded (as an
            # unguided reply's memory holds them).
            conversation = first.stats.prompt_tokens + len(first.token_ids) - 1
            assert first.stats.cached_tokens == conversation
            assert llama.context_used < conversation  # the lockstep context was freed
            status = chat_of(app).status
            assert (status.ctx_used, status.ctx_note) == (conversation, "prefills again")
            line = app.query_one(StatusLine).render().plain
            assert f"ctx {conversation}/1024 (prefills again)" in line
            # It does: the next reply computes the whole conversation again.
            held = llama.context_used
            second = await send_message(pilot, app, "And one about the sky.")
            assert second.stats.prefilled_tokens >= conversation - held
            assert second.stats.prompt_tokens > conversation
            # Guidance off: the reply runs in the chat's context, which holds it.
            app.live.current = DEFAULT_CHAT_SETTINGS.with_changes(seed=5)
            await send_message(pilot, app, "Thanks.")
            await wait_until(pilot, lambda: not chat_of(app).runner.running)
            status = chat_of(app).status
            assert (status.ctx_used, status.ctx_note) == (llama.context_used, "")
            assert "prefills again" not in app.query_one(StatusLine).render().plain
    finally:
        llama.close()
