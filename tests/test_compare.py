"""Compare: columns under several settings, presets, first divergence."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.compare import ColumnEvent, compare, first_divergence
from backend.events import FinishedEvent, TokenEvent
from backend.llama_backend import LlamaBackend
from backend.presets import PresetError, load_presets
from backend.protocol import ChatMessage, LiveSettings
from sampling.settings import SamplerSettings

QUESTION = [ChatMessage("user", "Write one sentence about cats.")]


def test_first_divergence() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence([], []) is None
    assert first_divergence([], [4]) == 0


def test_the_shipped_presets_include_seed_000s_five_modes() -> None:
    presets = load_presets()
    assert presets["ArgMax"].greedy
    assert presets["All t=0.8"] == SamplerSettings(temperature=0.8)
    assert presets["All t=1.5"] == SamplerSettings(temperature=1.5)
    assert presets["TopK k=40 t=0.8"] == SamplerSettings(temperature=0.8, top_k=40)
    assert presets["TopP p=0.9 t=0.8"] == SamplerSettings(temperature=0.8, top_p=0.9)
    defaults = presets["llama.cpp defaults"]
    assert (defaults.temperature, defaults.top_k, defaults.top_p, defaults.min_p) == (
        0.8,
        40,
        0.95,
        0.05,
    )
    assert defaults.repeat_last_n == 64
    assert len(presets) >= 8


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('["x"]\ntemprature = 1.0\n', "preset 'x': invalid temprature"),
        ('["hot"]\ntemperature = -1.0\n', "preset 'hot': invalid temperature=-1.0"),
        ('["k"]\ntop_k = "many"\n', "preset 'k': invalid top_k='many'"),
        ("not toml = = 1", "not valid TOML"),
        ("name = 3\n", "preset 'name' must be a table"),
        ("", "holds no presets"),
    ],
)
def test_a_bad_presets_file_names_the_preset_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "presets.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PresetError) as error:
        load_presets(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_a_missing_presets_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PresetError, match="cannot read the presets file"):
        load_presets(tmp_path / "nope.toml")


def test_compare_generates_each_column_like_generate_would(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    settings = [
        SamplerSettings(temperature=0.0),
        SamplerSettings(temperature=1.5, seed=5),
        SamplerSettings(temperature=0.8, top_k=40, seed=5),
    ]
    events = list(compare(llama_backend, QUESTION, settings, max_tokens=10))
    assert all(isinstance(e, ColumnEvent) for e in events)
    assert [e.column for e in events] == sorted(e.column for e in events)
    finished = [e for e in events if isinstance(e.event, FinishedEvent)]
    assert [f.column for f in finished] == [0, 1, 2]
    for column in range(3):
        tokens = [
            e.event.step.token_id
            for e in events
            if e.column == column and isinstance(e.event, TokenEvent)
        ]
        final = finished[column].event
        assert isinstance(final, FinishedEvent)
        assert tuple(tokens) == final.token_ids
        # Later columns reuse the cached prompt.
        if column > 0:
            assert final.stats.prefilled_tokens == 1
        # The same settings through generate give the same reply.
        alone = list(
            llama_backend.generate(QUESTION, LiveSettings(settings[column]), max_tokens=10)
        )[-1]
        assert isinstance(alone, FinishedEvent)
        assert alone.token_ids == final.token_ids
    # A greedy column and a hot column of a 10-token reply diverge somewhere.
    a = finished[0].event
    b = finished[1].event
    assert isinstance(a, FinishedEvent) and isinstance(b, FinishedEvent)
    assert first_divergence(a.token_ids, b.token_ids) is not None


def test_cancel_stops_the_comparison(llama_backend: LlamaBackend) -> None:
    import threading

    cancel = threading.Event()
    seen = []
    for event in compare(
        llama_backend,
        QUESTION,
        [SamplerSettings(temperature=0.0)] * 3,
        max_tokens=10,
        cancel=cancel,
    ):
        seen.append(event)
        if isinstance(event.event, TokenEvent):
            cancel.set()
    finished = [e for e in seen if isinstance(e.event, FinishedEvent)]
    assert len(finished) == 1 and finished[0].column == 0
    assert isinstance(finished[0].event, FinishedEvent) and finished[0].event.reason == "cancelled"
