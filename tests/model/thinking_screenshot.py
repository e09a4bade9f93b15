"""Draw the screenshot of docs/thinking.md on the real default model (a Pilot script).

    .venv/bin/python -m tests.model.thinking_screenshot [OUT.svg]

Writes the thinking copy of SmolLM2 (its chat template opens `<think>` in the
generation prompt: `tests.thinking_models`), sends one message with a reasoning budget
of 24 and the reply timeline shown, puts the token cursor on the answer's first token
and saves the screen as SVG (default: assets/thinking-screenshot.svg): the thinking
folded under its line, the timeline's mark where the answer begins.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from sampling.sections import Section
from sampling.settings.record import SamplerSettings
from tests.helpers import chat_of, nth_reply_finished, screenshot_at_token, type_message
from tests.thinking_models import thinking_copy
from tui.app import SamplescopeApp

SIZE = (150, 40)
PROMPT = "What is 17 times 23?"
SETTINGS = SamplerSettings(
    temperature=0.6,
    top_k=20,
    top_p=0.95,
    seed=5,
    reasoning_budget=24,
    reasoning_budget_message=" Time to answer.",
)


async def shoot(out: Path) -> None:
    """Run the app on the thinking copy of the default model and save the screenshot."""
    with tempfile.TemporaryDirectory() as folder:
        path = thinking_copy(resolve_model_path(None), Path(folder))
        backend = LlamaBackend.load(path, n_ctx=2048, n_threads=2)
        try:
            app = SamplescopeApp(backend, settings=SETTINGS, max_tokens=64, cursor_blink=False)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("f4")
                await type_message(pilot, app, PROMPT)
                await nth_reply_finished(pilot, app)
                tokens = chat_of(app).conversation.replies[-1].tokens
                sections = [token.step.section for token in tokens]
                answer = sections.index(Section.ANSWER) if Section.ANSWER in sections else 0
                out.write_text(await screenshot_at_token(pilot, app, answer), encoding="utf-8")
        finally:
            backend.close()


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "assets/thinking-screenshot.svg"
    asyncio.run(shoot(Path(target)))
