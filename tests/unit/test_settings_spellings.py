"""The Python API takes the natural spellings of the logit bias and the chain's order."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.text import format_bias

INF = float("-inf")
SORTED = ((17, INF), (42, 2.0))


@pytest.mark.parametrize(
    "spelling",
    [
        {42: 2.0, 17: INF},
        {17: INF, 42: 2},
        "42=+2;17=-inf",
        "17=-inf,42=2",
        ((42, 2.0), (17, INF)),
        [(42, 2), (17, INF)],
        [[17, INF], [42, 2.0]],
        SORTED,
    ],
)
def test_a_logit_bias_in_any_spelling_is_held_in_id_order(spelling: object) -> None:
    settings = SamplerSettings(logit_bias=spelling)  # type: ignore[arg-type]
    assert settings.logit_bias == SORTED
    assert all(isinstance(bias, float) for _, bias in settings.logit_bias)
    assert settings == SamplerSettings(logit_bias=SORTED)
    assert hash(settings) == hash(SamplerSettings(logit_bias=SORTED))
    assert DEFAULT_CHAT_SETTINGS.with_changes(logit_bias=spelling).logit_bias == SORTED


@pytest.mark.parametrize(
    "spelling", [((42, 1.0), (17, 0.5), (42, 2.0)), [[42, 1.0], [42, 1.0]], "42=1;17=2;42=-inf"]
)
def test_a_token_given_twice_is_an_error_naming_it(spelling: object) -> None:
    with pytest.raises(SettingsError, match="token 42 is given twice") as caught:
        SamplerSettings(logit_bias=spelling)  # type: ignore[arg-type]
    assert caught.value.field == "logit_bias"
    assert "a {42: 2.0} dict" in str(caught.value)  # what is accepted


@pytest.mark.parametrize(
    ("spelling", "words"),
    [
        ({42: math.inf}, "bias finite or -inf"),
        ({-3: 1.0}, "ids at least 0"),
        ({"hello": 1.0}, "'42=+2;17=-inf'"),
        ("42=lots", "'lots' in '42=lots' is not a number"),
        ("hello=-inf", "token text"),
        (42, "(id, bias) pairs in any order"),
    ],
)
def test_a_bad_logit_bias_says_what_is_accepted(spelling: object, words: str) -> None:
    with pytest.raises(SettingsError) as caught:
        SamplerSettings(logit_bias=spelling)  # type: ignore[arg-type]
    assert caught.value.field == "logit_bias"
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "spelling",
    ["top_k;temperature", "top-k, temp", " Top_K ; TEMPERATURE ", ["top_k", "temperature"]],
)
def test_an_order_as_text_or_a_list(spelling: object) -> None:
    settings = SamplerSettings(samplers=spelling)  # type: ignore[arg-type]
    assert settings.samplers == ("top_k", "temperature") == settings.order


@pytest.mark.parametrize(
    ("spelling", "words"),
    [
        ("top_k;nope", "'nope' is not a sampler"),
        ("top_k;top_k", "'top_k' comes twice"),
        ("top_k;penalties", "'penalties' before every sampler that reads the order"),
        (["top_k", "nope"], "sampler names as 'top_k;temperature'"),
    ],
)
def test_a_bad_order_says_what_is_accepted(spelling: object, words: str) -> None:
    with pytest.raises(SettingsError) as caught:
        SamplerSettings(samplers=spelling)  # type: ignore[arg-type]
    assert caught.value.field == "samplers"
    assert words in str(caught.value)
    assert "sampler names as 'top_k;temperature'" in str(caught.value)


biases = st.one_of(
    st.just(INF),
    st.floats(min_value=-100, max_value=100, allow_nan=False).map(lambda b: round(b, 3)),
    st.integers(min_value=-100, max_value=100),
)


@given(st.dictionaries(st.integers(0, 50_000), biases, max_size=12), st.randoms())
def test_every_spelling_of_a_bias_gives_the_same_settings(
    table: dict[int, float], random: object
) -> None:
    pairs = list(table.items())
    random.shuffle(pairs)  # type: ignore[attr-defined]
    expected = tuple(sorted((token, float(bias)) for token, bias in table.items()))
    from_pairs = SamplerSettings(logit_bias=tuple(pairs))
    assert from_pairs.logit_bias == expected
    assert [token for token, _ in expected] == sorted(table)
    assert SamplerSettings(logit_bias=table) == from_pairs  # type: ignore[arg-type]
    assert SamplerSettings(logit_bias=[list(p) for p in pairs]) == from_pairs  # type: ignore[arg-type]
    text = ";".join(f"{token}={bias}" for token, bias in pairs)
    assert SamplerSettings(logit_bias=text) == from_pairs  # type: ignore[arg-type]
    assert SamplerSettings(logit_bias=format_bias(expected)).logit_bias == expected  # type: ignore[arg-type]


@given(
    st.lists(st.integers(0, 1000), min_size=1, max_size=8, unique=True),
    st.data(),
)
def test_any_repeated_id_is_named(tokens: list[int], data: st.DataObject) -> None:
    twice = data.draw(st.sampled_from(tokens))
    pairs = [(token, 1.0) for token in tokens] + [(twice, -1.0)]
    pairs = data.draw(st.permutations(pairs))
    with pytest.raises(SettingsError, match=f"token {twice} is given twice"):
        SamplerSettings(logit_bias=tuple(pairs))


orders = st.tuples(
    st.lists(st.sampled_from(BUILT_IN_REGISTRY.logits_samplers), unique=True),
    st.lists(
        st.sampled_from(
            [
                n
                for n in BUILT_IN_REGISTRY.sampler_names
                if n not in BUILT_IN_REGISTRY.logits_samplers
            ]
        ),
        unique=True,
    ),
).map(lambda parts: (*parts[0], *parts[1]))


@given(orders, st.sampled_from([";", ",", " ; "]))
def test_every_spelling_of_an_order_gives_the_same_settings(
    order: tuple[str, ...], separator: str
) -> None:
    settings = SamplerSettings(samplers=order)
    assert settings.samplers == order
    assert SamplerSettings(samplers=separator.join(order)) == settings  # type: ignore[arg-type]
    assert SamplerSettings(samplers=list(order)) == settings  # type: ignore[arg-type]
