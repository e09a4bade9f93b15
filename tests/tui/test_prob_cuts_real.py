"""The cut layout on real records from the sampler (the fake model's logits)."""

from __future__ import annotations

import math

from sampling import Sampler
from sampling.records import Step
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FAKE_VOCAB, context_logits
from tui.widgets.prob_cuts import CutItem, Item, layout_rows


def _layout(settings: SamplerSettings) -> tuple[list[Item], Step]:
    logits = context_logits([1, 3, 5])
    step = Sampler(settings, vocab_size=len(FAKE_VOCAB)).sample(logits, history=[1, 3, 5])
    rows = step.candidates[:20]
    items = layout_rows(
        [c.kept for c in rows], [c.removed_by for c in rows], step.cut_by, step.n_kept
    )
    return items, step


def test_xtc_on_a_real_record_is_drawn_at_the_head() -> None:
    items, _ = _layout(SamplerSettings(xtc_probability=1.0, xtc_threshold=0.05))
    lines = [item.text for item in items if isinstance(item, CutItem)]
    assert any("xtc ↑ removed the top" in line for line in lines)
    first_line = next(i for i, item in enumerate(items) if isinstance(item, CutItem))
    assert first_line > 0  # the removed head rows come first, the line under them


def test_a_ban_on_a_real_record_is_listed_even_when_its_row_is_not_shown() -> None:
    logits = context_logits([1, 3, 5])
    top = int(logits.argmax())
    settings = SamplerSettings(logit_bias=((top, -math.inf),))
    step = Sampler(settings, vocab_size=len(FAKE_VOCAB)).sample(logits, history=[1, 3, 5])
    assert step.token_id != top
    shown = {c.token_id: c for c in step.candidates}
    if top in shown:
        assert shown[top].removed_by == "logit_bias"
    bans = [token for token, bias in step.settings.logit_bias if bias == -math.inf]
    assert bans == [top]  # the panel's ban line lists it
