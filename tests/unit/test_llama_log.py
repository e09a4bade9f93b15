"""llama.cpp's log goes to a file, never to the terminal (fds 1 and 2 untouched)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from backend.llama.log import default_log_path

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


def test_install_appends_and_switches(tmp_path: Path) -> None:
    from backend.llama.log import current_log_path, install_llama_log

    first = install_llama_log(tmp_path / "a.log")
    assert first == tmp_path / "a.log" and current_log_path() == first and first.exists()
    second = install_llama_log(tmp_path / "b.log")
    assert current_log_path() == second and second.exists()


def test_default_path_is_in_user_log_dir() -> None:
    path = default_log_path()
    assert path.name == "llama.log" and "samplescope" in str(path)
