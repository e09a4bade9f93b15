"""Draw the README's screenshot on the real default model (a Pilot script, not a test).

    .venv/bin/python -m tests.model.readme_screenshot [OUT.svg]

Sends one message with the reply timeline (with the kept count) and the tail plot
shown, then selects the reply's highest-entropy token with the token cursor and
saves the screen as SVG (default: assets/screenshot.svg).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, nth_reply_finished, screenshot_at_token, type_message
from tui.app import SamplescopeApp

SIZE = (150, 40)
PROMPT = "Describe a lighthouse at night in three sentences."
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=0.9, min_p=0.0)


async def shoot(out: Path) -> None:
    """Run the app on the default model and save the screenshot to `out`."""
    backend = LlamaBackend.load(resolve_model_path(None), n_ctx=2048, n_threads=2)
    try:
        app = SamplescopeApp(backend, settings=SETTINGS, max_tokens=80, cursor_blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f4", "f4", "f5")
            await type_message(pilot, app, PROMPT)
            await nth_reply_finished(pilot, app)
            tokens = chat_of(app).conversation.replies[-1].tokens
            spike = max(range(len(tokens)), key=lambda i: tokens[i].step.entropy)
            out.write_text(await screenshot_at_token(pilot, app, spike), encoding="utf-8")
    finally:
        backend.close()


if __name__ == "__main__":
    asyncio.run(shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "assets/screenshot.svg")))
