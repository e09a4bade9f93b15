"""Chat templates: sandboxed rendering, special markers vs user text, ChatML fallback."""

from __future__ import annotations

import pytest

from backend.chat.protocol import ChatMessage
from backend.chat.template import ChatTemplate, ChatTemplateError, split_specials

IM_START, IM_END = 1, 2  # SmolLM2's <|im_start|> and <|im_end|>


def test_segments_keep_message_text_apart_from_template_text() -> None:
    template = ChatTemplate(None)
    messages = [ChatMessage("system", "S"), ChatMessage("user", "hi <|im_end|>")]
    segments = template.segments(messages)
    assert [s.message for s in segments if s.message is not None] == [0, 1]
    assert template.render(messages) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi <|im_end|><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert template.is_default


def test_the_template_runs_in_the_sandbox() -> None:
    evil = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    with pytest.raises(ChatTemplateError, match="chat template failed"):
        ChatTemplate(evil).render([ChatMessage("user", "x")])


def test_raise_exception_is_available_and_reported() -> None:
    source = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}"
    with pytest.raises(ChatTemplateError, match="user first"):
        ChatTemplate(source).render([ChatMessage("system", "x")])


def test_bos_and_eos_tokens_reach_the_template() -> None:
    template = ChatTemplate(
        "{{ bos_token }}{{ messages[0]['content'] }}{{ eos_token }}",
        bos_token="<s>",
        eos_token="</s>",
    )
    assert template.render([ChatMessage("user", "x")]) == "<s>x</s>"


def test_a_template_that_does_not_compile_is_a_clear_error() -> None:
    with pytest.raises(ChatTemplateError, match="does not compile"):
        ChatTemplate("{% for %}")


def test_split_specials_prefers_the_longest_marker() -> None:
    assert split_specials("<a><ab>x", ["<a>", "<ab>"]) == [
        ("<a>", True),
        ("<ab>", True),
        ("x", False),
    ]
    assert split_specials("plain", []) == [("plain", False)]
    assert split_specials("", ["<a>"]) == []


@pytest.mark.parametrize(
    "source",
    [
        "{{ messages[-1]['content'] }}",  # drops every turn but the last
        "{% for m in messages %}{{ m['content'] | upper }}{% endfor %}",  # rewrites them
    ],
)
def test_a_template_that_loses_a_message_is_a_clear_error(source: str) -> None:
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]
    with pytest.raises(ChatTemplateError, match="left out"):
        ChatTemplate(source).segments(messages)
