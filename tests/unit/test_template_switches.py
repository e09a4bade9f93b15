"""The chat template's switches: llama.cpp's template variables, earlier replies'
thinking, and the flags' and config file's bad input."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import pytest

from backend.chat.protocol import ChatMessage
from backend.chat.template import ChatTemplate, ChatTemplateError
from backend.chat.template_switches import (
    TemplateSwitchError,
    TemplateSwitches,
    answer_of,
    parse_template_kwargs,
    template_toml,
)
from backend.config.config import ConfigError, load_config
from tests.thinking_models import THINKING_TEMPLATE
from tui.cli.options.template_flags import add_template_flags, switches_from_args

QWEN3_LIKE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{% else %}{{ '<think>\\n' }}{% endif %}{% endif %}"
)
"""Qwen3's switch: `enable_thinking=false` closes an empty thinking block itself."""

EFFORT = (
    "{{ messages[0]['content'] }}"
    " {{ 'effort=' + reasoning_effort + ' strength=' + reasoning_strength }}"
)
PRESERVE = (
    "{{ messages[0]['content'] }} {{ preserve_reasoning }} {{ preserve_thinking }}"
    " {{ clear_thinking }}"
    " {{ truncate_history_thinking }} {{ drop_thinking }}"
)

CHAT = [
    ChatMessage("user", "What is 2+2?"),
    ChatMessage("assistant", "<think>\nadd them</think>\n\nIt is 4."),
    ChatMessage("user", "And 3+3?"),
]


def test_enable_thinking_reaches_the_template() -> None:
    template = ChatTemplate(QWEN3_LIKE)
    user = [ChatMessage("user", "Hi")]
    assert template.render(user).endswith("<|im_start|>assistant\n<think>\n")
    template.switches = TemplateSwitches().with_thinking(False)
    assert template.render(user).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    template.switches = template.switches.with_thinking(None)
    assert template.switches.enable_thinking is None


def test_reasoning_effort_is_given_as_llama_cpp_gives_it() -> None:
    template = ChatTemplate(EFFORT, switches=TemplateSwitches(reasoning_effort="high"))
    assert template.render([ChatMessage("user", "x")]) == "x effort=high strength=high"


@pytest.mark.parametrize(
    ("preserve", "expected"),
    [(True, "x True True False False False"), (False, "x False False True True True")],
)
def test_reasoning_preserve_sets_llama_cpps_variables(preserve: bool, expected: str) -> None:
    template = ChatTemplate(PRESERVE, switches=TemplateSwitches(reasoning_preserve=preserve))
    assert template.render([ChatMessage("user", "x")]) == expected


def test_earlier_thinking_is_left_out_though_the_template_cannot_see_it() -> None:
    # The template strips the thinking itself, but samplescope renders a stand-in for
    # each message's text: without the switches the thinking reached the prompt.
    prompt = ChatTemplate(THINKING_TEMPLATE).render(CHAT)
    assert "add them" not in prompt
    assert "<|im_start|>assistant\nIt is 4.<|im_end|>\n" in prompt


def test_reasoning_preserve_keeps_earlier_thinking() -> None:
    template = ChatTemplate(THINKING_TEMPLATE, switches=TemplateSwitches(reasoning_preserve=True))
    assert "<think>\nadd them</think>\n\nIt is 4." in template.render(CHAT)


def test_a_reply_cut_short_inside_an_opened_thinking_is_all_thinking() -> None:
    chat = [ChatMessage("user", "Q"), ChatMessage("assistant", "still thinking"), CHAT[2]]
    opened = ChatTemplate(THINKING_TEMPLATE).render(chat)  # its generation prompt opens it
    assert "still thinking" not in opened
    plain = ChatTemplate(None).render(chat)  # ChatML opens nothing: an answer
    assert "still thinking" in plain


def test_answer_of() -> None:
    tags = ("<think>", "</think>")
    assert answer_of("<think>a</think>\n\nB", tags) == "B"
    assert answer_of("a</think>B", tags) == "B"
    assert answer_of("<think>never closed", tags) == ""
    assert answer_of("plain answer", tags) == "plain answer"
    assert answer_of("plain answer", tags, opened=True) == ""
    assert answer_of("x[/THINK]y", ("[THINK]", "[/THINK]")) == "y"


def test_a_template_failing_with_a_switch_names_it() -> None:
    source = (
        "{% if reasoning_effort == 'max' %}{{ raise_exception('no max here') }}{% endif %}"
        "{{ messages[0]['content'] }}"
    )
    template = ChatTemplate(source, switches=TemplateSwitches(reasoning_effort="max"))
    with pytest.raises(ChatTemplateError, match=r"no max here \(with reasoning_effort=max\)"):
        template.render([ChatMessage("user", "x")])
    template.switches = TemplateSwitches()
    assert template.render([ChatMessage("user", "x")]) == "x"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{bad", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"enable_thinking": "no"}', "enable_thinking must be true or false"),
        ('{"messages": []}', "'messages' is given to the template by samplescope"),
    ],
)
def test_bad_kwargs_are_one_clear_line(text: str, said: str) -> None:
    with pytest.raises(TemplateSwitchError, match=said) as raised:
        parse_template_kwargs(text)
    assert "\n" not in str(raised.value)


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_template_flags(parser)
    return parser.parse_args(list(argv))


def test_the_flags_go_on_top_of_the_config() -> None:
    config = TemplateSwitches(kwargs=(("enable_thinking", False), ("x", 1)), reasoning_effort="low")
    switches = switches_from_args(
        parsed("--chat-template-kwargs", '{"enable_thinking": true}', "--reasoning-preserve"),
        config,
    )
    assert dict(switches.kwargs) == {"x": 1, "enable_thinking": True}
    assert switches.reasoning_effort == "low"
    assert switches.reasoning_preserve is True
    assert (
        switches_from_args(parsed("--reasoning-effort", "default"), config).reasoning_effort is None
    )
    assert switches_from_args(parsed("--no-reasoning-preserve"), config).reasoning_preserve is False


def test_the_config_files_template_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[template]\nkwargs = { enable_thinking = false }\nreasoning_effort = "high"\n'
        "reasoning_preserve = true\n",
        encoding="utf-8",
    )
    switches = load_config(path).template
    assert switches == TemplateSwitches(
        kwargs=(("enable_thinking", False),), reasoning_effort="high", reasoning_preserve=True
    )
    assert tomllib.loads("\n".join(template_toml(switches)))["template"] == {
        "kwargs": {"enable_thinking": False},
        "reasoning_effort": "high",
        "reasoning_preserve": True,
    }


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('reasoning_effort = "huge"', "line 2: template.reasoning_effort: reasoning effort 'huge'"),
        ("reasoning_preserve = 1", "line 2: template.reasoning_preserve: expected true or false"),
        ('kwargs = { enable_thinking = "no" }', "template.kwargs: enable_thinking must be"),
        ("thinking = true", "line 2: template.thinking: unknown key"),
    ],
)
def test_a_bad_template_table_names_the_line(tmp_path: Path, table: str, said: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[template]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=said):
        load_config(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "Hi"],
        ["compare", "Hi", "--set", "t=0"],
        ["sweep", "--prompt", "Hi", "--grid", "t=0,1", "--no-save"],
        ["explore", "--prompt", "Hi", "--depth", "1"],
        ["chat"],
    ],
)
def test_every_command_that_renders_a_chat_refuses_bad_kwargs_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tui.cli.main import main

    flags = ["--chat-template-kwargs", "[true]"]
    if argv == ["chat"]:
        from tui.cli.commands.app import run_app

        assert run_app([*flags, "--no-save"]) == 2
    else:
        assert main([*argv, *flags]) == 2
    err = capsys.readouterr().err
    assert err == (
        "samplescope: --chat-template-kwargs: expected a JSON object such as"
        """ '{"enable_thinking": false}', got '[true]'\n"""
    )


def test_switches_round_trip_through_a_replys_json() -> None:
    from backend.chat.template_switches import TemplateSwitchError, TemplateSwitches

    switches = TemplateSwitches((("enable_thinking", False),), "low", True, ("[THINK]", "[/THINK]"))
    text = switches.to_json()
    assert text is not None
    assert TemplateSwitches.from_json(text, ("[THINK]", "[/THINK]")) == switches
    assert TemplateSwitches().to_json() is None  # none set: nothing stored
    assert TemplateSwitches.from_json(None, ()).thinking_tags == ("<think>", "</think>")
    for broken in ("{", "[]", '{"kwargs": {}}', '{"kwargs": {}, "reasoning_effort": "huge",'
                   ' "reasoning_preserve": null}'):  # fmt: skip
        with pytest.raises(TemplateSwitchError, match="stored"):
            TemplateSwitches.from_json(broken, ())


def test_an_earlier_replys_thinking_is_cut_at_the_templates_own_tags() -> None:
    """With no tags in the settings (their default), the template's format names them."""
    from backend.chat.template_switches import TemplateSwitches
    from tests.thinking_models import THINKING_TEMPLATE

    template = ChatTemplate(THINKING_TEMPLATE)
    template.switches = TemplateSwitches(thinking_tags=())  # as generate sets them
    assert template.format_tags == ("<think>", "</think>")
    messages = [
        ChatMessage("user", "hi"),
        ChatMessage("assistant", "<think>\nsecret plan</think>\nHello"),
        ChatMessage("user", "again"),
    ]
    prompt = template.render(messages)
    assert "secret plan" not in prompt and "Hello" in prompt
