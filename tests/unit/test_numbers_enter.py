"""Numbers are checked where they enter: an infinite seed or token id in a preset, a
NaN length penalty, non-text sampler names are one error naming the field and value."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from backend.config.preset_files import read_preset_file
from backend.config.preset_interchange import PresetFormatError
from backend.session.beam_result import BeamSearchError
from backend.session.beams import check_beam_search
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tui.cli.main import main


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("st.json", '{"temp": 0.7, "seed": 1e999}', "seed=inf: expected a finite number"),
        ("st.json", '{"temp": 0.7, "top_p": NaN}', "top_p=nan: expected a finite number"),
        ("kcpp.json", '{"rep_pen": 1.1, "sampler_seed": -Infinity}', "sampler_seed=-inf"),
        ("tg.yaml", "temperature: 0.7\nseed: .inf\n", "seed=inf: expected a finite number"),
        (
            "body.json",
            '{"repeat_penalty": 1.1, "logit_bias": [[1e999, 2]]}',
            "logit_bias[0][0]=inf",
        ),
        ("body.json", '{"repeat_penalty": 1.1, "samplers": [1, 2]}', "a sampler name is text"),
        ("body.json", '{"repeat_penalty": 1.1, "samplers": "top_k"}', "a list of sampler names"),
    ],
)
def test_a_preset_holding_a_bad_number_is_refused_naming_the_field(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PresetFormatError, match=str(path)) as caught:
        read_preset_file(path)
    assert words in str(caught.value)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "x"])
def test_a_length_penalty_must_be_a_finite_number(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["generate", "hi", "--beams", "2", f"--length-penalty={value}"])
    assert "--length-penalty: expected a" in capsys.readouterr().err
    with pytest.raises(BeamSearchError, match="invalid length_penalty"):
        check_beam_search(FakeBackend().model, DEFAULT_CHAT_SETTINGS, 2, 8, math.nan)
