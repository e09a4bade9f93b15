"""What `generate` asks the model: the prompt (its argument, or stdin for `-`) as a
conversation, in the mode the model calls for (chat, or a completion document)."""

from __future__ import annotations

import argparse

from backend.chat.completion import Mode, TemplatedModel, as_document, mode_for_backend
from backend.chat.protocol import ChatMessage
from tui.cli.options.prompt import mode_asked
from tui.cli.prompt_messages import build_messages
from tui.cli.text_input import read_stdin
from tui.cli.verbose import log


def read_prompt(args: argparse.Namespace) -> str:
    """The prompt: PROMPT itself, or stdin when it is `-`."""
    prompt: str = args.prompt
    return read_stdin() if prompt == "-" else prompt


def conversation(
    args: argparse.Namespace, prompt: str, model: TemplatedModel
) -> tuple[list[ChatMessage], Mode]:
    """The messages sent for `prompt` (with `--system`) and the mode they are sent in:
    `--mode` (`--raw` is completion), else what the model's template calls for, said in
    a notice on stderr when the model has no template of its own."""
    messages = build_messages(prompt, args.system)
    mode, notice = mode_for_backend(model, mode_asked(args))
    if notice:
        log(notice)
    if mode == "completion":
        messages = as_document(messages)
    return messages, mode
