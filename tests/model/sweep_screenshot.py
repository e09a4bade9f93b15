"""Run the sweep of docs/sweeps.md on the real default model and draw its frontier screen (a
script, not a test; one thread, about three minutes on 2 cores).

    .venv/bin/python -m tests.model.sweep_screenshot OUT_DIR

The sweep is the one docs/sweeps.md shows: temperature 0.7, 1, 1.5 and 3 (first in the
chain) × top-p 0.9, min-p 0.1 and top-n-σ 1 × 4 samples on 3 prompts, 48 tokens. It
writes OUT_DIR/sweep-result.json (`sweep --json`), OUT_DIR/sweep-table.txt (the
table `sweep` prints) and OUT_DIR/sweep-frontier.svg (the sweep screen, the setting
"t=1 nsigma=1" selected: docs/sweeps.md's assets/sweep-frontier.svg). The samples are saved
in a chat database in a temporary folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import tempfile
from pathlib import Path

from textual.app import App

from tui.cli.commands.sweep import read_result
from tui.cli.commands.sweep.output import print_table
from tui.cli.main import main
from tui.sweep.screen import SweepScreen

SIZE = (150, 46)
PROMPTS = (
    "Write a short story about a lighthouse keeper.",
    "Describe your ideal weekend.",
    "Explain why the sky is blue.",
)
SELECTED = 9
"""The setting selected on the screen (t=1 nsigma=1)."""


class _Host(App[None]):
    TITLE = "samplescope"

    def __init__(self, screen: SweepScreen) -> None:
        super().__init__()
        self._sweep = screen

    def on_mount(self) -> None:
        self.push_screen(self._sweep)


async def _shoot(result_path: Path, out: Path) -> None:
    app = _Host(SweepScreen(read_result(result_path)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*["down"] * SELECTED)
        await pilot.pause(0.5)
        app.save_screenshot(out.name, str(out.parent))


def run(out_dir: Path) -> None:
    """Run the sweep and write its result, table and screen into `out_dir`."""
    result_path = out_dir / "sweep-result.json"
    argv = ["sweep", "--samples", "4", "--max-tokens", "48", "--threads", "1", "--json"]
    for prompt in PROMPTS:
        argv += ["--prompt", prompt]
    argv += ["--set", "top_p=0.9", "--set", "min_p=0.1", "--set", "top_n_sigma=1"]
    argv += ["--grid", "t=0.7,1.0,1.5,3.0"]
    with tempfile.TemporaryDirectory() as folder:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main([*argv, "--db", str(Path(folder) / "chats.sqlite3")])
        if code != 0:
            raise SystemExit(f"the sweep failed ({code})")
    result_path.write_text(printed.getvalue(), encoding="utf-8")
    table = io.StringIO()
    print_table(read_result(result_path), table)
    (out_dir / "sweep-table.txt").write_text(table.getvalue(), encoding="utf-8")
    asyncio.run(_shoot(result_path, out_dir / "sweep-frontier.svg"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.model.sweep_screenshot OUT_DIR")
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    run(target)
