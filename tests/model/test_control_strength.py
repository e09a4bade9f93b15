"""The control vectors' strength (`control_strength`, the app's slider): it multiplies
the scale of every vector the model was loaded with, reapplied to the loaded model for
the next reply, and recorded with the reply. Checked against llama.cpp's own tokens
(the golden fixture of tests/model/test_control_vector.py: the vector at scale 2
times strength 2 is llama-server's scale 4), and in the app as a person uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Collapsible

from backend.chat.completion import as_document
from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.control_vector import ControlVector, Steering
from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from sampling.settings.record import SamplerSettings
from tests.helpers import chat_of, nth_reply_finished, type_message, wait_until
from tui.cli.commands.app import build_app, build_app_parser
from tui.cli.main import main
from tui.panel.slider import Slider

FIXTURE = Path(__file__).parent.parent / "fixtures" / "control_vector"
VECTOR = FIXTURE / "happy.gguf"
REFERENCE = json.loads((FIXTURE / "reference.json").read_text())
EVERY_LAYER_AT_4 = next(case for case in REFERENCE["cases"] if case["scale"] == 4.0)
GREEDY = SamplerSettings(temperature=0.0)


def completion(backend: LlamaBackend, strength: float) -> list[int]:
    document = as_document([ChatMessage("user", REFERENCE["prompt"])])
    live = LiveSettings(GREEDY.with_changes(control_strength=strength))
    events = backend.generate(document, live, max_tokens=REFERENCE["max_tokens"], raw=True)
    finished = [event for event in events if isinstance(event, FinishedEvent)][-1]
    assert finished.error is None, finished.error
    return list(finished.token_ids)


def test_strength_two_on_a_vector_at_two_is_llama_cpps_scale_four(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["generate", REFERENCE["prompt"], "--mode", "completion", "-t", "0", "--json"]
    argv += ["--max-tokens", str(REFERENCE["max_tokens"]), "--threads", "1"]
    argv += ["--control-vector", f"{VECTOR}:2", "--control-strength", "2"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["token_ids"] == EVERY_LAYER_AT_4["tokens"]


def test_a_new_strength_is_reapplied_to_the_loaded_model(default_model_path: Path) -> None:
    steered = LlamaBackend.load(
        default_model_path, n_threads=1, steering=Steering((ControlVector(VECTOR, 2.0),))
    )
    plain = LlamaBackend.load(default_model_path, n_threads=1)
    try:
        assert completion(steered, 2.0) == EVERY_LAYER_AT_4["tokens"]
        at_one = completion(steered, 1.0)
        assert at_one != EVERY_LAYER_AT_4["tokens"] and steered.runtime.control_strength == 1.0
        assert completion(steered, 2.0) == EVERY_LAYER_AT_4["tokens"]  # and back again
        assert completion(steered, 0.0) == completion(plain, 1.0)  # 0: no vector at all
        assert completion(plain, 3.0) == completion(plain, 1.0)  # no vector: nothing to scale
    finally:
        steered.close()
        plain.close()


@pytest.mark.anyio
async def test_the_apps_slider_sets_the_next_replys_strength(
    tmp_path: Path, default_model_path: Path
) -> None:
    argv = ["--threads", "1", "--temperature", "0", "--max-tokens", "10"]
    argv += ["--model", str(default_model_path), "--control-vector", f"{VECTOR}:2"]
    db = tmp_path / "chats.db"
    app = build_app(build_app_parser().parse_args(argv), store_path=db)
    async with app.run_test(size=(120, 48)) as pilot:
        await type_message(pilot, app, "Today I feel")
        await nth_reply_finished(pilot, app)
        group = app.query_one("#group-control", Collapsible)
        group.collapsed = False
        slider = app.query_one("#slider-control_strength", Slider)
        await wait_until(pilot, lambda: slider.region.height > 0)
        slider.focus()
        await pilot.press("shift+right", "shift+right")  # coarse steps of 0.5: 1 -> 2
        await wait_until(pilot, lambda: app.live.current.value("control_strength") == 2.0)
        await type_message(pilot, app, "Why?")
        second = await nth_reply_finished(pilot, app, 2)
        backend = chat_of(app).runner.backend
        assert isinstance(backend, LlamaBackend) and backend.runtime.control_strength == 2.0
        conversation = list(chat_of(app).conversation.messages[:-1])
        chat_id = chat_of(app).conversation.recorder.chat_id  # type: ignore[union-attr]
    # The same conversation on a model loaded with the vector at 4: the same reply.
    reference = LlamaBackend.load(
        default_model_path, n_threads=1, steering=Steering((ControlVector(VECTOR, 4.0),))
    )
    try:
        settings = app.live.current.with_changes(control_strength=1.0)
        events = reference.generate(conversation, LiveSettings(settings), max_tokens=10)
        finished = [event for event in events if isinstance(event, FinishedEvent)][-1]
        assert finished.token_ids == second.token_ids
    finally:
        reference.close()
    stored = ChatStore(db).load_chat(int(str(chat_id))).replies
    assert [reply.settings_at(0).value("control_strength") for reply in stored] == [1.0, 2.0]
    assert all(reply.control_vectors is not None for reply in stored)
    for number in ("1", "2"):  # each replays at its own strength
        argv = ["replay", str(chat_id), "--reply", number, "--db", str(db), "--threads", "1"]
        assert main(argv) == 0
