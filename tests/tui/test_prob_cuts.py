"""Where the probability panel puts its cut lines and which rows name their sampler."""

from __future__ import annotations

from sampling.built_in import BUILT_IN_UNITS
from tui.widgets.prob_cuts import CutItem, Item, RowItem, layout_rows, row_label


def _shown(items: list[Item]) -> list[str]:
    """Each item as a short string: "0" a row, "3:xtc" a row naming its sampler, "-- x" a line."""
    out = []
    for item in items:
        if isinstance(item, CutItem):
            out.append(f"-- {item.text}")
        elif isinstance(item, RowItem):
            out.append(f"{item.index}:{item.removed_by}" if item.removed_by else str(item.index))
    return out


def test_a_tail_cut_is_one_line_under_the_last_row_kept() -> None:
    items = layout_rows([True, True, False, False], ["", "", "top_p", "top_p"], "top_p", 2)
    assert _shown(items) == ["0", "1", "-- ✂ top-p · 2 kept", "2", "3"]


def test_two_tail_cuts_name_the_earlier_sampler_on_its_rows() -> None:
    items = layout_rows([True, False, False], ["", "top_p", "top_k"], "top_p", 1)
    assert _shown(items) == ["0", "-- ✂ top-p · 1 kept", "1", "2:top_k"]


def test_xtc_removes_the_head_with_a_line_pointing_up() -> None:
    kept = [False, False, True, True, False]
    removed = ["xtc", "xtc", "", "", "min_p"]
    items = layout_rows(kept, removed, "xtc", 2)
    assert _shown(items) == [
        "0",
        "1",
        "-- ✂ xtc ↑ removed the top · 2 kept",
        "2",
        "3",
        "-- ✂ min-p · 2 kept",
        "4",
    ]


def test_a_set_that_is_not_a_run_of_rows_names_the_sampler_on_each_removed_row() -> None:
    kept = [False, True, False, True]
    removed = ["typ_p", "", "typ_p", ""]
    items = layout_rows(kept, removed, "typ_p", 2)
    assert _shown(items) == ["-- ✂ typical · 2 kept, not the top 2", "0:typ_p", "1", "2:typ_p", "3"]


def test_a_ban_is_on_its_row_and_does_not_move_the_cut() -> None:
    kept = [True, False, True, False]
    removed = ["", "logit_bias", "", "top_k"]
    items = layout_rows(kept, removed, "top_k", 2)
    assert _shown(items) == ["0", "1:logit_bias", "2", "-- ✂ top-k · 2 kept", "3"]


def test_a_min_tokens_ban_is_on_its_row_like_a_logit_bias_ban() -> None:
    kept = [False, True, True, False]
    removed = ["min_tokens", "", "", "min_p"]
    items = layout_rows(kept, removed, "min_p", 2)
    assert _shown(items) == ["0:min_tokens", "1", "2", "-- ✂ min-p · 2 kept", "3"]
    alone = layout_rows([False, True], ["min_tokens", ""], "min_tokens", 9)
    assert _shown(alone) == ["0:min_tokens", "1", "-- no cut · 9 kept"]


def test_nothing_cut_and_everything_shown_kept() -> None:
    assert _shown(layout_rows([True, True], ["", ""], "none", 2)) == [
        "0",
        "1",
        "-- no cut · 2 kept",
    ]
    below = layout_rows([True, True], ["", ""], "min_p", 30)
    assert _shown(below) == ["0", "1", "-- ✂ min-p below · 30 kept"]


def test_row_labels_fit_the_number_column() -> None:
    for name in (*(unit.name for unit in BUILT_IN_UNITS), "x_y_z_w"):
        assert len(row_label(name)) <= 6
    assert row_label("logit_bias") == "ban"
