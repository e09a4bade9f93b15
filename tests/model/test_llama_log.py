"""llama.cpp's log goes to a file, never to the terminal (fds 1 and 2 untouched)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import llama_cpp
    from backend.llama.log import install_llama_log, recent_problems

    fds_before = (os.fstat(1).st_ino, os.fstat(2).st_ino)
    log = install_llama_log(Path(sys.argv[1]))
    params = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(sys.argv[2].encode(), params)
    assert model, "load failed"
    ctx_params = llama_cpp.llama_context_default_params()
    ctx_params.n_ctx = 256
    ctx = llama_cpp.llama_init_from_model(model, ctx_params)
    assert ctx, "no context"
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    bad = llama_cpp.llama_model_load_from_file(b"/nonexistent/model.gguf", params)
    assert not bad
    assert (os.fstat(1).st_ino, os.fstat(2).st_ino) == fds_before
    print("OK", log)
    print("PROBLEMS", recent_problems())
    """
)


def test_log_goes_to_file_not_stderr(default_model_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "llama.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), str(default_model_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert f"OK {log}" in done.stdout
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) > 10
    assert "llama_model_loader" in text or "print_info" in text
    assert "n_ctx" in text  # the context's log too
    # The failed load's error is logged and remembered for error reports.
    assert "/nonexistent/model.gguf" in text
    assert "nonexistent" in done.stdout.split("PROBLEMS", 1)[1]
