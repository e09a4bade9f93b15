"""Fuzzing the text forms of sampler settings: every flag's value, `--logit-bias`,
`--samplers`, `--grammar-triggers`, DRY's breakers and the phrase bans.

Any text a setting's `parse` is given becomes a value or one `SettingsError` line; a
value the settings accept is written by `format` as text that `parse` reads back to
the same value. A banned phrase list builds or is one `PhraseBanError` line, and a
built one searches any text. Examples per run come from the hypothesis profile
(tests/conftest.py): four properties of 100 examples each.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.session.phrase_bans import PhraseBanError, PhraseBans
from backend.user_regex import PatternError, RegexTimeout, UserRegex
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PIECES = [
    *BUILT_IN_REGISTRY.sampler_names, "top-k", "topk", "nucleus", "temp", "typ", "penalties", "dry",
    ";", ",", "=", "+", "-", "inf", "-inf", "nan", "1e999", "0", "42", "-1", "2.5",
    "18446744073709551616", "'", '"', "[", "]", "{", "}", "(", ")", "\\", "\\,", "\\n",
    " ", "\x00", "\x7f", "\u2028", "true", "off", "none", "é", "\udcff", "1" * 30,
]  # fmt: skip
setting_text = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.text(max_size=16),
    st.lists(st.text(max_size=4), max_size=4).map(lambda texts: repr(texts).replace("'", '"')),
)


def one_line(error: BaseException) -> None:
    assert isinstance(error, SamplescopeError), repr(error)
    assert "\n" not in str(error), str(error)


@HEALTH
@given(st.sampled_from(BUILT_IN_REGISTRY.settings), setting_text)
def test_any_text_is_a_value_or_one_line_and_values_read_back(spec: object, text: str) -> None:
    name = spec.name  # type: ignore[attr-defined]
    setting = BUILT_IN_REGISTRY.settings_by_name[name]
    try:
        value = setting.parse(text)
        chosen = SamplerSettings().with_changes(**{name: value})
    except SettingsError as error:
        one_line(error)
        return
    held = getattr(chosen, name)
    written = setting.format(held)
    assert getattr(SamplerSettings().with_changes(**{name: setting.parse(written)}), name) == held


@HEALTH
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True).map(lambda bias: f"7={bias!r}"),
        min_size=1,
        max_size=3,
    ).map(";".join)
)
def test_a_logit_bias_reads_back_to_the_same_numbers(text: str) -> None:
    spec = BUILT_IN_REGISTRY.settings_by_name["logit_bias"]
    try:
        held = SamplerSettings().with_changes(logit_bias=spec.parse(text)).logit_bias
    except SettingsError as error:
        one_line(error)
        return
    assert spec.parse(spec.format(held)) == held


REGEX_PIECES = [
    "a", "b", "é", ".", "*", "+", "?", "|", "(", ")", "(?:", "(?i)", "[", "]", "^", "$",
    "\\b", "\\", "{2}", "{1,3}", "{99999999999}", "(?P<x>a)", "(?P=x)", "\\1", "\x00",
]  # fmt: skip
regexes = st.lists(st.sampled_from(REGEX_PIECES), min_size=1, max_size=8).map("".join)


@HEALTH
@given(
    st.lists(st.one_of(regexes, st.text(max_size=6)), max_size=3),
    st.booleans(),
    st.booleans(),
    st.text(alphabet="abé \n", max_size=12),
)
def test_phrase_bans_build_or_give_one_line_and_search_any_text(
    phrases: list[str], regex: bool, ignore_case: bool, text: str
) -> None:
    try:
        bans = PhraseBans(tuple(phrases), ignore_case=ignore_case, regex=regex)
    except PhraseBanError as error:
        one_line(error)
        return
    for after in (0, len(text) // 2, len(text)):
        found = bans.find(text, after)
        assert found is None or found.end() > after


DEPTH = 100_000


@pytest.mark.parametrize(
    "text",
    [
        "[" * DEPTH,
        "[" * DEPTH + "]" * DEPTH,
        '["' + "a" * 100 + '"' + "]",
        "(" * DEPTH + ")" * DEPTH,
        "9" * 5000 + "=1",
        "1=1" + "0" * 5000,
        ";" * DEPTH,
        "\\" * DEPTH,
    ],
    ids=["open", "nested", "list", "groups", "long-id", "long-bias", "separators", "escapes"],
)
def test_deep_and_huge_texts_give_a_value_or_one_line(text: str) -> None:
    for spec in BUILT_IN_REGISTRY.settings:
        try:
            SamplerSettings().with_changes(**{spec.name: spec.parse(text)})
        except SettingsError as error:
            one_line(error)


@pytest.mark.parametrize(
    "phrase",
    ["(" * DEPTH + ")" * DEPTH, "a{1,99999999999}", "(?:" * 200 + "a" + ")" * 200, "a" * DEPTH],
    ids=["deep-groups", "huge-repeat", "many-groups", "long"],
)
def test_hostile_banned_regexes_give_one_line(phrase: str) -> None:
    try:
        bans = PhraseBans((phrase,), regex=True)
    except PhraseBanError as error:
        one_line(error)
        return
    raise AssertionError(f"{phrase[:20]!r}… built: {bans!r:.60}")


def test_a_zero_width_banned_regex_is_searched_to_the_end_and_no_further() -> None:
    bans = PhraseBans(("\\b",), regex=True)
    assert [bans.find("ab", after) is not None for after in (0, 1, 2)] == [True, True, False]


@HEALTH
@given(st.one_of(regexes, st.text(max_size=10)), st.booleans(), st.text(alphabet="abé", max_size=8))
def test_any_trigger_or_ban_pattern_compiles_or_is_refused_and_searches_any_text(
    pattern: str, as_bytes: bool, text: str
) -> None:
    """The engine trigger patterns and bans run on: a pattern compiles (as text or as
    the UTF-8 bytes a trigger watch matches) or raises `PatternError`, and a search ends
    in a match, None or `RegexTimeout`."""
    given_pattern: str | bytes = pattern.encode("utf-8", "surrogatepass") if as_bytes else pattern
    try:
        compiled = UserRegex(given_pattern, "trigger pattern")
    except PatternError as error:
        one_line(error)
        return
    subject: str | bytes = text.encode("utf-8") if as_bytes else text
    try:
        compiled.search(subject)  # type: ignore[arg-type]
    except RegexTimeout as error:
        one_line(error)
