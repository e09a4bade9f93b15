"""The command line's layout: `tui/cli/commands/` holds one module per command (a
package when the command has helpers of its own), the helpers they share sit beside it
in `tui/cli/`, and a command reaches another only to open the app (`serve` passes the
app its options, `sweep --view` opens it)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.unit.test_architecture import ROOT, import_graph
from tui.cli.commands import GROUPS
from tui.cli.main import build_parser, command_modules

COMMANDS = "tui.cli.commands"
APP = f"{COMMANDS}.app"


def command_module_names() -> set[str]:
    """Every module or package in the commands folder, by dotted name."""
    folder = ROOT / "tui" / "cli" / "commands"
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    packages = {path.parent.name for path in folder.glob("*/__init__.py")}
    return {f"{COMMANDS}.{name}" for name in modules | packages}


def command_of(module: str) -> str | None:
    """The command a module of the commands folder belongs to (its module or package)."""
    if not module.startswith(COMMANDS + "."):
        return None
    return ".".join(module.split(".")[:4])


def test_every_command_module_is_a_registered_command_and_only_those() -> None:
    registered = {module.__name__ for module in command_modules()}
    assert registered == command_module_names() - {APP}


def test_every_command_names_a_group_and_help_lists_them_by_group_then_name() -> None:
    modules = command_modules()
    assert all(module.GROUP in GROUPS for module in modules)
    keys = [(list(GROUPS).index(module.GROUP), module.__name__) for module in modules]
    assert keys == sorted(keys)


def test_help_lists_each_command_under_its_group_title() -> None:
    listing = build_parser().format_help().split("\noptions:")[0].splitlines()
    titles = {f"    {title}:": group for group, title in GROUPS.items()}
    assert [line for line in listing if line in titles] == list(titles)
    shown_in: dict[str, str] = {}
    group = ""
    for line in listing:
        group = titles.get(line, group)
        if line.startswith("      ") and not line.startswith("       "):
            shown_in[line.split()[0]] = group
    assert shown_in == {
        module.__name__.rpartition(".")[2].replace("_", "-"): module.GROUP
        for module in command_modules()
    }


def handlers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, Callable[..., int]]:
    """Each subcommand's `func`, by its words (a command with verbs by each verb:
    `preset import`)."""
    found: dict[str, Callable[..., int]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                func = command.get_default("func")
                words = f"{prefix}{name}"
                found.update({words: func} if func else handlers(command, words + " "))
    return found


def test_every_subcommand_runs_in_a_module_of_the_commands_folder() -> None:
    modules = {name: command_of(func.__module__) for name, func in handlers(build_parser()).items()}
    assert {name: m for name, m in modules.items() if m is None} == {}
    assert set(modules.values()) == command_module_names() - {APP}


def commands_reached(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """The commands a helper imports, and those a command imports besides the app."""
    offenders: dict[str, list[str]] = {}
    for source, targets in graph.items():
        if not source.startswith("tui.cli") or source in ("tui.cli.main", COMMANDS):
            continue
        own = command_of(source)
        reached = {t for t in targets if command_of(t) not in (None, own)}
        allowed = {APP} if own is not None else set()
        if bad := sorted(reached - allowed):
            offenders[source] = bad
    return offenders


def test_helpers_import_no_command_and_commands_import_no_other_but_the_app() -> None:
    assert commands_reached(import_graph()) == {}


def test_the_layout_check_sees_a_command_or_a_helper_importing_a_command(tmp_path: Path) -> None:
    folder = tmp_path / "tui" / "cli" / "commands"
    folder.mkdir(parents=True)
    for package in ("sampling", "backend"):
        (tmp_path / package).mkdir()
    for init in (tmp_path / "tui", tmp_path / "tui" / "cli", folder):
        (init / "__init__.py").write_text("")
    (folder / "app.py").write_text("X = 1\n")
    (folder / "tree.py").write_text("X = 1\n")
    (folder / "serve.py").write_text("from tui.cli.commands.app import X\n")
    (folder / "export.py").write_text("from tui.cli.commands.tree import X\n")
    (folder / "sweep").mkdir()
    (folder / "sweep" / "__init__.py").write_text("from tui.cli.commands.sweep.args import X\n")
    (folder / "sweep" / "args.py").write_text("from tui.cli.commands.tree import X\n")
    (tmp_path / "tui" / "cli" / "flags.py").write_text("from tui.cli.commands import app\n")
    assert commands_reached(import_graph(tmp_path)) == {
        "tui.cli.commands.export": ["tui.cli.commands.tree"],
        "tui.cli.commands.sweep.args": ["tui.cli.commands.tree"],
        "tui.cli.flags": [APP],
    }


def test_every_command_found_is_on_the_commands_page() -> None:
    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    missing = [words for words in handlers(build_parser()) if f"`samplescope {words}" not in page]
    assert missing == []


WIDGET_PACKAGES = ("tui.chat", "tui.panel", "tui.widgets")

APP_OPENERS = {
    (APP, "tui.app"),  # `samplescope` without a command is the app
    (f"{COMMANDS}.sweep", "tui.sweep.command"),  # `sweep --view` opens the app on its screen
}
"""The only imports from the command line into the app: the two commands that open it."""


def widgets_reached(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """The chat's, the panel's and the widgets' modules each command-line module reaches
    through its imports (type-only ones included), not counting the app's openers."""
    offenders: dict[str, list[str]] = {}
    for source in sorted(name for name in graph if name.startswith("tui.cli")):
        seen: set[str] = set()
        todo = [source]
        while todo:
            module = todo.pop()
            for target in graph.get(module, set()):
                if target not in seen and (module, target) not in APP_OPENERS:
                    seen.add(target)
                    todo.append(target)
        if reached := sorted(t for t in seen if t.startswith(WIDGET_PACKAGES)):
            offenders[source] = reached
    return offenders


def test_the_command_line_imports_no_chat_panel_or_widget_but_to_open_the_app() -> None:
    assert widgets_reached(import_graph(typing_too=True)) == {}


def test_the_widget_check_sees_an_import_through_a_shared_module(tmp_path: Path) -> None:
    folder = tmp_path / "tui" / "cli" / "commands"
    folder.mkdir(parents=True)
    (tmp_path / "tui" / "widgets").mkdir()
    for package in ("sampling", "backend"):
        (tmp_path / package).mkdir()
    for init in (tmp_path / "tui", tmp_path / "tui" / "cli", folder, tmp_path / "tui" / "widgets"):
        (init / "__init__.py").write_text("")
    (tmp_path / "tui" / "widgets" / "label.py").write_text("X = 1\n")
    (tmp_path / "tui" / "app.py").write_text("from tui.widgets.label import X\n")
    (tmp_path / "tui" / "labels.py").write_text("from tui.widgets.label import X\n")
    (folder / "app.py").write_text("from tui.app import X\n")
    (folder / "tree.py").write_text("from tui.labels import X\n")
    assert widgets_reached(import_graph(tmp_path, typing_too=True)) == {
        "tui.cli.commands.tree": ["tui.widgets.label"],
    }


HEAVY = ("llama_cpp", "textual", "jinja2")
"""What a command loads when it runs, never to list the commands or parse their flags."""


def test_help_and_a_commands_parsing_load_no_model_runtime_app_or_template() -> None:
    probe = (
        "import sys\n"
        "from tui.cli.main import build_parser\n"
        "build_parser().format_help()\n"
        "build_parser().parse_args(['tree', '1'])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    assert loaded.strip() == "[]"
