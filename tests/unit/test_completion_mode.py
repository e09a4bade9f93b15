"""Completion mode: chosen for a base model with a notice, the document it continues."""

from __future__ import annotations

from backend.chat.completion import (
    BASE_MODEL_NOTICE,
    as_document,
    choose_mode,
    document_text,
    has_turn_markers,
    mode_for_backend,
)
from backend.chat.protocol import ChatMessage
from tests.fake_backend import FakeBackend
from tui.cli.commands.app import build_app_parser


def test_a_base_model_gets_completion_mode_with_a_notice() -> None:
    assert choose_mode(None, False, ["<s>", "</s>"]) == ("completion", BASE_MODEL_NOTICE)
    assert "base model" in BASE_MODEL_NOTICE


def test_a_template_or_known_turn_tokens_keep_chat_mode() -> None:
    assert choose_mode(None, True, ["<s>"]) == ("chat", None)
    assert choose_mode(None, False, ["<|im_start|>", "<|im_end|>"]) == ("chat", None)
    assert choose_mode(None, False, ["<start_of_turn>", "<end_of_turn>"]) == ("chat", None)
    llama3 = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    assert has_turn_markers(llama3) and not has_turn_markers(["<|endoftext|>"])
    # Half a format has no template to fall back to: completion mode, not raw chat.
    assert not has_turn_markers(["<start_of_turn>"])


def test_an_asked_mode_wins_without_a_notice() -> None:
    assert choose_mode("chat", False, []) == ("chat", None)
    assert choose_mode("completion", True, ["<|im_start|>"]) == ("completion", None)


def test_a_backend_without_a_gguf_template_counts_as_a_chat_model() -> None:
    assert mode_for_backend(FakeBackend(), None) == ("chat", None)
    assert mode_for_backend(FakeBackend(), "completion") == ("completion", None)


def test_the_document_is_every_turn_joined_as_written() -> None:
    turns = [
        ChatMessage("user", "Once upon a time"),
        ChatMessage("assistant", ", a fox"),
        ChatMessage("user", " met an owl."),
    ]
    assert document_text(turns) == "Once upon a time, a fox met an owl."
    assert as_document(turns) == [ChatMessage("user", "Once upon a time, a fox met an owl.")]


def test_the_app_takes_mode_from_its_command_line() -> None:
    assert build_app_parser().parse_args([]).mode is None
    assert build_app_parser().parse_args(["--mode", "completion"]).mode == "completion"


class _Backend:
    """A model with no GGUF template and the given special tokens."""

    has_own_template = False
    template_notice = "uses ChatML's template"

    def __init__(self, specials: list[str]) -> None:
        self.specials = specials

    def special_texts(self) -> list[str]:
        return self.specials


def test_a_model_without_a_template_says_which_it_got_or_why_completion() -> None:
    chatml = _Backend(["<|im_start|>", "<|im_end|>"])
    assert mode_for_backend(chatml, None) == ("chat", "uses ChatML's template")
    assert mode_for_backend(_Backend(["<s>"]), None) == ("completion", BASE_MODEL_NOTICE)
