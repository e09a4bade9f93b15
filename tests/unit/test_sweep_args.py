"""`samplescope sweep`'s arguments: prompts, the grid, the plan."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from backend.session.sweep import SampleKey, SweepPlan, SweepSetting, batches
from backend.session.sweep_result import temperature_place
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from tui.cli.commands.sweep import cancel_on_interrupt
from tui.cli.commands.sweep.args import SweepArgumentError, grid_settings, parse_grid, read_prompts
from tui.cli.main import main


def test_prompts_from_flags_lines_and_jsonl(tmp_path: Path) -> None:
    lines = tmp_path / "prompts.txt"
    lines.write_text('First line.\n\n{"not": "json here"}\n', encoding="utf-8")
    jsonl = tmp_path / "prompts.jsonl"
    jsonl.write_text('"a string"\n\n{"prompt": "an object", "id": 3}\n', encoding="utf-8")
    assert read_prompts(["given"], lines) == ["given", "First line.", '{"not": "json here"}']
    assert read_prompts([], jsonl) == ["a string", "an object"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{bad json\n", "line 1"),
        ('{"text": "no prompt key"}\n', 'a "prompt" string'),
        ("42\n", "line 1: expected a string"),
    ],
)
def test_bad_jsonl_lines_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SweepArgumentError, match=message):
        read_prompts([], path)


def test_no_prompt_missing_file_and_empty_prompt(tmp_path: Path) -> None:
    with pytest.raises(SweepArgumentError, match="no prompt"):
        read_prompts([], None)
    with pytest.raises(SweepArgumentError, match=r"missing\.txt"):
        read_prompts([], tmp_path / "missing.txt")
    with pytest.raises(SweepArgumentError, match="prompt 2 is empty"):
        read_prompts(["one", "  "], None)


def test_grid_is_the_product_times_each_set() -> None:
    settings = grid_settings(["min_p=0.1", "p=0.9"], ["t=0.7,1.5", "k=0,40"], "first")
    assert len(settings) == 8
    first = settings[0].settings
    assert (first.min_p, first.temperature, first.top_k, first.temperature_last) == (
        0.1,
        0.7,
        0,
        False,
    )
    assert [s.label for s in settings[:4]] == [
        "t=0.7 min_p=0.1",
        "t=0.7 k=40 min_p=0.1",
        "t=1.5 min_p=0.1",
        "t=1.5 k=40 min_p=0.1",
    ]
    assert settings[4].settings.top_p == 0.9 and settings[4].settings.min_p == 0.0
    last = grid_settings([], ["temperature=1.0"], "last")
    assert last[0].settings.temperature_last is True
    assert last[0].label == "t=1"


@pytest.mark.parametrize(
    ("grids", "message"),
    [
        (["t"], "expected KEY=V1,V2"),
        (["nope=1,2"], "unknown key 'nope'"),
        (["seed=1,2"], "each sample's own"),
        (["grammar=a,b"], "takes text"),
        (["t=0.5,0.5"], "given twice"),
        (["t=1", "temperature=2"], "a key is given twice"),
    ],
)
def test_bad_grids(grids: list[str], message: str) -> None:
    with pytest.raises(SweepArgumentError, match=message):
        grid_settings([], grids, "first")


def test_bad_values_and_duplicate_settings() -> None:
    with pytest.raises(SettingsError):
        parse_grid("k=a,b")
    with pytest.raises(SweepArgumentError, match="min_p"):
        grid_settings([], ["min_p=0.5,2"], "first")
    with pytest.raises(SweepArgumentError, match="the same"):
        grid_settings(["t=1", "temperature=1.0"], [], "first")


def test_plan_keys_seeds_and_batches() -> None:
    plan = SweepPlan(
        ("p0", "p1"),
        (SweepSetting("a", SamplerSettings()), SweepSetting("b", SamplerSettings(min_p=0.1))),
        samples=3,
        seed=7,
    )
    keys = plan.keys
    assert len(keys) == 12 and keys[0] == SampleKey(0, 0, 0) and keys[-1] == SampleKey(1, 1, 2)
    assert plan.settings_of(SampleKey(1, 1, 2)) == SamplerSettings(min_p=0.1, seed=9)
    runs = batches(keys, 4)
    # A batch never mixes prompts: 6 samples a prompt make batches of 4 and 2.
    assert [len(run) for run in runs] == [4, 2, 4, 2]
    assert all(len({key.prompt for key in run}) == 1 for run in runs)
    assert [key for run in runs for key in run] == list(keys)
    assert [m.content for m in plan.messages(1)] == ["p1"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"prompts": ()}, "no prompt"),
        ({"settings": ()}, "no setting"),
        ({"samples": 0}, "samples=0"),
        ({"max_tokens": 0}, "max_tokens=0"),
        ({"seed": 2**64 - 1, "samples": 2}, "seeds"),
    ],
)
def test_bad_plans(changes: dict[str, object], message: str) -> None:
    values: dict[str, object] = {
        "prompts": ("p",),
        "settings": (SweepSetting("a", SamplerSettings()),),
        "samples": 1,
    }
    values.update(changes)
    with pytest.raises(SamplescopeError, match=message):
        SweepPlan(**values)  # type: ignore[arg-type]


def test_the_first_ctrl_c_cancels_and_the_second_interrupts() -> None:
    before = signal.getsignal(signal.SIGINT)
    with cancel_on_interrupt() as cancel:
        assert not cancel.is_set()
        signal.raise_signal(signal.SIGINT)
        assert cancel.is_set()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_the_temperatures_place_in_the_chain() -> None:
    assert temperature_place(SamplerSettings(min_p=0.1)) == "first"
    assert temperature_place(SamplerSettings(min_p=0.1, temperature_last=True)) == "last"
    assert temperature_place(DEFAULT_CHAT_SETTINGS) == "last"
    between = SamplerSettings(samplers=("top_k", "temperature", "min_p"))
    assert temperature_place(between) == "between"
    assert temperature_place(SamplerSettings(samplers=("top_k", "min_p"))) == "none"
    # The registry says which units may come before or after: the logits' rewrites
    # before, the units placed right after the temperature or last after.
    rewrites_first = SamplerSettings(samplers=("penalties", "dry", "temperature", "top_k"))
    assert temperature_place(rewrites_first) == "first"
    no_filter_after = ("top_k", "temperature", "smoothing", "adaptive_p")
    assert temperature_place(SamplerSettings(samplers=no_filter_after)) == "last"
    a_filter_after = ("top_k", "temperature", "smoothing", "xtc")
    assert temperature_place(SamplerSettings(samplers=a_filter_after)) == "between"


@pytest.mark.parametrize("parallel", ["0", "65"])
def test_parallel_out_of_range(parallel: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--prompt", "p", "--parallel", parallel]) == 2
    assert "invalid --parallel" in capsys.readouterr().err
