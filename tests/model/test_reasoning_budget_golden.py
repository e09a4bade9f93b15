"""The reasoning budget against llama-server's own, on the real default model.

tests/fixtures/reasoning_budget/golden.json holds llama-server's answers (built from
the llama.cpp that llama-cpp-python 0.3.36 vendors; README.md there says how): a raw
prompt that opens `<think>`, the tags, a message and a budget of 0, 1, 16 and 40
tokens, greedy, and one sampled with a seed. `generate` given the same must give the
same token ids, and the sampled reply must start forcing at the same count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import llama_cpp
import pytest

from tui.cli.main import main

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "reasoning_budget" / "golden.json").read_text(
        encoding="utf-8"
    )
)
CASES: list[dict[str, Any]] = GOLDEN["cases"]
MODEL_FLAGS = ["--threads", "1", "--ctx", "2048"]


def argv_of(case: dict[str, Any]) -> list[str]:
    """`generate`'s arguments for the server's request."""
    request = case["request"]
    argv = [
        "generate",
        request["prompt"],
        "--raw",
        "--max-tokens",
        str(request["n_predict"]),
        "--reasoning-budget",
        str(request["reasoning_budget_tokens"]),
        "--reasoning-budget-message",
        request["reasoning_budget_message"],
        "--thinking-tags",
        ",".join([request["reasoning_budget_start_tag"], *request["reasoning_budget_end_tags"]]),
        "--json",
        *MODEL_FLAGS,
    ]
    if case["kind"] == "greedy":
        return [*argv, "-t", "0"]
    return [
        *argv,
        *("-t", str(request["temperature"]), "--top-k", str(request["top_k"])),
        *("--top-p", str(request["top_p"]), "--min-p", str(request["min_p"])),
        *("-s", str(request["seed"])),
    ]


def generated(case: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> list[int]:
    """The token ids `generate` gives for the case (an end-of-generation token, which
    the server leaves out of its tokens, left out)."""
    assert main(argv_of(case)) == 0
    result = json.loads(capsys.readouterr().out)
    ids: list[int] = result["token_ids"]
    if result["finish_reason"] == "stop" and len(ids) > len(case["tokens"]):
        ids = ids[:-1]
    return ids


def forcing_starts(tokens: list[int], forced: list[int]) -> int:
    """Where the forced tokens (the message's, then the end tag's) begin in a reply."""
    for start in range(len(tokens) - len(forced) + 1):
        if tokens[start : start + len(forced)] == forced:
            return start
    raise AssertionError("the reply holds no forced message and end tag")


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["kind"] == "greedy"], ids=lambda c: f"budget{c['budget']}"
)
def test_greedy_replies_are_llama_servers_token_for_token(
    case: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert generated(case, capsys) == case["tokens"]


def test_a_sampled_reply_starts_forcing_at_the_servers_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (case,) = [c for c in CASES if c["kind"] == "sampled"]
    request = case["request"]
    tokenized = GOLDEN["tokenized"]
    forced = tokenized[request["reasoning_budget_message"]] + tokenized["</think>"]
    ours = generated(case, capsys)  # another generator than the server's: another reply
    assert forcing_starts(ours, forced) == forcing_starts(case["tokens"], forced)


def test_samplescope_tokenizes_the_prompt_and_tags_as_the_server(
    default_model_path: Path,
) -> None:
    vocabulary = llama_cpp.Llama(str(default_model_path), vocab_only=True, verbose=False)
    for text, ids in GOLDEN["tokenized"].items():
        assert vocabulary.tokenize(text.encode(), add_bos=False, special=True) == ids


def test_a_template_that_opens_the_thinking_starts_the_budget(
    thinking_model_path: Path, default_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = " Enough."
    argv = ["generate", "What is 7 times 8?", "-t", "0", "--max-tokens", "24", "--json"]
    budget = ["--reasoning-budget", "3", "--reasoning-budget-message", message]
    assert main([*argv, *budget, "--model", str(thinking_model_path), *MODEL_FLAGS]) == 0
    thinking = json.loads(capsys.readouterr().out)
    vocabulary = llama_cpp.Llama(str(default_model_path), vocab_only=True, verbose=False)
    forced = [
        *vocabulary.tokenize(message.encode(), add_bos=False, special=True),
        *vocabulary.tokenize(b"</think>", add_bos=False, special=True),
    ]
    # The generation prompt ends "<think>\n": its "\n" spends one token, the reply two.
    assert thinking["token_ids"][2 : 2 + len(forced)] == forced
    assert thinking["thinking"].endswith(f"{message}</think>")  # --json's text is the answer
    assert main([*argv, *budget, *MODEL_FLAGS]) == 0  # SmolLM2's own template never thinks
    plain = json.loads(capsys.readouterr().out)
    assert "</think>" not in plain["text"]
