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
from sampling.settings.registry import Registry
from tui.cli.options.sampler_file import (
    LEADING_DEST,
    add_sampler_file_flag,
    check_same_files,
    sampler_files_given,
)
from tui.cli.options.sampler_registry import carry_registry
from tui.cli.text_input import TextInputError, check_arguments


class CommandModule(Protocol):
    """A command's module: `register(subparsers, registry)` adds its parser (its
    settings flags those of `registry`) with `func` set to a callable taking the parsed
    namespace and returning an exit code; `GROUP` is one of `tui.cli.commands.GROUPS`."""

    GROUP: str

    def register(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
    ) -> None: ...


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


def add_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add every command (its settings flags `registry`'s), listed on -h under its
    group's title, indented below it."""
    from tui.cli.commands import GROUPS

    listed = subparsers._choices_actions  # what -h lists, in order
    group = None
    for module in command_modules():
        if group != module.GROUP:
            group = module.GROUP
            listed.append(_GroupTitle(GROUPS[group]))
        before = len(listed)
        module.register(subparsers, registry)
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


def build_parser(registry: Registry = BUILT_IN_REGISTRY) -> argparse.ArgumentParser:
    """The parser of every command: its settings flags are `registry`'s, and every
    command's options carry it (`registry_of_args`)."""
    from tui.cli.commands.app import build_app_parser

    app_usage = build_app_parser(registry).format_usage().removeprefix("usage: ")
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
    carry_registry(parser, registry)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_commands(subparsers, registry)
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


def _parser_without_clashes(registry: Registry) -> tuple[argparse.ArgumentParser, Registry]:
    """`build_parser` of `registry`, with each plugin whose setting's flag clashes with
    an option of samplescope's (or is no flag) switched off, saying so in one line; the
    registry without those plugins."""
    while True:
        try:
            return build_parser(registry), registry
        except (argparse.ArgumentError, ValueError, TypeError) as error:
            found = _plugin_flag_in(str(error), registry)
            if found is None:
                raise
            name, setting, flag = found
            path = registry.origins[name].path
            registry = registry.without(name)
            print(
                f"samplescope: sampler plugin {path}: its setting {setting!r} ({flag}) clashes"
                f" with an option of samplescope ({error}): not loaded",
                file=sys.stderr,
            )


def _plugin_flag_in(message: str, registry: Registry) -> tuple[str, str, str] | None:
    """(plugin, setting, flag) of a plugin of `registry` whose setting's flag an argparse
    error names."""
    words = set(re.findall(r"[^\s,:'\"]+", message))
    for unit in registry.plugins:
        for spec in unit.specs:
            for flag in (spec.flag, spec.short_flag):
                if flag is not None and flag in words:
                    return unit.name, spec.name, flag
    return None


def _front_parser(
    argv: Sequence[str], registry: Registry
) -> tuple[argparse.ArgumentParser, bool, Registry]:
    """The parser that reads argv (the app's, or the commands'), whether it is the
    app's, and the registry it was built with (`registry` without the plugins whose
    flags clash)."""
    parser, registry = _parser_without_clashes(registry)
    if _opens_app(parser, argv):
        from tui.cli.commands.app import build_app_parser

        return build_app_parser(registry), True, registry
    return parser, False, registry


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


def _run(args_list: list[str]) -> int:
    try:
        check_arguments(args_list)
    except TextInputError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    try:
        # The registry every command and the app run with: the built-in units and
        # the plugins of the samplers folder, then of --sampler-file.
        registry = load_sampler_files(BUILT_IN_REGISTRY)
        parser, opens_app, registry = _front_parser(args_list, registry)
        sampler_files = sampler_files_given(parser, args_list)
        for path in sampler_files:
            registry = load_sampler_file(path, registry)
        if sampler_files:  # their flags join the parser
            parser, opens_app, registry = _front_parser(args_list, registry)
        args = parser.parse_args(args_list)
        check_same_files(sampler_files, args)
    except SamplescopeError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 2
    if opens_app or args.command is None:
        from tui.cli.commands.app import run_app

        return run_app(args_list, registry)
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
