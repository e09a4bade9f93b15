"""`samplescope sweep` reads its files by the one user-file rule and bounds its size:
a FIFO, a device or a deeply nested JSON line or result is one line (never a hang, a
MemoryError or a RecursionError), and a grid or a sample count past the stated limits
is refused naming the product, before any model is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.session.sweep import MAX_SAMPLES, MAX_SETTINGS
from tests.helpers import SPECIAL_FILE_KINDS, special_file
from tui.cli.commands.sweep.args import grid_settings
from tui.cli.main import main

NOWHERE = ("--model", "/nowhere/m.gguf", "--no-save")


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()], err
    assert "unexpected" not in err
    return err.strip()


@pytest.mark.parametrize("flag", ["--prompts", "--view"])
@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_a_file_that_is_no_regular_file_is_refused_before_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, kind: str
) -> None:
    path = special_file(tmp_path / "prompts.txt", kind)
    assert main(["sweep", flag, str(path), *NOWHERE]) == 2
    line = one_line(capsys)
    assert f"cannot read {path}: " in line and "not a regular file" in line


@pytest.mark.parametrize("flag", ["--prompts", "--view"])
def test_a_deeply_nested_json_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    assert main(["sweep", flag, str(path), *NOWHERE]) == 2
    assert "nested deeper than 64 levels" in one_line(capsys)


def test_a_prompts_file_larger_than_the_limit_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "prompts.txt"
    with path.open("wb") as handle:
        handle.truncate(64 << 20)  # sparse: no disk used
    assert main(["sweep", "--prompts", str(path), *NOWHERE]) == 2
    assert f"{path} is larger than 16 MiB" in one_line(capsys)


def test_a_grid_past_the_limit_is_refused_naming_the_product(
    capsys: pytest.CaptureFixture[str],
) -> None:
    temperatures = ",".join(f"{0.01 * n:.2f}" for n in range(1, 401))
    top_ks = ",".join(str(n) for n in range(1, 401))
    code = main(
        ["sweep", "--prompt", "p", "--grid", f"t={temperatures}", "--grid", f"k={top_ks}",
         *NOWHERE]
    )  # fmt: skip
    assert code == 2
    assert one_line(capsys) == (
        "samplescope: the grid is 400 × 400 = 160,000 settings; a sweep runs at most"
        f" {MAX_SETTINGS:,}"
    )


def test_each_set_counts_in_the_product(capsys: pytest.CaptureFixture[str]) -> None:
    top_ks = ",".join(str(n) for n in range(1, 5_001))
    code = main(
        ["sweep", "--prompt", "p", "--set", "min_p=0.1", "--set", "min_p=0.2", "--set",
         "min_p=0.3", "--grid", f"k={top_ks}", *NOWHERE]
    )  # fmt: skip
    assert code == 2
    assert "the grid is 3 × 5,000 = 15,000 settings" in one_line(capsys)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--samples", "1000000000"],
            f"invalid --samples 1,000,000,000: expected 1 to {MAX_SAMPLES:,}",
        ),
        (
            ["--grid", "k=" + ",".join(str(n) for n in range(1, 101)), "--samples", "2000"],
            "the sweep is 1 prompts × 100 settings × 2,000 samples = 200,000 samples",
        ),
    ],
)
def test_samples_past_the_limit_are_refused_naming_the_product(
    capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["sweep", "--prompt", "p", *args, *NOWHERE]) == 2
    assert words in one_line(capsys)


def test_a_grid_of_thousands_of_settings_is_built_and_its_duplicates_found() -> None:
    temperatures = ",".join(f"{0.02 * n:.2f}" for n in range(1, 51))
    top_ks = ",".join(str(n) for n in range(1, 51))
    settings = grid_settings([], [f"t={temperatures}", f"k={top_ks}"], "first")
    assert len(settings) == 2_500
    assert len({s.settings for s in settings}) == 2_500
    with pytest.raises(Exception, match="two settings are the same"):
        grid_settings(["min_p=0.1", "min_p=0.10"], [f"k={top_ks}"], "first")


def test_the_sweeps_shape_counts_each_word_singular_or_plural() -> None:
    from backend.session.sweep import SweepPlan, SweepSetting
    from sampling.settings.record import SamplerSettings

    one = SweepSetting("t=1", SamplerSettings(temperature=1.0))
    two = SweepSetting("t=2", SamplerSettings(temperature=2.0))
    assert SweepPlan(("a",), (one,), 1).shape == "1 prompt × 1 setting × 1 sample"
    assert SweepPlan(("a", "b"), (one, two), 3).shape == "2 prompts × 2 settings × 3 samples"
