"""`--thinking-tags START,END` for the commands that score a text (`score`, `kld`): the
thinking's tags, when the model's chat template does not name them."""

from __future__ import annotations

import argparse

from sampling.settings.text import parse_texts


def thinking_tags(text: str) -> tuple[str, ...]:
    """The start tag, then the end tags (argparse `type`): texts separated by ',' (a
    comma in a tag written '\\,') or a JSON list.

    Raises:
        argparse.ArgumentTypeError: Not texts, or fewer than a start and an end tag.
    """
    try:
        tags = parse_texts(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected START,END: {error}") from None
    if len(tags) < 2:
        raise argparse.ArgumentTypeError(
            f"expected a start tag and at least one end tag, START,END (e.g. <think>,</think>),"
            f" not {text!r}"
        )
    return tags


def add_thinking_tags_flag(parser: argparse.ArgumentParser) -> None:
    """Add `--thinking-tags` (default: the tags of the model's chat template, if it
    thinks)."""
    parser.add_argument(
        "--thinking-tags",
        type=thinking_tags,
        default=None,
        metavar="START,END",
        help="the thinking's start tag, then its end tags, to give the thinking's and the"
        " answer's figures apart (default: the tags of the model's chat template, when it"
        " thinks; a text whose first tag is an end tag begins in the thinking)",
    )
