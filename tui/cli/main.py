"""The command line front door: `samplescope` opens the app; subcommands run headless."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from backend.config.sampler_files import load_sampler_files, split_sampler_files
from sampling.errors import SamplescopeError
from tui.cli.text_input import TextInputError, check_arguments


class CommandModule(Protocol):
    """A command's module: `register(subparsers)` adds its parser with `func` set to a
    callable taking the parsed namespace and returning an exit code."""

    def register(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def command_modules() -> tuple[CommandModule, ...]:
    """Every command's module, imported here: after the sampler plugins are loaded,
    so that the tables the commands derive from the settings hold theirs."""
    from tui.cli import (
        bench,
        branch,
        compare,
        config,
        dist,
        encode,
        explore,
        export,
        fwd,
        generate,
        history,
        info,
        models,
        preset,
        replay,
        rpc_server,
        samplers,
        score,
        serve,
        tree,
        whatif,
    )

    return (
        dist,
        bench,
        history,
        replay,
        whatif,
        explore,
        branch,
        tree,
        export,
        config,
        info,
        encode,
        generate,
        score,
        compare,
        fwd,
        rpc_server,
        samplers,
        preset,
        models,
        serve,
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    from tui.cli.app import build_app_parser

    app_usage = build_app_parser().format_usage().removeprefix("usage: ")
    parser = argparse.ArgumentParser(
        prog="samplescope",
        description="See and steer how a language model picks its next token.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Without a COMMAND, samplescope opens the chat app:\n  "
            + app_usage.replace("\n", "\n  ").rstrip()
            + "\n(`samplescope --model PATH -h` explains each app option.)"
            + "\nAny command takes --sampler-file PATH (repeatable): your own sampler,"
            + "\nas the files of the config folder's samplers/ are (`samplescope samplers`)."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        module.register(subparsers)
    return parser


def _opens_app(parser: argparse.ArgumentParser, argv: Sequence[str]) -> bool:
    """No subcommand named (maybe app options like --model): the app parses argv."""
    if not argv:
        return True
    if argv[0] in ("-h", "--help"):
        return False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return argv[0] not in action.choices
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run samplescope; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        check_arguments(args_list)
    except TextInputError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    try:
        args_list, sampler_files = split_sampler_files(args_list)
        load_sampler_files(sampler_files)
    except SamplescopeError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    parser = build_parser()
    if _opens_app(parser, args_list):
        from tui.cli.app import run_app

        return run_app(args_list)
    args = parser.parse_args(args_list)
    if args.command is None:
        from tui.cli.app import run_app

        return run_app(args_list)
    try:
        code: int = args.func(args)
    except SamplescopeError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`samplescope fwd 1 | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
