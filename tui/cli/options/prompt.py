"""The options of a command that sends the model a prompt of its own: a system prompt,
and the mode (chat, or completion: the text continued without the chat template)."""

from __future__ import annotations

import argparse

from backend.chat.completion import MODES, Mode

MODE_HELP = (
    "chat: PROMPT is a user turn in the chat template; completion: PROMPT is plain text "
    "the model continues (default: completion for a model with no chat template and no "
    "known turn tokens, else chat)"
)


def add_system_flag(parser: argparse.ArgumentParser, help: str = "a system prompt") -> None:
    """`--system TEXT`: a system prompt before the user's (`args.system`, else None)."""
    parser.add_argument("--system", default=None, help=help)


def add_mode_flags(
    parser: argparse.ArgumentParser, help: str = MODE_HELP, *, raw: bool = False
) -> None:
    """`--mode chat|completion` (`args.mode`, None: what the model calls for), and with
    `raw` its short form `--raw` (completion)."""
    parser.add_argument("--mode", choices=MODES, default=None, help=help)
    if raw:
        parser.add_argument("--raw", action="store_true", help="the same as --mode completion")


def mode_asked(args: argparse.Namespace) -> Mode | None:
    """The mode the flags ask for: completion with `--raw`, else `--mode` (None: the
    model's own)."""
    if getattr(args, "raw", False):
        return "completion"
    mode: Mode | None = args.mode
    return mode
