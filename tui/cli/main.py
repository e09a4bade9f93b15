"""The command line front door: `samplescope` opens the app; subcommands run headless."""

from __future__ import annotations

import argparse
import os
import pkgutil
import re
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Protocol, cast

from backend.config.sampler_files import SAMPLER_FILE_FLAG, load_sampler_file, load_sampler_files
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from tui.cli.options.sampler_file import (
    LEADING_DEST,
    add_sampler_file_flag,
    check_same_files,
    sampler_files_given,
)
from tui.cli.run_registry import end_run, run_registry, use_run_registry
from tui.cli.text_input import TextInputError, check_arguments


class CommandModule(Protocol):
    """A command's module: `register(subparsers)` adds its parser with `func` set to a
    callable taking the parsed namespace and returning an exit code; `GROUP` is one of
    `tui.cli.commands.GROUPS`."""

    GROUP: str

    def register(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def command_modules() -> tuple[CommandModule, ...]:
    """Every command's module, found in the commands folder (a module or a package, from
    the source tree or a wheel alike), in the order `samplescope -h` lists them: by
    group, then by name. Imported here, not at the top, to keep `samplescope` quick to
    start. A module derives nothing from the settings when imported: the parser is built
    once before the `--sampler-file` plugins load and once after."""
    from tui.cli import commands

    names = sorted(
        found.name
        for found in pkgutil.iter_modules(commands.__path__)
        if found.name != commands.APP
    )
    modules = [cast(CommandModule, import_module(f"{commands.__name__}.{name}")) for name in names]
    order = list(commands.GROUPS)
    return tuple(sorted(modules, key=lambda module: order.index(module.GROUP)))


class _GroupTitle(argparse.Action):
    """A group's title among the commands `samplescope -h` lists (not a command)."""

    def __init__(self, title: str) -> None:
        super().__init__(option_strings=[], dest="", metavar=f"{title}:")


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add every command, listed on -h under its group's title, indented below it."""
    from tui.cli.commands import GROUPS

    listed = subparsers._choices_actions  # what -h lists, in order
    group = None
    for module in command_modules():
        if group != module.GROUP:
            group = module.GROUP
            listed.append(_GroupTitle(GROUPS[group]))
        before = len(listed)
        module.register(subparsers)
        for action in listed[before:]:
            action.metavar = f"  {action.metavar}"


def version_line() -> str:
    """What `--version` prints: samplescope's version and the libraries that decide
    what it computes and shows."""
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for name in ("samplescope", "llama-cpp-python", "numpy", "textual"):
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return parts[0] + " (" + ", ".join(parts[1:]) + ")"


class _VersionAction(argparse.Action):
    """`--version`: print `version_line()` (read only when asked) and exit."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    from tui.cli.commands.app import build_app_parser

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
    parser.add_argument("-V", "--version", action=_VersionAction, help="show the versions and exit")
    add_sampler_file_flag(parser, LEADING_DEST)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_commands(subparsers)
    for command in set(subparsers.choices.values()):
        add_sampler_file_flag(command)
    return parser


def _opens_app(parser: argparse.ArgumentParser, argv: Sequence[str]) -> bool:
    """No subcommand named (maybe app options like --model): the app parses argv.

    What decides is the first word after any leading `--sampler-file PATH`.
    """
    words = list(argv)
    while words and (words[0] == SAMPLER_FILE_FLAG or words[0].startswith(SAMPLER_FILE_FLAG + "=")):
        if words[0] == SAMPLER_FILE_FLAG:
            if len(words) < 2:
                return False  # the main parser says the path is missing
            words = words[1:]
        words = words[1:]
    if not words:
        return True
    if words[0] in ("-h", "--help", "-V", "--version"):
        return False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return words[0] not in action.choices
    return True


def _parser_without_clashes() -> argparse.ArgumentParser:
    """`build_parser`, with each plugin whose setting's flag clashes with an option of
    samplescope's (or is no flag) switched off, saying so in one line."""
    while True:
        try:
            return build_parser()
        except (argparse.ArgumentError, ValueError, TypeError) as error:
            found = _plugin_flag_in(str(error))
            if found is None:
                raise
            name, setting, flag = found
            path = run_registry().origins[name].path
            use_run_registry(run_registry().without(name))
            print(
                f"samplescope: sampler plugin {path}: its setting {setting!r} ({flag}) clashes"
                f" with an option of samplescope ({error}): not loaded",
                file=sys.stderr,
            )


def _plugin_flag_in(message: str) -> tuple[str, str, str] | None:
    """(plugin, setting, flag) of a plugin setting whose flag an argparse error names."""
    words = set(re.findall(r"[^\s,:'\"]+", message))
    for unit in run_registry().plugins:
        for spec in unit.specs:
            for flag in (spec.flag, spec.short_flag):
                if flag is not None and flag in words:
                    return unit.name, spec.name, flag
    return None


def _front_parser(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, bool]:
    """The parser that reads argv (the app's, or the commands'), and whether it is the
    app's."""
    parser = _parser_without_clashes()
    if _opens_app(parser, argv):
        from tui.cli.commands.app import build_app_parser

        return build_app_parser(), True
    return parser, False


def main(argv: Sequence[str] | None = None) -> int:
    """Run samplescope; returns the process exit code. An error nobody foresaw is one
    line on stderr naming where its traceback was logged (`tui.cli.unexpected`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args_list)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the last word: one line, the traceback logged
        from tui.cli.unexpected import report_unexpected

        return report_unexpected(error, args_list)
    finally:
        end_run()


def _run(args_list: list[str]) -> int:
    try:
        check_arguments(args_list)
    except TextInputError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    try:
        # The registry every command and the app run with: the built-in units and
        # the plugins of the samplers folder, then of --sampler-file.
        use_run_registry(load_sampler_files(BUILT_IN_REGISTRY))
        parser, opens_app = _front_parser(args_list)
        sampler_files = sampler_files_given(parser, args_list)
        for path in sampler_files:
            use_run_registry(load_sampler_file(path, run_registry()))
        if sampler_files:  # their flags join the parser
            parser, opens_app = _front_parser(args_list)
        args = parser.parse_args(args_list)
        check_same_files(sampler_files, args)
    except SamplescopeError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    if opens_app or args.command is None:
        from tui.cli.commands.app import run_app

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
