"""`--sampler-file PATH`: an option like the others, read from argv before the full parse.

A sampler file adds flags of its own, so it runs before the command line is parsed
in full. To know which words are `--sampler-file` options, argv is first read by an
outline of the same parser: every option with its number of values, but no types,
no choices and nothing required (a sampler file's own flags are unknown to it yet and
left over). So a word after `--`, or given as another option's value
(`--system=--sampler-file=x.py`), is never taken for a sampler file; a flag left
without its value (`--system --sampler-file=x.py`) is an error before any file runs.
The full parse then reads the same options; `check_same_files` holds it to the
outline's reading.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from backend.config.sampler_files import SAMPLER_FILE_FLAG
from sampling.errors import SamplescopeError

#: Where the parsers put the paths: before a command (the main parser), and a
#: command's own (distinct, as a subcommand's namespace overwrites its parent's).
LEADING_DEST = "leading_sampler_files"
COMMAND_DEST = "sampler_files"


class ArgvError(SamplescopeError):
    """The command line cannot be read; the message is argparse's."""


def add_sampler_file_flag(parser: argparse.ArgumentParser, dest: str = COMMAND_DEST) -> None:
    """Give a parser `--sampler-file PATH` (repeatable)."""
    parser.add_argument(
        SAMPLER_FILE_FLAG,
        dest=dest,
        action="append",
        default=None,
        metavar="PATH",
        help="a Python file defining your own sampler (repeatable; see `samplescope samplers`)",
    )


def sampler_files_given(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[Path]:
    """The paths argv gives with `--sampler-file`, as `parser` reads its options.

    Args:
        parser: The full parser (without the flags of the files not loaded yet).
        argv: The arguments.

    Raises:
        ArgvError: argv cannot be read even in outline: an option lacks its value,
            is ambiguous, or the command is unknown (the full parse would say so too).
    """
    namespace, _left_over = _outline(parser, {}).parse_known_args(list(argv))
    return files_in(namespace)


def files_in(namespace: argparse.Namespace) -> list[Path]:
    """The `--sampler-file` paths a parsed namespace holds, in argv order."""
    leading = getattr(namespace, LEADING_DEST, None) or []
    own = getattr(namespace, COMMAND_DEST, None) or []
    return [Path(path) for path in [*leading, *own]]


def check_same_files(loaded: Sequence[Path], namespace: argparse.Namespace) -> None:
    """Raise unless the full parse read the sampler files the outline read.

    Raises:
        ArgvError: They differ (e.g. `--sampler-file` abbreviated).
    """
    parsed = files_in(namespace)
    if list(loaded) != parsed:
        raise ArgvError(
            f"{SAMPLER_FILE_FLAG} must be spelled out in full:"
            f" {', '.join(map(str, parsed)) or 'none'} read where"
            f" {', '.join(map(str, loaded)) or 'none'} ran"
        )


class _Outline(argparse.ArgumentParser):
    """A parser whose errors raise instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ArgvError(message)


def _outline(
    parser: argparse.ArgumentParser, done: dict[int, argparse.ArgumentParser]
) -> argparse.ArgumentParser:
    """A copy of `parser` keeping each option's spelling and number of values only."""
    if id(parser) in done:
        return done[id(parser)]
    outline: argparse.ArgumentParser = _Outline(
        prog=parser.prog,
        add_help=False,
        allow_abbrev=parser.allow_abbrev,
        prefix_chars=parser.prefix_chars,
    )
    done[id(parser)] = outline
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands = outline.add_subparsers(dest=action.dest)
            for name, command in action.choices.items():
                commands._name_parser_map[name] = _outline(command, done)
        elif action.option_strings:
            _copy_option(outline, action)
        else:
            copied = outline.add_argument(action.dest, nargs=action.nargs)
            copied.required = False
    return outline


def _copy_option(outline: argparse.ArgumentParser, action: argparse.Action) -> None:
    names = action.option_strings
    if action.nargs == 0:  # a switch (help and version included): it runs nothing here
        outline.add_argument(*names, dest=action.dest, action="store_const", const=True)
    elif isinstance(action, argparse._AppendAction):
        outline.add_argument(*names, dest=action.dest, action="append", nargs=action.nargs)
    else:
        outline.add_argument(*names, dest=action.dest, nargs=action.nargs)
