"""The wheel carries everything the app reads at run time (`pipx install .`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


SKIPPED = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy: a build inside the checkout leaves build/, whose stale
    # modules would ride along into later wheels.
    source = tmp_path_factory.mktemp("source") / "samplescope"
    shutil.copytree(ROOT, source, ignore=SKIPPED)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("samplescope-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_every_stylesheet_and_asset_ships(wheel_files: set[str]) -> None:
    stylesheets = {
        str(p.relative_to(ROOT))
        for kind in ("*.tcss", "*.html")
        for p in (ROOT / "tui").rglob(kind)
    }
    assets = {f"tui/assets/{p.name}" for p in (ROOT / "assets").iterdir() if p.is_file()}
    assert stylesheets and "tui/assets/presets.toml" in assets
    assert stylesheets | assets <= wheel_files


def test_every_css_path_names_a_shipped_file(wheel_files: set[str]) -> None:
    for module in (ROOT / "tui").rglob("*.py"):
        for name in re.findall(r'CSS_PATH\s*=\s*"([^"]+)"', module.read_text(encoding="utf-8")):
            shipped = str((module.parent / name).relative_to(ROOT))
            assert shipped in wheel_files, f"{module.name}: {name}"


def test_only_the_three_packages_are_installed(wheel_files: set[str]) -> None:
    top_level = {name.split("/")[0] for name in wheel_files if not name.startswith("samplescope-")}
    assert top_level == {"sampling", "backend", "tui"}


def test_the_wheel_holds_exactly_the_source_modules(wheel_files: set[str]) -> None:
    # Catches a subpackage missing from pyproject's package list, and stale modules.
    source = {
        str(p.relative_to(ROOT))
        for package in ("sampling", "backend", "tui")
        for p in (ROOT / package).rglob("*.py")
    }
    shipped = {name for name in wheel_files if name.endswith(".py")}
    assert shipped == source


def test_the_commands_are_found_in_the_installed_wheel(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The wheel unpacked is what site-packages holds; the source tree is off the path.
    installed = tmp_path_factory.mktemp("installed")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import tui.cli.main as m; m.build_parser().print_help(); print(m.__file__)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=installed,
        env={"PATH": "", "PYTHONPATH": str(installed), "HOME": str(installed)},
    ).stdout
    commands = ROOT / "tui" / "cli" / "commands"
    modules = {p.stem for p in commands.glob("*.py")} | {
        p.parent.name for p in commands.glob("*/__init__.py")
    }
    expected = {name.replace("_", "-") for name in modules - {"__init__", "app"}}
    assert found.rstrip().endswith(str(installed / "tui" / "cli" / "main.py"))
    assert len(expected) > 20 and [n for n in expected if f"    {n} " not in found] == []
