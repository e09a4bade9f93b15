"""Phrases wrapped only between each other (tui.widgets.phrases): a figure and its label
never part, whatever the width."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from tui.widgets.phrases import SEPARATOR, Phrases

SUMMARY = [
    "test model-Q4_0.gguf",
    "base model-Q4_1.gguf",
    "37 scored (every position)",
    "mean KLD 0.5853",
    "PPL test 47.05",
    "PPL base 48.73",
]


def drawn(phrases: Phrases, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(phrases)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_lines_break_between_phrases_only() -> None:
    lines = drawn(Phrases(SUMMARY), 40)
    assert lines == [
        "test model-Q4_0.gguf",
        "base model-Q4_1.gguf",
        "37 scored (every position)",
        "mean KLD 0.5853 · PPL test 47.05",
        "PPL base 48.73",
    ]
    assert drawn(Phrases(SUMMARY), 400) == [SEPARATOR.join(SUMMARY)]
    assert Phrases(SUMMARY).plain == SEPARATOR.join(SUMMARY)


@given(
    st.lists(st.text(st.sampled_from("ab1.%"), min_size=1, max_size=5), min_size=1, max_size=8),
    st.integers(12, 80),
)
def test_every_phrase_stays_whole(phrases: list[str], width: int) -> None:
    spaced = [f"{p} {p}" for p in phrases]  # a space inside each phrase, none wider than 11
    lines = drawn(Phrases(spaced), width)
    assert [part for line in lines for part in line.split(SEPARATOR)] == spaced
    assert all(len(line) <= width for line in lines)
