"""Contrast in the app, on the real default model (its Q4_0 copy as the contrast model,
as tests/model/test_contrast.py): `samplescope --contrast-model` gives the reply
`generate` gives with the same flags, token for token; the reply is stored with its
contrast model and replays token-identical; the two-distributions panel shows the
contrast's report; what-if (from memory and through the replay path, in the app and
`samplescope whatif`) recomputes the step with the small model's logits; and a
contrast model of another vocabulary is one line while the chat goes on.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.text import Text
from textual.pilot import Pilot

from backend.store.store import ChatStore
from sampling.records import Step
from tests.helpers import chat_of, send_message, wait_until
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.chat.two_distributions import TwoDistributions
from tui.cli.commands.app import build_app, build_app_parser
from tui.cli.main import main
from tui.models.contrast import ContrastFailed
from tui.widgets.status_line import StatusLine

pytestmark = pytest.mark.anyio

PROMPT = "Write one sentence about the sea."
FLAGS = ["--temperature", "1.0", "--seed", "21", "--max-tokens", "12", "--threads", "1"]
FLAGS += ["--contrast-beta", "0.5", "--contrast-alpha", "0.05"]
SIZE = (140, 48)


def assert_same_step(got: Step, wanted: Step) -> None:
    """The same candidates and probabilities, to the bit."""
    for name in ("token_ids", "logits", "prob_before", "prob_after", "kept"):
        assert np.array_equal(getattr(got.table, name), getattr(wanted.table, name)), name
    assert (got.n_kept, got.cut_by) == (wanted.n_kept, wanted.cut_by)


async def whatif_at(pilot: Pilot[Any], app: SamplescopeApp, reply: int, index: int) -> Step:
    """What-if at token `index` of reply `reply` (from 0); the recomputed step."""
    transcript = app.query_one(Transcript)
    transcript.focus()
    transcript.select(reply, index)
    await pilot.pause()
    whatif = chat_of(app).whatif
    if not whatif.active:
        await pilot.press("w")
    await wait_until(pilot, lambda: whatif.step is not None and not whatif.recomputing, 120)
    assert whatif.step is not None
    return whatif.step


def contrast_app(argv: list[str], db: Path) -> SamplescopeApp:
    return build_app(build_app_parser().parse_args(argv), store_path=db)


async def test_an_app_reply_with_contrast_is_generates_and_replays_token_identical(
    tmp_path: Path,
    default_model_path: Path,
    q4_0_model_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = ["--model", str(default_model_path), "--contrast-model", str(q4_0_model_path)]
    argv = ["generate", PROMPT, *model, *FLAGS, "--json"]
    assert main(argv) == 0
    generated = json.loads(capsys.readouterr().out)["token_ids"]

    db = tmp_path / "chats.db"
    app = contrast_app([*model, *FLAGS], db)
    async with app.run_test(size=SIZE) as pilot:
        status = app.query_one(StatusLine)
        await wait_until(pilot, lambda: bool(status.state.contrast), 120)
        assert status.state.contrast == q4_0_model_path.stem
        assert f" contrast {q4_0_model_path.stem} " in status.render().plain
        first = await send_message(pilot, app, PROMPT)
        assert list(first.token_ids) == generated
        tokens = chat_of(app).conversation.replies[-1].tokens
        assert all("contrast" in token.step.reports for token in tokens)

        panel = chat_of(app).panel(TwoDistributions)
        await wait_until(pilot, lambda: panel.shown, 30)
        content = panel.content
        assert isinstance(content, Text)
        lines = content.plain.splitlines()
        assert lines[0].startswith("contrast ×0.5 · KL ")
        assert lines[1].split() == ["large", "small", "contrast"]

        # What-if at the first token: its command line names the contrast model.
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        await whatif_at(pilot, app, 0, 0)
        await pilot.press("y")
        await wait_until(pilot, lambda: bool(copied))
        # What-if with the step's own settings, from memory: the stored step.
        step = await whatif_at(pilot, app, 0, 3)
        assert chat_of(app).whatif.source == "memory"
        assert_same_step(step, tokens[3].step)
        assert "contrast" in step.reports
        # A second reply, then what-if on the first: through the replay path.
        await send_message(pilot, app, "And one about the sky.")
        chat_of(app).whatif.leave()
        step = await whatif_at(pilot, app, 0, 5)
        assert chat_of(app).whatif.source == "replay"
        assert_same_step(step, tokens[5].step)
        chat_id = chat_of(app).conversation.recorder.chat_id  # type: ignore[union-attr]

    stored = ChatStore(db).load_chat(int(str(chat_id))).replies
    assert len(stored) == 2
    for reply in stored:
        assert reply.contrast_model is not None
        assert reply.contrast_model.path == str(q4_0_model_path.resolve())
    assert list(stored[0].token_ids) == generated
    for number in ("1", "2"):
        argv = ["replay", str(chat_id), "--reply", number, "--db", str(db), "--threads", "1"]
        assert main(argv) == 0
        assert "token-identical" in capsys.readouterr().out
    # The what-if's command line gives the reply again, beside the contrast model.
    words = shlex.split(copied[0])
    assert words[words.index("--contrast-model") + 1] == str(q4_0_model_path.resolve())
    assert main([*words[1:], "--json", "--threads", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["token_ids"] == generated
    # `samplescope whatif` on the app's reply loads its contrast model too.
    argv = ["whatif", str(chat_id), "--reply", "1", "--at", "4", "--db", str(db), "--json"]
    assert main([*argv, "--threads", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    before = [candidate["before"] for candidate in out["candidates"]]
    assert before == tokens[3].step.table.prob_before.tolist()
    assert out["reports"]["contrast"]["scale"] == 0.5


async def test_a_contrast_model_of_another_vocabulary_is_one_line_and_the_chat_goes_on(
    tmp_path: Path, default_model_path: Path
) -> None:
    tiny = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    model = ["--model", str(default_model_path), "--contrast-model", str(tiny)]
    app = contrast_app([*model, *FLAGS], tmp_path / "chats.db")
    failures: list[ContrastFailed] = []
    notes: list[str] = []
    app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]

    def hook(message: object) -> None:
        if isinstance(message, ContrastFailed):
            failures.append(message)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await wait_until(pilot, lambda: bool(failures), 120)
        error = failures[0].error
        assert "\n" not in error
        assert "the model and the contrast model have different vocabularies: 49152" in error
        assert "against 600" in error
        assert any(note.startswith("Could not load the contrast model: ") for note in notes)
        assert not app.query_one(StatusLine).state.contrast
        finished = await send_message(pilot, app, PROMPT)
        assert finished.error is None and finished.token_ids
