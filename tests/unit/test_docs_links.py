"""The README and the guide under docs/ hold together: every relative link (README, each
page, the help screen's pages) names a file that exists and a heading it has, every page
is linked from the README, and each headless example in the README parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tui.cli.main import build_parser
from tui.help.screen import DOCS

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown file's headings (outside code blocks)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def relative_links(page: Path) -> list[str]:
    """Links to files of the repository (not web addresses) in a Markdown file."""
    return [
        link
        for link in LINK.findall(page.read_text(encoding="utf-8"))
        if not re.match(r"[a-z]+:", link)
    ]


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    links = relative_links(page)
    assert links or page.name != "README.md"
    for link in links:
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.is_file(), f"{page.name}: {link} names no file"
        if anchor:
            assert anchor in anchors(path), f"{page.name}: {link} names no heading"


def test_every_page_is_linked_from_the_readme() -> None:
    linked = {
        (ROOT / link.partition("#")[0]).resolve() for link in relative_links(ROOT / "README.md")
    }
    assert len(PAGES) >= 15
    assert [page.name for page in PAGES if page.resolve() not in linked] == []


def test_the_help_screen_names_pages_that_exist() -> None:
    assert len(DOCS) >= 10
    for topic, page in DOCS:
        assert (ROOT / page).is_file(), f"help: {topic} points at {page}, which is missing"
    assert "docs/keys.md" in {page for _, page in DOCS}


def readme_examples() -> list[str]:
    """The lines of the README's block of headless examples."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"## Headless commands.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert found is not None
    return found.group(1).strip().splitlines()


def test_each_headless_command_has_a_readme_example_that_parses() -> None:
    parser = build_parser()
    shown = set()
    for line in readme_examples():
        argv = shlex.split(line, comments=True)
        assert argv[0] == "samplescope", line
        args = parser.parse_args(argv[1:])
        assert args.command, line
        shown.add(argv[1])
    subparsers = next(action for action in parser._actions if action.dest == "command")
    assert sorted(set(subparsers.choices) - shown) == []
