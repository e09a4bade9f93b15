"""The sampler's settings: one frozen, validated record.

Each field is a setting some unit of the registry declares (`sampling.registry`),
typed here for the type checker; the registry checks at import that the fields equal
the declared settings, name for name and default for default (`check_fields`). The
field order is the order the registry's `settings` list them in, which the flags,
the summary and the forms follow.

The record does not import the registry: the registry lists the units, and each
unit reads the record (`from_settings`). What the record needs of the registry in
use (its settings, the units' placements and on-rules, the default order) it reads
through a `Catalogue` handed to it once (`connect`, which `sampling.settings` calls);
import `sampling.settings` (or `sampling`) before building a record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sampling.errors import SettingsError
from sampling.placement import Placement, placed_order, temperature_moved_last
from sampling.setting_spec import GREEDY_TEMPERATURE, SettingSpec, SettingValue

DrawMethod = Literal["inverse_cdf", "gumbel"]
RngName = Literal["pcg64", "xorshift128"]
TopPScope = Literal["kept", "vocab"]
"""Where top-p measures its mass: "kept" after the cuts before it, "vocab" against the
whole vocabulary (candle's TopKThenTopP)."""


class Catalogue(Protocol):
    """What the record reads of the registry in use (`sampling.registry.Registry`)."""

    @property
    def settings(self) -> tuple[SettingSpec, ...]:
        """Every setting: the record's fields', then the plugins'."""
        ...

    @property
    def settings_by_name(self) -> Mapping[str, SettingSpec]:
        """Every setting by its name."""
        ...

    @property
    def plugin_settings(self) -> Mapping[str, SettingSpec]:
        """The plugins' settings by name."""
        ...

    @property
    def placements(self) -> Mapping[str, Placement]:
        """Each unit's placement by its name."""
        ...

    @property
    def default_order(self) -> tuple[str, ...]:
        """The order `SamplerSettings()` holds."""
        ...

    def is_on(self, name: str, settings: SamplerSettings) -> bool:
        """The on-rule of the unit `name` (`SamplerUnit.is_on`)."""
        ...


_CONNECTED: list[Callable[[], Catalogue]] = []


def _catalogue() -> Catalogue:
    """The registry in use.

    Raises:
        RuntimeError: Nothing connected it (import `sampling.settings` first).
    """
    if not _CONNECTED:
        raise RuntimeError("the settings record is not connected: import sampling.settings")
    return _CONNECTED[0]()


def _default_order() -> tuple[str, ...]:
    """The order `SamplerSettings()` holds (the registry's: the temperature first)."""
    return _catalogue().default_order


@dataclass(frozen=True, slots=True)
class SamplerSettings:
    """Every knob of the sampler, validated on construction against its declared spec.

    The defaults are the "off" values: `SamplerSettings()` samples the model's own
    distribution at temperature 1. The app's starting point (llama.cpp's defaults) is
    `DEFAULT_CHAT_SETTINGS`.

    Attributes:
        temperature: Divides the logits; below 1e-6 (0 included) means greedy argmax.
        top_k: Keep the k most probable tokens; 0 turns it off.
        top_p: Keep the shortest most-probable prefix whose mass reaches p; 1.0 is off.
        top_p_scope: "kept" measures p after top-k renormalises; "vocab" against the
            whole-vocabulary mass (candle's TopKThenTopP).
        min_p: Keep tokens with p_i >= min_p * p_max; 0.0 is off.
        repeat_penalty: Over the last `repeat_last_n` tokens, each distinct token once:
            a positive logit is divided by it, a non-positive one multiplied.
        repeat_last_n: How many recent tokens (prompt included) the penalties see.
        frequency_penalty: Subtract count * frequency_penalty from a seen token's logit.
        presence_penalty: Subtract presence_penalty from every seen token's logit.
        temperature_last: Run "temperature" last whatever its place in `samplers`
            (off: it runs where `samplers` puts it).
        draw: "inverse_cdf" (one uniform per token) or seeded "gumbel" max.
        rng: "pcg64" (numpy) or "xorshift128" (run.c's generator, id-order roulette).
        seed: The generator's seed, 0 to 2**64 - 1.
        typical_p: Locally typical sampling's mass (llama.cpp `typ_p`); 1.0 is off.
        top_n_sigma: Keep logits >= max - n * std of the kept logits; <= 0 is off.
        xtc_probability: The chance per token that XTC applies; 0.0 is off.
        xtc_threshold: XTC removes every token at least this probable but the least
            probable of them; above 0.5 it never applies.
        dry_multiplier: DRY's penalty scale; 0.0 is off.
        dry_base: DRY's penalty is multiplier * base ** (length - allowed length).
        dry_allowed_length: Repeats up to this long are not penalised.
        dry_penalty_last_n: Tokens DRY scans (-1: the whole history; 0 is off).
        dry_sequence_breakers: Texts that end a repeat (matched on token text).
        mirostat: 0 (off), 1 or 2: after temperature, mirostat alone chooses the
            kept set from its state mu (the `samplers` order is not used).
        mirostat_tau: Mirostat's target surprise, in bits (mu starts at 2 * tau).
        mirostat_eta: Mirostat's learning rate.
        dynatemp_range: Dynamic temperature: temperature +- range by the kept set's
            normalised entropy; 0.0 is off.
        dynatemp_exponent: The entropy's exponent in the dynamic temperature.
        top_a: Keep tokens with p >= top_a * p_max² (KoboldCpp); 0.0 is off.
        tfs: Tail-free sampling's z (KoboldCpp's `tfs`); 1.0 is off.
        epsilon_cutoff: Keep tokens with p >= epsilon (Hugging Face's
            `epsilon_cutoff`, a probability); 0.0 is off.
        eta_cutoff: Keep tokens with p >= min(eta, sqrt(eta) * exp(-entropy))
            (Hugging Face's `eta_cutoff`); 0.0 is off.
        smoothing_factor: Quadratic sampling's factor (text-generation-webui); 0.0
            is off.
        smoothing_curve: Quadratic sampling's curve, from 1 (plain quadratic) to 3.
        adaptive_target: Adaptive-p's target probability (llama.cpp); negative is off.
        adaptive_decay: Adaptive-p's moving-average decay, 0 to 0.99.
        p_less: p-less sampling: keep the tokens with p >= sum(p²) (no parameter).
        min_tokens: Ban the end-of-generation tokens until the reply has this many
            tokens; 0 is off.
        logit_bias: (token id, bias) pairs in id order, added to the logits before
            anything else; -inf bans the token. Also given as a {id: bias} dict,
            pairs in any order, or text "42=+2;17=-inf" (held as the pairs in id
            order; a token given twice is an error).
        grammar, json_schema, grammar_triggers: A GBNF grammar or a JSON schema every
            reply must follow, and a lazy grammar's triggers (`sampling.constraint`).
        samplers: The chain's order, exactly as it runs (llama.cpp's `--samplers`
            names); a name left out does not run. The default runs the temperature
            before the filters; `DEFAULT_CHAT_SETTINGS` holds llama.cpp's chain.
            Only `temperature_last` moves anything (see `order`). Also given as text
            "top_k;temperature" or a list.
            Switching on a sampler llama.cpp's default chain lacks adds its name
            where its placement says when the order lacks it, and an order a unit's
            placement forbids (adaptive-p on but not last) is refused
            (`sampling.placement.placed_order`).
        extra: The settings sampler plugins declare (`sampling.plugins`), as (name,
            value) pairs sorted by name, those at their default left out. Each reads
            as an attribute of its name too, and `with_changes`, `to_dict` and
            `from_dict` treat it like a field.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    top_p_scope: TopPScope = "kept"
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    repeat_last_n: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    temperature_last: bool = False
    draw: DrawMethod = "inverse_cdf"
    rng: RngName = "pcg64"
    seed: int = 0
    typical_p: float = 1.0
    top_n_sigma: float = -1.0
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = 64
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*")
    mirostat: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    dynatemp_range: float = 0.0
    dynatemp_exponent: float = 1.0
    top_a: float = 0.0
    tfs: float = 1.0
    epsilon_cutoff: float = 0.0
    eta_cutoff: float = 0.0
    smoothing_factor: float = 0.0
    smoothing_curve: float = 1.0
    adaptive_target: float = -1.0
    adaptive_decay: float = 0.9
    p_less: bool = False
    min_tokens: int = 0
    logit_bias: tuple[tuple[int, float], ...] = ()
    grammar: str = ""
    json_schema: str = ""
    grammar_triggers: tuple[str, ...] = ()
    samplers: tuple[str, ...] = field(default_factory=_default_order)
    extra: tuple[tuple[str, SettingValue], ...] = ()

    def __post_init__(self) -> None:
        if self.extra:
            object.__setattr__(self, "extra", _plugin_values(self.extra))
        catalogue = _catalogue()
        for spec in catalogue.settings:
            given = getattr(self, spec.name)
            value = given
            if not spec.is_scalar:
                if spec.accepts(given):
                    continue
                # The natural spellings: samplers="top_k;temperature",
                # logit_bias={42: 2.0} or "42=+2;17=-inf", lists for tuples.
                value = spec.coerce(given)
                object.__setattr__(self, spec.name, value)
            try:
                accepted = spec.accepts(value)
            except OverflowError:  # an integer too large for a float (10**400 as a temperature)
                accepted = False
            if not accepted:
                raise SettingsError(spec.name, given, spec.expected)
        order = placed_order(self.samplers, catalogue.placements, self._switches_on)
        if order != self.samplers:
            object.__setattr__(self, "samplers", order)

    def _switches_on(self, name: str) -> bool:
        """The on-rule of the unit `name` (`SamplerUnit.is_on`)."""
        return _catalogue().is_on(name, self)

    if not TYPE_CHECKING:  # the type checker sees the fields alone

        def __getattr__(self, name: str) -> SettingValue:
            """A plugin's setting by its name: its value, else its default."""
            spec = _catalogue().plugin_settings.get(name)
            if spec is None:
                raise AttributeError(f"SamplerSettings has no setting {name!r}")
            return dict(self.extra).get(name, spec.default)

    def value(self, name: str) -> SettingValue:
        """Any setting's value by its name (a field, or a plugin's setting)."""
        value: SettingValue = getattr(self, name)
        return value

    @property
    def greedy(self) -> bool:
        """Whether the temperature is low enough to mean argmax."""
        return self.temperature < GREEDY_TEMPERATURE

    @property
    def penalizes(self) -> bool:
        """Whether any penalty can change a logit."""
        return self.repeat_last_n > 0 and (
            self.repeat_penalty != 1.0
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
        )

    def with_changes(self, **changes: Any) -> SamplerSettings:
        """Return a validated copy with some fields (or plugins' settings) changed."""
        plain = {name: value for name, value in changes.items() if name in _FIELD_NAMES}
        if len(plain) < len(changes):
            merged = dict(self.extra)
            merged.update((k, v) for k, v in changes.items() if k not in _FIELD_NAMES)
            plain["extra"] = tuple(merged.items())
        return replace(self, **plain)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (JSON/TOML friendly), plugins' settings that are
        not at their default included by name."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        values.update(self.extra)
        return values

    @property
    def order(self) -> tuple[str, ...]:
        """The order the chain runs: `samplers` as given, with "temperature" moved last
        when `temperature_last` is on (with smoothing when named right after it, and
        ahead of adaptive-p ending the order: `temperature_moved_last`).

        Nothing else is read: the order never depends on which other names
        samplescope knows, so a stored reply replays in the order it ran.
        """
        samplers = self.samplers
        if not self.temperature_last or "temperature" not in samplers:
            return samplers
        return temperature_moved_last(samplers, _catalogue().placements)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SamplerSettings:
        """Build settings from a dict (JSON or TOML), rejecting unknown keys by name.

        Lists become the tuples the several-valued settings hold; a missing field
        takes its default (which switches every newer sampler off).
        """
        specs = _catalogue().settings_by_name
        unknown = sorted(set(values) - set(specs))
        if unknown:
            raise SettingsError(unknown[0], values[unknown[0]], f"one of {sorted(specs)}")
        typed: dict[str, Any] = {
            name: specs[name].coerce(value) if isinstance(value, list) else value
            for name, value in values.items()
        }
        return cls().with_changes(**typed)


_FIELD_NAMES = frozenset(f.name for f in fields(SamplerSettings) if f.name != "extra")


def _plugin_values(
    pairs: tuple[tuple[str, SettingValue], ...],
) -> tuple[tuple[str, SettingValue], ...]:
    """Plugins' settings checked, sorted by name, those at their default left out.

    Raises:
        SettingsError: A name no plugin declares, or a value its spec refuses.
    """
    declared = _catalogue().plugin_settings
    values: dict[str, SettingValue] = {}
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise SettingsError("extra", pairs, "(name, value) pairs of plugins' settings")
        name, value = pair
        spec = declared.get(name)
        if spec is None:
            raise SettingsError(
                str(name), value, "a setting of a loaded sampler plugin (see samplescope samplers)"
            )
        value = spec.coerce(value)  # type: ignore[assignment]
        spec.check(value)
        values[name] = value
    return tuple(
        (name, values[name]) for name in sorted(values) if values[name] != declared[name].default
    )


def connect(catalogue: Callable[[], Catalogue]) -> None:
    """Hand the record the registry in use (once): `catalogue` returns it."""
    if not _CONNECTED:
        _CONNECTED.append(catalogue)


def check_fields(specs: tuple[SettingSpec, ...], default_order: tuple[str, ...]) -> None:
    """Fail if a field has no declared setting, or a setting no field.

    Raises:
        RuntimeError: The declared settings' names or defaults differ from the fields'.
    """
    declared = sorted((spec.name, repr(spec.default)) for spec in specs)
    actual = sorted(
        (f.name, repr(default_order if f.name == "samplers" else f.default))
        for f in fields(SamplerSettings)
        if f.name != "extra"
    )
    if declared != actual:
        missing = sorted(set(declared) - set(actual))
        extra = sorted(set(actual) - set(declared))
        raise RuntimeError(
            "SamplerSettings' fields do not match the settings the registry declares:"
            f" declared but no such field {missing}; field but not declared {extra}"
        )
