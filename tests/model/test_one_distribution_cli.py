"""`samplescope explore` and `generate --beams` with guidance or contrast on: one line
saying why not and how to switch it off, exit 2, instead of a tree or beams ranked by
the model's distribution alone (the real default model)."""

from __future__ import annotations

import pytest

from tui.cli.main import main

GUIDED = ["--guidance-scale", "2", "--negative-prompt", "Be rude."]
CONTRASTED = ["--contrast-beta", "0.5"]
JOBS = {
    "explore": ["explore", "--prompt", "Say hi", "--depth", "2", "--width", "2"],
    "beam search": ["generate", "Say hi", "--beams", "2", "-t", "1", "--max-tokens", "4"],
}


@pytest.mark.parametrize("job", list(JOBS))
@pytest.mark.parametrize(
    ("flags", "needs"),
    [
        (GUIDED, "guidance_scale 2 needs a negative prompt beside each (1 is off)"),
        (CONTRASTED, "contrast_beta 0.5 needs a smaller model beside each (0 is off)"),
    ],
    ids=["guidance", "contrast"],
)
def test_a_second_distribution_is_refused_in_one_line(
    job: str, flags: list[str], needs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*JOBS[job], *flags, "--threads", "1"]) == 2
    captured = capsys.readouterr()
    line = f"samplescope: {job} decodes one distribution per sequence, and {needs}"
    assert captured.err.splitlines() == [line]
    assert not captured.out
