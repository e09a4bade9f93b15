"""Guidance (classifier-free guidance with a negative prompt): the unit and its sequence.

The unit combines the step's logits with a second distribution's; the loop decodes
the negative prompt beside the reply (the fake model here; the exactness against
separate single-sequence runs is tests/model/test_guidance.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from backend.chat.events import FinishedEvent, GenerationEvent, NoticeEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.store.steps import layout_of, pack_reports, pack_step, unpack_step
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.errors import LogitsError, SettingsError
from sampling.sampler import Sampler, probabilities
from sampling.samplers.guidance import Guidance
from sampling.samplers.guidance_report import (
    guided_logits,
    log_softmax,
    report_json,
    token_figures,
)
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tui.cli.verbose import step_line

QUESTION = [ChatMessage("user", "tell me about the cat")]
RNG = np.random.default_rng(5)
COND = RNG.normal(0.0, 3.0, 200).astype(np.float32)
UNCOND = RNG.normal(0.0, 3.0, 200).astype(np.float32)
GUIDED = DEFAULT_CHAT_SETTINGS.with_changes(
    seed=3, guidance_scale=2.0, negative_prompt="tell me about the dog"
)


def reference(cond: np.ndarray, uncond: np.ndarray, scale: float) -> np.ndarray:
    def lsm(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        return x - (x.max() + np.log(np.exp(x - x.max()).sum()))

    return scale * (lsm(cond) - lsm(uncond)) + lsm(uncond)


@pytest.mark.parametrize("scale", [0.0, 0.5, 1.5, 3.0, -1.0])
def test_the_guided_distribution_is_the_formula(scale: float) -> None:
    settings = SamplerSettings(guidance_scale=scale)
    probs = probabilities(COND, settings, second=UNCOND)
    expected = np.exp(log_softmax(reference(COND, UNCOND, scale)))
    np.testing.assert_allclose(probs, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        guided_logits(COND, UNCOND, scale), reference(COND, UNCOND, scale), rtol=1e-12
    )


def test_scale_zero_is_the_negative_alone_and_one_is_off() -> None:
    zero = probabilities(COND, SamplerSettings(guidance_scale=0.0), second=UNCOND)
    alone = probabilities(UNCOND, SamplerSettings())
    np.testing.assert_allclose(zero, alone, rtol=1e-6, atol=1e-12)
    one = SamplerSettings(guidance_scale=1.0, negative_prompt="x")
    assert not Guidance.is_on(one) and Guidance.from_settings(one) is None
    np.testing.assert_array_equal(
        probabilities(COND, one, second=UNCOND), probabilities(COND, SamplerSettings())
    )


def test_it_runs_first_before_the_logit_bias_so_a_ban_holds_at_any_scale() -> None:
    banned = int(np.argmax(UNCOND))
    settings = SamplerSettings(guidance_scale=0.0, logit_bias=((banned, -math.inf),))
    probs = probabilities(COND, settings, second=UNCOND)
    assert probs[banned] == 0.0
    names = [unit.name for unit in BUILT_IN_REGISTRY.units]
    assert names.index("guidance") < names.index("logit_bias")
    assert Guidance.placement.kind == "first"


def test_each_step_reports_both_distributions_and_what_changed() -> None:
    sampler = Sampler(SamplerSettings(temperature=0.0, guidance_scale=3.0))
    step = sampler.sample(COND, second=UNCOND)
    report = step.reports.get("guidance")
    assert report is not None and report["scale"] == 3.0
    assert token_figures(report, "cond")[0][0] == int(np.argmax(COND))
    assert token_figures(report, "uncond")[0][0] == int(np.argmax(UNCOND))
    assert token_figures(report, "guided")[0][0] == step.token_id
    assert all(change > 0 for _, change in token_figures(report, "raised"))
    assert all(change < 0 for _, change in token_figures(report, "lowered"))
    divergence = report["divergence"]
    assert isinstance(divergence, float) and divergence > 0
    payload = report_json(report)
    assert payload["scale"] == 3.0 and len(payload["cond"]) == 8  # type: ignore[arg-type]
    assert Guidance.describe(report, step.settings).startswith("guidance ×3 · KL ")


def test_a_stored_guided_step_reads_back_its_report_equal() -> None:
    sampler = Sampler(SamplerSettings(seed=2, guidance_scale=1.5))
    step = sampler.sample(COND, second=UNCOND)
    layout = layout_of(step)
    again = unpack_step(*pack_step(step, layout), layout, step.settings, pack_reports(step))
    assert again == step and again.reports == step.reports
    assert isinstance(again.reports["guidance"]["cond"], tuple)
    assert " guidance.cond=" in step_line(0, again, "x")


def test_without_a_second_distribution_nothing_changes() -> None:
    sampler = Sampler(SamplerSettings(temperature=0.0, guidance_scale=3.0))
    step = sampler.sample(COND)
    assert "guidance" not in step.reports and step.token_id == int(np.argmax(COND))


def test_a_second_distribution_of_another_length_is_one_line() -> None:
    sampler = Sampler(SamplerSettings(guidance_scale=3.0))
    with pytest.raises(LogitsError, match="negative prompt's logits have 10 values"):
        sampler.sample(COND, second=UNCOND[:10])


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_scale_that_is_not_finite_is_refused(value: float) -> None:
    with pytest.raises(SettingsError, match="guidance_scale"):
        SamplerSettings(guidance_scale=value)


def test_the_settings_are_in_the_registry_with_their_flags() -> None:
    specs = BUILT_IN_REGISTRY.settings_by_name
    assert specs["guidance_scale"].flag == "--guidance-scale"
    assert specs["negative_prompt"].flag == "--negative-prompt"
    assert specs["negative_system"].flag == "--negative-system"
    settings = SamplerSettings.from_dict(GUIDED.to_dict())
    assert settings == GUIDED


def test_a_guided_reply_decodes_its_negative_prompt_beside_it() -> None:
    backend = FakeBackend()
    settings = GUIDED.with_changes(negative_prompt="a dog")
    events = list(backend.generate(QUESTION, LiveSettings(settings), max_tokens=20, raw=True))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.error is None
    steps = [e.step for e in events if isinstance(e, TokenEvent)]
    assert all("guidance" in step.reports for step in steps)
    # The fake model's logits follow a sequence's last few tokens: the two
    # distributions differ while the prompts' ends do.
    first = steps[0].reports["guidance"]
    assert isinstance(first["divergence"], float) and first["divergence"] > 0
    assert token_figures(first, "cond") != token_figures(first, "uncond")
    # The negative sequence is gone once the reply ends.
    memory = backend.session.memory
    assert memory.cells_used == len(memory.tokens())


def test_a_rewound_guided_reply_ends_as_it_would_have() -> None:
    straight = list(FakeBackend().generate(QUESTION, LiveSettings(GUIDED), max_tokens=30))[-1]
    assert isinstance(straight, FinishedEvent)
    generation = FakeBackend().generate_many(
        QUESTION, [LiveSettings(GUIDED)], max_tokens=30, rewindable=True
    )
    events: list[GenerationEvent] = []
    rewound = False
    for _, event in generation:
        events.append(event)
        if isinstance(event, TokenEvent) and event.index == 12 and not rewound:
            generation.rewind(0, 5)
            rewound = True
    again = events[-1]
    assert rewound and isinstance(again, FinishedEvent)
    assert again.token_ids == straight.token_ids


def test_guidance_switched_on_mid_reply_says_it_waits_for_the_next() -> None:
    live = LiveSettings(DEFAULT_CHAT_SETTINGS.with_changes(seed=3))
    notices: list[str] = []
    for event in FakeBackend().generate(QUESTION, live, max_tokens=8):
        if isinstance(event, TokenEvent) and event.index == 2:
            live.current = GUIDED
        elif isinstance(event, NoticeEvent):
            notices.append(event.message)
    assert notices == [
        "guidance applies from the next reply: this one started without a negative prompt beside it"
    ]


def test_a_compare_columns_header_names_its_guidance_and_contrast() -> None:
    from tui.compare.columns import settings_summary

    guided = SamplerSettings(guidance_scale=3.0, negative_prompt="about a dog")
    assert "cfg=3 negative" in settings_summary(guided)
    contrasted = SamplerSettings(contrast_beta=0.5)
    assert "beta=0.5 alpha=0.1" in settings_summary(contrasted)
    assert "cfg" not in settings_summary(SamplerSettings(negative_prompt="unused"))
