"""Draw the grammar screenshot of docs/grammar.md on the real default model (a Pilot script).

    .venv/bin/python -m tests.model.grammar_screenshot [OUT.svg]

Sends one message under the "json person" preset (a JSON schema) with the reply
timeline shown, selects the step where the grammar removed the most probability mass
and saves the screen as SVG (default: assets/grammar-screenshot.svg).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, nth_reply_finished, screenshot_at_token, type_message
from tui.app import SamplescopeApp
from tui.resources import shipped_presets

SIZE = (150, 40)
PROMPT = "Describe a person as JSON."


async def shoot(out: Path) -> None:
    """Run the app on the default model and save the screenshot to `out`."""
    backend = LlamaBackend.load(resolve_model_path(None), n_ctx=2048, n_threads=2)
    settings = shipped_presets()["json person"].with_changes(seed=42)
    try:
        app = SamplescopeApp(backend, settings=settings, max_tokens=80, cursor_blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f4")
            await type_message(pilot, app, PROMPT)
            await nth_reply_finished(pilot, app)
            tokens = chat_of(app).conversation.replies[-1].tokens
            removed = [token.step.figure("grammar", "removed") or 0.0 for token in tokens]
            most = max(range(len(tokens)), key=lambda i: removed[i])
            out.write_text(await screenshot_at_token(pilot, app, most), encoding="utf-8")
    finally:
        backend.close()


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "assets/grammar-screenshot.svg"
    asyncio.run(shoot(Path(target)))
