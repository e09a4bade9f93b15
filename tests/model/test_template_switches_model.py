"""The chat template's switches on the real default model with a thinking template.

A copy of SmolLM2 whose template reads `enable_thinking` as Qwen3's does (false:
the generation prompt closes an empty thinking block) and `reasoning_effort` (in its
system line): `generate`'s flags, the app's "Thinking off", a turn's prompt shown,
earlier replies' thinking left out, and bad input each one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.chat.protocol import ChatMessage
from backend.config.paths import CONFIG_DIR_ENV
from tests.helpers import chat_of, send_message, wait_until
from tests.thinking_models import thinking_copy
from tui.cli.main import main

SWITCHED_TEMPLATE = (
    "{{ '<|im_start|>system\\nReasoning: '"
    " + (reasoning_effort if reasoning_effort is defined else 'medium') + '<|im_end|>\\n' }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if reasoning_effort is defined and reasoning_effort == 'max' %}"
    "{{ raise_exception('this model has no max effort') }}{% endif %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{% else %}{{ '<think>\\n' }}{% endif %}{% endif %}"
)
MODEL_FLAGS = ["--threads", "1", "--ctx", "512"]


@pytest.fixture(scope="module")
def switched_model(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 with a template that reads the switches."""
    return thinking_copy(default_model_path, tmp_path_factory.mktemp("switched"), SWITCHED_TEMPLATE)


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty config folder of the test's own."""
    folder = tmp_path / "config"
    folder.mkdir()
    monkeypatch.setenv(CONFIG_DIR_ENV, str(folder))
    return folder


def generate(capsys: pytest.CaptureFixture[str], model: Path, *flags: str) -> dict[str, object]:
    argv = ["generate", "Hi", "--max-tokens", "4", "-t", "0", "--json", "--show-prompt"]
    assert main([*argv, "--model", str(model), *MODEL_FLAGS, *flags]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_generate_gives_the_template_its_switches(
    switched_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thinking = generate(capsys, switched_model)
    assert thinking["prompt"] == (
        "<|im_start|>system\nReasoning: medium<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )
    plain = generate(
        capsys,
        switched_model,
        "--chat-template-kwargs",
        '{"enable_thinking": false}',
        "--reasoning-effort",
        "high",
    )
    prompt = plain["prompt"]
    assert isinstance(prompt, str)
    assert prompt.startswith("<|im_start|>system\nReasoning: high<|im_end|>\n")
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    stats, thought = plain["stats"], thinking["stats"]
    assert isinstance(stats, dict) and isinstance(thought, dict)
    assert stats["prompt_tokens"] > thought["prompt_tokens"]  # the prompt fed is the shown one


def test_the_config_files_switches_and_the_flags_on_top(
    switched_model: Path, own_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (own_config / "config.toml").write_text(
        '[template]\nkwargs = { enable_thinking = false }\nreasoning_effort = "low"\n',
        encoding="utf-8",
    )
    prompt = generate(capsys, switched_model, "--reasoning-effort", "high")["prompt"]
    assert isinstance(prompt, str)
    assert "Reasoning: high" in prompt and prompt.endswith("</think>\n\n")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--chat-template-kwargs", "{enable_thinking: false}"], "not valid JSON"),
        (["--chat-template-kwargs", '"false"'], "expected a JSON object"),
        (["--chat-template-kwargs", '{"enable_thinking": "off"}'], "must be true or false"),
    ],
)
def test_bad_kwargs_are_one_line_before_the_model_loads(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", "Hi", *flags, *MODEL_FLAGS, "-v"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "loaded" not in err


def test_a_template_failing_with_a_switch_is_one_line(
    switched_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["generate", "Hi", "--max-tokens", "4", "--model", str(switched_model)]
    assert main([*argv, *MODEL_FLAGS, "--reasoning-effort", "max"]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        "samplescope: the chat template refused the conversation: this model has no max"
        " effort (with reasoning_effort=max)"
    ]


@pytest.mark.anyio
async def test_the_apps_thinking_switch_and_a_turns_prompt(switched_model: Path) -> None:
    from backend.session.llama_backend import LlamaBackend
    from tui.app import SamplescopeApp
    from tui.widgets.text_view import TextViewScreen

    app = SamplescopeApp(
        backend_factory=lambda: LlamaBackend.load(
            switched_model, n_ctx=512, n_batch=64, n_threads=1
        ),
        max_tokens=4,
        cursor_blink=False,
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready, 120)
        first = await send_message(pilot, app, "Hi")
        assert first.text  # cut short inside the thinking the prompt opened
        backend = app.runner.backend
        assert backend is not None
        follow_up = [*app.conversation.messages, ChatMessage("user", "More?")]
        prompt = backend.template.render(follow_up)
        assert first.text not in prompt  # its thinking is left out of the next prompt
        assert "<|im_start|>assistant\n<|im_end|>\n" in prompt
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert "Thinking off" in titles
        from tui.template_commands import toggle_thinking

        toggle_thinking(app)  # type: ignore[arg-type]
        assert app.template_switches.enable_thinking is False
        assert "Thinking on" in {c.title for c in app.get_system_commands(app.screen)}
        app.show_turn_prompt()  # the last reply's: rendered with the switches now
        await wait_until(pilot, lambda: isinstance(app.screen, TextViewScreen))
        await pilot.press("escape")
        assert backend.template.render(follow_up).endswith("<think>\n\n</think>\n\n")
        second = await send_message(pilot, app, "More?")
        assert second.token_ids


def test_generate_v_names_the_switches(
    switched_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["generate", "Hi", "--max-tokens", "2", "-v", "--model", str(switched_model)]
    flags = ["--chat-template-kwargs", '{"enable_thinking": false}', "--no-reasoning-preserve"]
    assert main([*argv, *MODEL_FLAGS, *flags]) == 0
    err = capsys.readouterr().err
    assert (
        "samplescope: chat template switches: enable_thinking=false, reasoning_preserve=off" in err
    )


def test_a_reply_stores_its_switches_and_replays_with_them(
    switched_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The switches change the prompt: a reply records them, and replay renders its
    prompt with them whatever the config says now."""
    from backend.store.store import ChatStore

    db = tmp_path / "chats.sqlite3"
    switches = ["--chat-template-kwargs", '{"enable_thinking": false}', "--reasoning-effort", "low"]
    longer = ["--max-tokens", "16"]
    off = generate(capsys, switched_model, "--save", "--db", str(db), *switches, *longer)
    plain = generate(capsys, switched_model, *longer)
    assert off["prompt"] != plain["prompt"]  # the switches reached the template
    assert off["token_ids"] != plain["token_ids"]  # and a replay without them would differ
    with ChatStore(db) as store:
        chat = store.load_chat(int(off["chat_id"]))  # type: ignore[call-overload]
        (reply,) = chat.replies
    stored = json.loads(reply.template_switches or "")
    assert stored == {
        "kwargs": {"enable_thinking": False},
        "reasoning_effort": "low",
        "reasoning_preserve": None,
    }
    argv = ["replay", str(chat.id), "--db", str(db), "--model", str(switched_model)]
    assert main([*argv, *MODEL_FLAGS[:2]]) == 0, capsys.readouterr()
    assert "token-identical" in capsys.readouterr().out


def test_a_reply_without_switches_stores_none(
    switched_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from backend.store.store import ChatStore

    db = tmp_path / "chats.sqlite3"
    result = generate(capsys, switched_model, "--save", "--db", str(db))
    with ChatStore(db) as store:
        (reply,) = store.load_chat(int(result["chat_id"])).replies  # type: ignore[call-overload]
    assert reply.template_switches is None
