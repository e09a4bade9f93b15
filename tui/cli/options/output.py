"""The options that choose how a command prints what it found."""

from __future__ import annotations

import argparse


def add_json_flag(
    parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup,
    help: str = "print one JSON object",
) -> None:
    """`--json` (`args.json`): one JSON object on stdout instead of the text for a reader."""
    parser.add_argument("--json", action="store_true", help=help)
