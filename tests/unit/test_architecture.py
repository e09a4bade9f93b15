"""The house rules, checked on the source tree.

- Imports go one way: tui → backend → sampling, and sampling is pure numpy; this
  holds for imports made for type checking only, too.
- No import cycles at run time, between modules or between subpackages.
- The store only stores: backend.store imports nothing from backend.session.
- The generic pipeline (sampler, candidates, records, chain) imports no concrete
  sampler unit, not even for type checking: units are known by their interface.
- Reading the config is plain data: backend.config.config loads neither llama.cpp
  nor the generation loop.
- No package is named in a string across layers (an import the checks cannot see).
- No module reads the registry when it is imported: a table copied then would miss a
  sampler plugin loaded later, or keep one dropped.
- A setting is one sub-package, built from the units it is given: sampling.settings
  imports no unit, no list of them and no plugin at run time. No registry is "in
  use": the front door builds one and hands it down (a settings record keeps its
  own, the command line's options carry theirs); `sampling.built_in` alone gives the
  built-in one a record made without one takes.
- Textual's private compositor is reached from one module (`tui.row_compositor`).
- Modules are split by concept, not by count: a module (test files included) past
  400 lines is listed in a warning, one past 600 fails.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names)
PACKAGES = ("sampling", "backend", "tui")
LAYER = {"sampling": 0, "backend": 1, "tui": 2}
WARN_LINES = 400
MAX_LINES = 600
DOTTED = re.compile(r"(sampling|backend|tui|tests)(\.\w+)+")


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once a run (several rules walk every module;
    none changes a tree)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the three packages by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:` (annotations only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in (child, *_runtime_nodes(child)))
            continue
        yield node
        yield from _runtime_nodes(node)


def imports_of(path: Path, package_of: str, *, typing_too: bool = False) -> set[str]:
    """The absolute module names a file imports at run time (relative ones resolved),
    and with `typing_too` also those under `if TYPE_CHECKING:`."""
    names: set[str] = set()
    tree = parsed(path)
    for node in ast.walk(tree) if typing_too else _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package_of.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path = ROOT, *, typing_too: bool = False) -> dict[str, set[str]]:
    """Module → the project modules it imports (with `typing_too`, under
    `if TYPE_CHECKING:` too)."""
    found = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = {
            target
            for target in imports_of(path, package, typing_too=typing_too)
            if target in found and target != name
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes (first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def subpackage_of(module: str) -> str:
    """The unit the package-level check sees: `backend.chat.prompt` → `backend.chat`.

    A module at the top of a package (`tui.app`, `backend.errors`) is a unit of its own.
    """
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("sampling", {"numpy", "sampling"}),
        (
            "backend",
            {
                "numpy",
                "sampling",
                "backend",
                "llama_cpp",
                "tokenizers",
                "jinja2",
                "platformdirs",
                "yaml",
                "huggingface_hub",
                "regex",  # the user's regular expressions, time-limited
                "threadpoolctl",  # numpy's BLAS at one thread beside llama.cpp's
            },
        ),
        (
            "tui",
            {
                "numpy",
                "sampling",
                "backend",
                "tui",
                "textual",
                "textual_plot",
                "textual_serve",
                "aiohttp",  # textual-serve's server, which `serve` puts behind its checks
                "rich",
                "llama_cpp",
            },
        ),
    ],
)
def test_imports_go_one_way(package: str, allowed: set[str]) -> None:
    offenders = {}
    for name, path in modules().items():
        if name.split(".")[0] != package:
            continue
        targets = imports_of(path, name, typing_too=True)
        roots = {target.split(".")[0] for target in targets} - {""}
        if bad := sorted(roots - allowed - STDLIB):
            offenders[name] = bad
    assert offenders == {}


def test_no_module_imports_itself_back() -> None:
    assert find_cycle(import_graph()) is None


@pytest.mark.parametrize("package", ["sampling", "backend", "tui"])
def test_no_package_has_a_cycle_even_through_type_checking_imports(package: str) -> None:
    """Annotations included, imports go one way: in sampling the units read the settings
    record, the registry lists the units, and the settings module connects the two; in
    tui a screen reaches the app through a Protocol of what it needs, not the app's class."""
    graph = import_graph(typing_too=True)
    within = {
        name: {target for target in targets if target.startswith(package)}
        for name, targets in graph.items()
        if name.startswith(package)
    }
    assert find_cycle(within) is None


def test_no_subpackages_import_each_other() -> None:
    packages: dict[str, set[str]] = {}
    for source, targets in import_graph().items():
        home = subpackage_of(source)
        packages.setdefault(home, set()).update(
            subpackage_of(t) for t in targets if subpackage_of(t) != home
        )
    assert find_cycle(packages) is None


def test_the_store_only_stores() -> None:
    """backend.store persists and reads; whatever generates tokens (replay, steering,
    the beam and sweep recorders) lives beside the loop in backend.session, so no
    store module imports it, not even for type checking."""
    offenders = {
        name: sorted(
            t for t in imports_of(path, name, typing_too=True) if t.startswith("backend.session")
        )
        for name, path in modules().items()
        if subpackage_of(name) == "backend.store"
    }
    assert {name: found for name, found in offenders.items() if found} == {}


GENERIC_PIPELINE = ("sampling.sampler", "sampling.candidates", "sampling.records", "sampling.chain")
"""The modules every unit runs through: they name no particular unit."""
UNIT_INTERFACE = ("sampling.samplers", "sampling.samplers.unit", "sampling.samplers.base")


def concrete_units_imported(name: str, path: Path) -> list[str]:
    """The unit modules (`sampling.samplers.*` but the interface) a module imports,
    type-only imports included."""
    return sorted(
        target
        for target in imports_of(path, name.rpartition(".")[0], typing_too=True)
        if target.startswith("sampling.samplers")
        and not any(target == own or target.startswith(own + ".") for own in UNIT_INTERFACE[1:])
        and target != UNIT_INTERFACE[0]
    )


def test_the_generic_pipeline_imports_no_concrete_unit() -> None:
    """The sampler, the candidates, the records and the chain know units only by the
    interface: what a unit reports, keeps or restores goes by its name."""
    found = modules()
    offenders = {name: concrete_units_imported(name, found[name]) for name in GENERIC_PIPELINE}
    assert {name: units for name, units in offenders.items() if units} == {}


def loaded_by(module: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Every project module importing `module` loads (itself and the packages above
    each included), with the names each imports at run time."""
    found = modules(root)
    graph = import_graph(root)
    loaded: dict[str, set[str]] = {}
    waiting = [module]
    while waiting:
        name = waiting.pop()
        if name in loaded or name not in found:
            continue
        path = found[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        loaded[name] = imports_of(path, package)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        waiting.extend([*graph[name], *parents])
    return loaded


def test_reading_the_config_loads_neither_llama_cpp_nor_the_generation_loop() -> None:
    """The settings, bans and loop guard the config holds are plain data: reading the
    config file (every command does) does not load the model runtime."""
    loaded = loaded_by("backend.config.config")
    assert "backend.session.loop" not in loaded
    llama = {name for name, imports in loaded.items() if "llama_cpp" in imports}
    assert llama == set()


def strings_naming_packages(path: Path) -> set[str]:
    """Dotted module paths in a file's string constants (docstrings excepted)."""
    tree = parsed(path)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and DOTTED.fullmatch(node.value)
    }


def test_no_package_is_named_in_a_string_across_layers() -> None:
    offenders = {}
    for name, path in modules().items():
        layer = name.split(".")[0]
        named = {s for s in strings_naming_packages(path) if s.split(".")[0] != layer}
        if named:
            offenders[name] = sorted(named)
    assert offenders == {}


def line_counts(root: Path = ROOT) -> dict[str, int]:
    """Lines of every module of the three packages and of every test file, by path."""
    paths = [*modules(root).values(), *sorted((root / "tests").rglob("*.py"))]
    return {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in paths
    }


def test_no_module_is_over_600_lines_and_those_over_400_are_named() -> None:
    counts = line_counts()
    long = {path: count for path, count in counts.items() if count > WARN_LINES}
    if long:
        listed = ", ".join(f"{path} ({count})" for path, count in sorted(long.items()))
        warnings.warn(
            f"over {WARN_LINES} lines (one concept each? split only by concept): {listed}",
            stacklevel=1,
        )
    assert {path: count for path, count in long.items() if count > MAX_LINES} == {}


REGISTRY_READS = ("registry", "built_in_registry", "app_registry")
"""Calls that read a registry held elsewhere (the record's default, an app's)."""


def registry_reads_at_import(path: Path) -> list[int]:
    """The lines where a module reads a registry held elsewhere when it is imported
    (outside any function: its own statements, class bodies, comprehensions at module
    level)."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name | ast.Attribute)
                and (child.func.id if isinstance(child.func, ast.Name) else child.func.attr)
                in REGISTRY_READS
            ):
                found.append(child.lineno)
            visit(child)

    visit(parsed(path))
    return found


def test_no_module_reads_the_registry_when_imported() -> None:
    reads = {
        name: lines for name, path in modules().items() if (lines := registry_reads_at_import(path))
    }
    assert reads == {}


SETTINGS = "sampling.settings"
UNIT_LISTS = ("sampling.samplers", "sampling.built_in", "sampling.plugins")
COMMAND_LINE = "tui.cli"
"""The command line: `main` builds the run's registry, its parsed options carry it."""


def test_the_settings_sub_package_imports_no_unit() -> None:
    graph = import_graph()
    named = {
        name: sorted(t for t in targets if t.startswith(UNIT_LISTS))
        for name, targets in graph.items()
        if name.startswith(SETTINGS)
    }
    assert named and {name: units for name, units in named.items() if units} == {}


def calls_named(path: Path, function: str) -> list[int]:
    """The lines where a module calls `function` (by its bare name or as an attribute)."""
    return [
        node.lineno
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == function)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == function)
        )
    ]


def callers_of(function: str) -> set[str]:
    """The project modules that call `function`."""
    return {name for name, path in modules().items() if calls_named(path, function)}


def test_no_registry_is_put_in_use_and_the_built_in_one_is_given_once() -> None:
    """No module puts a registry in use for others to find (the record's default is
    the built-in units', given by the module that builds it), and no module asks for
    one by a global lookup."""
    assert callers_of("use_registry") == set()
    assert callers_of("registry_in_use") == set()
    assert callers_of("registry") == set()
    assert callers_of("provide_built_in_registry") == {"sampling.built_in"}


def test_the_command_lines_registry_travels_with_its_options() -> None:
    """`main` builds the run's registry (the built-in units and the plugins loaded) and
    its parsers with it; the parsed options carry it to the command, which hands it
    down. Only the command line reads it off the options: the app, the backend and the
    sampler are handed a registry, or read the one a settings record was made with."""
    assert callers_of("carry_registry") == {"tui.cli.main", "tui.cli.commands.app"}
    readers = callers_of("registry_of_args")
    assert readers and all(name.startswith(COMMAND_LINE + ".") for name in readers)


def test_only_the_row_compositor_reaches_textuals_private_compositor() -> None:
    """Textual has no public way to give a screen another compositor: one module sets
    it (`tui.row_compositor.use_row_compositor`), and no screen assigns it itself."""
    reaching = {
        name
        for name, path in modules().items()
        if re.search(r"\b_compositor\b", path.read_text(encoding="utf-8"))
    }
    assert reaching == {"tui.row_compositor"}


# --- the checks themselves catch what they are for ----------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    return tmp_path


def test_checker_sees_a_concrete_unit_behind_type_checking(tmp_path: Path) -> None:
    path = tmp_path / "chain.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from sampling.samplers.unit import StepContext\n"
        "if TYPE_CHECKING:\n"
        "    from sampling.samplers.mirostat import Mirostat\n",
        encoding="utf-8",
    )
    assert concrete_units_imported("sampling.chain", path) == [
        "sampling.samplers.mirostat",
        "sampling.samplers.mirostat.Mirostat",
    ]


def test_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"sampling/bad.py": "from tui.app import App\nimport textual\n"})
    assert imports_of(root / "sampling/bad.py", "sampling") >= {"tui.app", "textual"}


def test_checker_sees_a_cycle_through_a_relative_import(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "backend/store/__init__.py": "",
            "backend/store/a.py": "from . import b\n",
            "backend/store/b.py": "from backend.store.a import thing\n",
        },
    )
    cycle = find_cycle(import_graph(root))
    assert cycle is not None and set(cycle) == {"backend.store.a", "backend.store.b"}


def test_checker_ignores_type_checking_imports_for_cycles_only(tmp_path: Path) -> None:
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tui.x import y\n"
    root = _tree(tmp_path, {"backend/z.py": text})
    assert "tui.x" not in imports_of(root / "backend/z.py", "backend")
    assert "tui.x" in imports_of(root / "backend/z.py", "backend", typing_too=True)


def test_checker_sees_a_package_in_a_string(tmp_path: Path) -> None:
    text = '"""Mentions `tui.assets` in prose."""\nFILES = "tui.assets"\n'
    root = _tree(tmp_path, {"backend/presets.py": text})
    assert strings_naming_packages(root / "backend/presets.py") == {"tui.assets"}


def test_line_counts_take_the_test_files_too(tmp_path: Path) -> None:
    root = _tree(
        tmp_path, {"sampling/a.py": "x = 1\n" * 3, "tests/unit/test_b.py": "y = 2\n" * 601}
    )
    assert line_counts(root) == {"sampling/a.py": 3, "tests/unit/test_b.py": 601}


def test_checker_sees_a_registry_read_at_import_only(tmp_path: Path) -> None:
    text = (
        "from sampling import registry as r\n"
        "from sampling.settings.registry import registry\n"
        "NAMES = [s.name for s in registry().settings]\n"
        "class Form:\n"
        "    FIELDS = r.registry().settings\n"
        "def fields():\n"
        "    return registry().settings\n"
        "LATER = lambda: registry()\n"
    )
    root = _tree(tmp_path, {"tui/form.py": text})
    assert registry_reads_at_import(root / "tui/form.py") == [3, 5]


def test_checker_sees_what_a_module_loads_through_others(tmp_path: Path) -> None:
    files = {
        "backend/__init__.py": "",
        "backend/config/__init__.py": "",
        "backend/config/config.py": "from backend.session.watch import Guard\n",
        "backend/session/__init__.py": "",
        "backend/session/watch.py": "from backend.session.loop import run\n",
        "backend/session/loop.py": "import llama_cpp\n",
    }
    loaded = loaded_by("backend.config.config", _tree(tmp_path, files))
    assert set(loaded) == {
        "backend",
        "backend.config",
        "backend.config.config",
        "backend.session",
        "backend.session.watch",
        "backend.session.loop",
    }
    assert "llama_cpp" in loaded["backend.session.loop"]


def test_checker_sees_a_registry_put_in_use_or_read_by_a_global(tmp_path: Path) -> None:
    text = (
        "from sampling.settings.record import use_registry as u\nimport x\nx.use_registry(1)\n"
        "from tui.cli.options.sampler_registry import registry_of_args as r\n"
        "def f(args):\n    return r(args)\n"
    )
    root = _tree(tmp_path, {"backend/config/bad.py": text})
    assert calls_named(root / "backend/config/bad.py", "use_registry") == [3]
    assert calls_named(root / "backend/config/bad.py", "r") == [6]
    assert calls_named(root / "backend/config/bad.py", "registry") == []
