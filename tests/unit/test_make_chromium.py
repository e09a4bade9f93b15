"""`make chromium` (a step of `make test`) never stops the tests: without Chromium, and
where it cannot be installed (no apt-get, not root), it says what to do in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HINT = (
    "no Chromium at {path}: install it (Debian: apt-get install chromium), set"
    " SAMPLESCOPE_CHROMIUM to a Chromium binary, or set SAMPLESCOPE_SKIP_BROWSER=1 to skip"
    " the browser test\n"
)


def make_chromium(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`make -s chromium` for a user who is not root, on a PATH with no apt-get nor sudo."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "id").write_text("#!/bin/sh\necho 1000\n")
    (tools / "id").chmod(0o755)
    for tool in ("grep", "nproc"):  # the Makefile's own variables read them
        found = shutil.which(tool)
        if found is not None:
            os.symlink(found, tools / tool)
    return subprocess.run(
        [make, "-s", "-C", str(ROOT), "chromium"],
        env={"PATH": str(tools), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_chromium_nor_a_way_to_install_it_make_says_how_and_goes_on(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "no-chromium")
    done = make_chromium(tmp_path, SAMPLESCOPE_CHROMIUM=missing)
    assert (done.returncode, done.stdout, done.stderr) == (0, HINT.format(path=missing), "")


def test_with_the_browser_test_skipped_make_says_nothing(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-chromium")
    done = make_chromium(tmp_path, SAMPLESCOPE_CHROMIUM=missing, SAMPLESCOPE_SKIP_BROWSER="1")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
