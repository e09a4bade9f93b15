"""Fuzzing the names of the files a user gives (a preset to import, a grammar or text
as `@path`, a text to score, a sampler file): any name, NUL and lone surrogates
included, is read or refused with one `UserFileError` line, never another exception.
Examples per run come from the hypothesis profile (tests/conftest.py): one property of
100 examples.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.user_files import UserFileError, read_user_text

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PIECES = ["a", "/", "..", ".", "\x00", "\udcff", "é", " ", "\n", "~", "x" * 300, "*", "\\"]


@pytest.fixture(scope="module")
def work() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-paths-"))
    (folder / "a").write_text("text", encoding="utf-8")
    os.mkfifo(folder / "fifo")
    return folder


@HEALTH
@given(st.one_of(st.lists(st.sampled_from([*PIECES, "fifo"]), max_size=6).map("".join),
                 st.text(max_size=12)))  # fmt: skip
def test_any_file_name_is_read_or_refused_in_one_line(work: Path, name: str) -> None:
    try:
        text = read_user_text(work / name)
    except UserFileError as error:
        assert "\n" not in str(error).replace(repr(name), "").replace(str(work / name), "")
        return
    assert text == "text"


def test_a_name_holding_a_nul_is_refused_in_one_line() -> None:
    with pytest.raises(UserFileError, match="a file name holds no NUL"):
        read_user_text(Path("preset\x00.json"))
