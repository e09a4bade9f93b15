"""`samplescope bench` sends llama.cpp's log to the log file, never to fd 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A fresh process, so llama-cpp-python's own log callback (which prints llama.cpp's
# warnings to stderr) is the one in place until samplescope installs its own.
_CHILD = r"""
import sys
from tui.cli.main import main
sys.exit(main(["bench", "--only", "sampler", "--steps", "1", "--repeats", "1",
               "--threads", "1", "--model", sys.argv[1]]))
"""


def test_bench_writes_nothing_from_llama_cpp_to_fd_2(
    default_model_path: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(default_model_path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    logs = list(tmp_path.rglob("llama.log"))
    assert len(logs) == 1
    # The sampler part's model load was logged to the file, not to llama-cpp-python.
    assert "llama_model_loader: loaded meta data" in logs[0].read_text(encoding="utf-8")
