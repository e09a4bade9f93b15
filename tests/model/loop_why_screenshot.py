"""Draw the why view of a real loop on the default model (a Pilot script, not a test).

    .venv/bin/python -m tests.model.loop_why_screenshot [OUT.svg]

Greedy with DRY on (multiplier 0.8), SmolLM2 still repeats a 64-token block of lines
of a poem about the sea: each copy holds newlines, DRY's sequence breakers. The
reply stops on the loop; the why view opens on its last copy.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from backend.config.config import Config
from backend.config.model_path import resolve_model_path
from backend.session.llama_backend import LlamaBackend
from backend.session.loop_watch import LoopGuard
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import nth_reply_finished, type_message, wait_until
from tui.app import SamplescopeApp
from tui.loops.why_screen import LoopWhyScreen

SIZE = (150, 44)
PROMPT = "Write a poem about the sea."
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(temperature=0.0, dry_multiplier=0.8)


async def shoot(out: Path) -> None:
    """Run the app on the default model and save the why view to `out`."""
    backend = LlamaBackend.load(resolve_model_path(None), n_ctx=2048, n_threads=1)
    try:
        app = SamplescopeApp(
            backend,
            settings=SETTINGS,
            max_tokens=400,
            cursor_blink=False,
            config=Config(loops=LoopGuard("stop")),
        )
        async with app.run_test(size=SIZE) as pilot:
            await type_message(pilot, app, PROMPT)
            finished = await nth_reply_finished(pilot, app)
            assert finished.reason == "loop", finished.reason
            await pilot.press("f9")
            await wait_until(pilot, lambda: isinstance(app.screen, LoopWhyScreen))
            await pilot.press("right", "right")
            await pilot.pause(0.2)
            out.write_text(app.export_screenshot(), encoding="utf-8")
    finally:
        backend.close()


if __name__ == "__main__":
    asyncio.run(shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "loop-why.svg")))
