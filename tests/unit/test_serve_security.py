"""`samplescope serve` locked down: each tab runs samplescope's own code whatever the
working directory."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tui.cli.serve import app_command


def test_a_tab_runs_samplescopes_own_code_whatever_the_working_directory(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    for package in ("tui", "backend", "sampling"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'w').write({package!r})\n", encoding="utf-8"
        )
    command = shlex.split(app_command(["-h"]))
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: samplescope")
    assert not marker.exists()
