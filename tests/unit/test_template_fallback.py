"""A model without a chat template: the built-in template its turn tokens name, else raw text."""

from __future__ import annotations

import pytest

from backend.chat.protocol import ChatMessage
from backend.chat.template import CHATML_TEMPLATE, RAW_TEMPLATE, ChatTemplate, fallback_template

MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]


@pytest.mark.parametrize(
    ("specials", "name", "rendered"),
    [
        (
            ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"],
            "Gemma",
            "<bos><start_of_turn>user\nBe brief.<end_of_turn>\n"
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
        ),
        (
            ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
            "Llama 3",
            "<bos><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n",
        ),
        (
            ["<s>", "</s>", "[INST]", "[/INST]"],
            "Mistral",
            "<bos>[INST] Be brief. [/INST][INST] Hi [/INST]",
        ),
        (
            ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            "ChatML",
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n",
        ),
    ],
    ids=["gemma", "llama3", "mistral", "chatml"],
)
def test_the_vocabularys_turn_tokens_pick_the_template(
    specials: list[str], name: str, rendered: str
) -> None:
    source, notice = fallback_template(specials)
    assert f"its vocabulary has {name}'s turn tokens" in notice
    assert ChatTemplate(source, bos_token="<bos>", eos_token="<eos>").render(MESSAGES) == rendered


def test_no_known_turn_tokens_gives_raw_text_with_a_notice() -> None:
    source, notice = fallback_template(["<s>", "</s>", "<unk>"])
    assert source == RAW_TEMPLATE
    assert source != CHATML_TEMPLATE
    assert "no chat template and no turn tokens" in notice
    assert ChatTemplate(source).render(MESSAGES) == "Be brief.\nHi\n"
