"""A beam search and an explored tree decode one distribution per sequence: settings
that need a second one beside each (guidance's negative prompt, contrast's smaller
model) are refused in one line before anything is decoded, instead of being ignored
(both ran the model's distribution alone under settings saying otherwise)."""

from __future__ import annotations

import pytest

from backend.chat.protocol import ChatMessage
from backend.session.beam_result import BeamSearchError
from backend.session.beams import check_beam_search
from backend.session.explore import explore
from backend.session.explore_tree import ExploreError, TreeShape
from backend.session.one_distribution import second_distribution
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend

GUIDED = DEFAULT_CHAT_SETTINGS.with_changes(guidance_scale=2.0, negative_prompt="no")
CONTRASTED = DEFAULT_CHAT_SETTINGS.with_changes(contrast_beta=0.5)
NEEDS = {
    "guidance": "guidance_scale 2 needs a negative prompt beside each (1 is off)",
    "contrast": "contrast_beta 0.5 needs a smaller model beside each (0 is off)",
}
CASES = [(GUIDED, NEEDS["guidance"]), (CONTRASTED, NEEDS["contrast"])]


def test_only_guidance_and_contrast_switched_on_need_a_second_distribution() -> None:
    assert second_distribution(DEFAULT_CHAT_SETTINGS) is None
    assert second_distribution(DEFAULT_CHAT_SETTINGS.with_changes(guidance_scale=1.0)) is None
    assert second_distribution(DEFAULT_CHAT_SETTINGS.with_changes(negative_prompt="x")) is None
    assert second_distribution(DEFAULT_CHAT_SETTINGS.with_changes(contrast_alpha=0.5)) is None
    assert second_distribution(GUIDED) == NEEDS["guidance"]
    assert second_distribution(CONTRASTED) == NEEDS["contrast"]


@pytest.mark.parametrize(("settings", "needs"), CASES, ids=["guidance", "contrast"])
def test_a_beam_search_refuses_a_second_distribution(settings: SamplerSettings, needs: str) -> None:
    with pytest.raises(BeamSearchError) as raised:
        check_beam_search(FakeBackend().model, settings, 2, 8)
    assert str(raised.value) == f"beam search decodes one distribution per sequence, and {needs}"


@pytest.mark.parametrize(("settings", "needs"), CASES, ids=["guidance", "contrast"])
def test_explore_refuses_a_second_distribution_before_decoding(
    settings: SamplerSettings, needs: str
) -> None:
    backend = FakeBackend()
    with pytest.raises(ExploreError) as raised:
        explore(backend, [ChatMessage("user", "the cat")], (), settings, TreeShape(2, 2, 1.0))
    assert str(raised.value) == f"explore decodes one distribution per sequence, and {needs}"
    assert backend.context_used == 0  # nothing was decoded
