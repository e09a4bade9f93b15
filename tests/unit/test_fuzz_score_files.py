"""Hostile texts to score: what `samplescope score FILE` reads before it loads a model.

Random bytes, non-UTF-8, huge files, FIFOs, devices and folders give a text or one
`ScoreError` line naming the file (the command exits 2 with that line, never an
unforeseen error). The scoring itself is fuzzed with the real model in
tests/model/test_fuzz_score.py. Examples per run come from the hypothesis profile
(tests/conftest.py): one property of 100 examples.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.user_files import DEFAULT_LIMIT
from backend.score.text_score import ScoreError
from tests.helpers import SPECIAL_FILE_KINDS, special_file
from tui.cli.text_input import read_text

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def work() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-score-"))


@HEALTH
@given(st.binary(max_size=300))
def test_random_bytes_are_a_text_or_one_line(work: Path, data: bytes) -> None:
    path = work / "text.txt"
    path.write_bytes(data)
    try:
        text = read_text(str(path))
    except ScoreError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)
        assert "not valid UTF-8" in str(error)
        return
    assert text.encode("utf-8") == data


@pytest.mark.parametrize("kind", [*SPECIAL_FILE_KINDS, "huge", "missing", "latin1"])
def test_a_text_that_is_no_regular_utf8_file_is_refused_before_reading(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "text.txt"
    if kind in SPECIAL_FILE_KINDS:
        path = special_file(path, kind)
    elif kind == "huge":
        with path.open("wb") as handle:
            handle.truncate(DEFAULT_LIMIT + 1)  # sparse: no disk used
    elif kind == "latin1":
        path.write_bytes(b"caf\xe9")
    with pytest.raises(ScoreError) as raised:
        read_text(str(path))
    assert "\n" not in str(raised.value) and str(path) in str(raised.value)
