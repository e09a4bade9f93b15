"""A finished sweep as a record: its plan, every sample and the figures per setting.

`sweep --json` prints `SweepResult.to_json()`; `sweep --view FILE` reads it back
(`from_json`), the figures computed again from the samples' own numbers, so the file
holds each number once. Each sample names the saved chat it is (`chat_id`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from backend.chat.events import TokenEvent
from backend.session.sweep import SweepPlan, SweepSample, SweepSetting
from sampling.analysis.frontier import pareto_frontier
from sampling.analysis.sweep_metrics import (
    DEFAULT_TOP_K,
    Estimate,
    SampleFigures,
    SectionFigures,
    SettingMetrics,
    sample_figures,
    setting_metrics,
)
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from sampling.sections import Section, SectionSpan, spans_of
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of

#: The diversity measures the frontier can be drawn against, and whether higher
#: means more diverse.
DIVERSITY_AXES: dict[str, bool] = {
    "ngram_diversity": True,
    "distinct_2": True,
    "compression_ratio": False,
    "self_repetition": False,
}

#: The temperature's place in the chain (`SweepResult.temperature_order`), in words.
ORDER_WORDS = {
    "first": "temperature first (penalties → temperature → filters, as Hugging Face's"
    " generate and the min-p paper)",
    "last": "temperature last (the filters → temperature, as llama.cpp's chain)",
    "between": "the temperature between the filters (the order given)",
    "none": "no temperature in the order",
    "mixed": "the temperature's place differs between settings",
}


class SweepFileError(SamplescopeError):
    """A sweep file cannot be read; the message says which and why."""


def temperature_place(settings: SamplerSettings) -> str:
    """Where the chain runs the temperature: "first" (before every filter, as Hugging
    Face does), "last" (llama.cpp's chain) or "between" the filters; "none" when
    the order has none.

    Before it, only the units that rewrite the logits may run for "first" (penalties,
    DRY: the registry's `logits_samplers`); after it, only units placed right after the
    temperature or last (smoothing, adaptive-p: no filter) for "last".
    """
    order = settings.order
    if "temperature" not in order:
        return "none"
    at = order.index("temperature")
    registry = registry_of(settings)
    if all(name in registry.logits_samplers for name in order[:at]):
        return "first"
    after = order[at + 1 :]
    return "last" if all(_follows_the_temperature(name, registry) for name in after) else "between"


def _follows_the_temperature(name: str, registry: Registry) -> bool:
    """Whether the unit places itself right after the temperature, or last."""
    placement = registry.placements.get(name)
    return placement is not None and (
        placement.kind == "last"
        or (placement.kind == "after" and placement.anchor == "temperature")
    )


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """One sample as the result holds it.

    Attributes:
        figures: Its numbers (prompt, setting, text, tokens, raw log-probability,
            tokens outside the raw top k, finish reason).
        sample: Its index among the setting's samples (its seed is the plan's + it).
        seed: Its seed.
        token_ids: Its tokens.
        chat_id: The saved chat it is, or None when not saved.
        thinking_runs: A thinking model's sample: its runs of thinking steps (none:
            all answer).
        thinking: The text of those steps.
    """

    figures: SampleFigures
    sample: int
    seed: int
    token_ids: tuple[int, ...]
    chat_id: int | None
    thinking_runs: tuple[SectionSpan, ...] = ()
    thinking: str = ""

    def to_json(self) -> dict[str, Any]:
        """The sample as a JSON object."""
        f = self.figures
        return {
            "prompt": f.prompt,
            "setting": f.setting,
            "sample": self.sample,
            "seed": self.seed,
            "chat_id": self.chat_id,
            "text": f.text,
            "token_ids": list(self.token_ids),
            "n_tokens": f.n_tokens,
            "finish_reason": f.finish_reason,
            "logprob_raw": f.logprob_raw,
            "outside_top_k": f.outside_top_k,
            "looped": f.looped,
            **({"sections": [section_json(part) for part in f.sections]} if f.thinks else {}),
        } | self._thinking_json()

    def _thinking_json(self) -> dict[str, Any]:
        if not self.thinking_runs:
            return {}
        runs = [{"first": span.first, "last": span.last} for span in self.thinking_runs]
        return {"thinking": self.thinking, "thinking_runs": runs}

    @classmethod
    def from_json(cls, values: dict[str, Any]) -> SampleRecord:
        """The sample from its JSON object (KeyError, TypeError, ValueError if malformed)."""
        figures = SampleFigures(
            prompt=int(values["prompt"]),
            setting=int(values["setting"]),
            text=str(values["text"]),
            n_tokens=int(values["n_tokens"]),
            logprob_raw=None if values["logprob_raw"] is None else float(values["logprob_raw"]),
            outside_top_k=int(values["outside_top_k"]),
            finish_reason=str(values["finish_reason"]),
            looped=bool(values.get("looped", False)),
            sections=tuple(section_from_json(part) for part in values.get("sections", ())),
        )
        chat = values.get("chat_id")
        runs = tuple(
            SectionSpan(Section.THINKING, int(run["first"]), int(run["last"]))
            for run in values.get("thinking_runs", ())
        )
        return cls(
            figures,
            int(values["sample"]),
            int(values["seed"]),
            tuple(int(t) for t in values["token_ids"]),
            None if chat is None else int(chat),
            runs,
            str(values.get("thinking", "")) if runs else "",
        )


def section_json(figures: SectionFigures) -> dict[str, Any]:
    """A sample's section as a JSON object."""
    return {
        "kind": str(figures.kind),
        "n_tokens": figures.n_tokens,
        "logprob_raw": figures.logprob_raw,
        "looped": figures.looped,
    }


def section_from_json(values: dict[str, Any]) -> SectionFigures:
    """A sample's section from its JSON object (KeyError, TypeError, ValueError if
    malformed)."""
    logprob = values["logprob_raw"]
    return SectionFigures(
        Section(values["kind"]),
        int(values["n_tokens"]),
        None if logprob is None else float(logprob),
        bool(values["looped"]),
    )


def record_of(sample: SweepSample, chat_id: int | None, top_k: int) -> SampleRecord:
    """A finished sample's record."""
    key, finished = sample.key, sample.finished
    figures = sample_figures(
        key.prompt, key.setting, sample.steps, finished.text, finished.reason, top_k
    )
    record = SampleRecord(figures, key.sample, sample.settings.seed, finished.token_ids, chat_id)
    spans = spans_of([step.section for step in sample.steps])
    runs = tuple(span for span in spans if span.kind is Section.THINKING)
    if not runs:
        return record
    tokens = [event for event in sample.events if isinstance(event, TokenEvent)]
    text = "".join(event.text for event in tokens if event.step.section is Section.THINKING)
    return replace(record, thinking_runs=runs, thinking=text)


def estimate_json(value: Estimate | None) -> dict[str, Any] | None:
    """An estimate as {"mean", "stderr", "n"} (None stays None)."""
    return None if value is None else {"mean": value.mean, "stderr": value.stderr, "n": value.n}


def metric(metrics: SettingMetrics, name: str) -> Estimate | None:
    """A named figure of a setting: a field, or "distinct_N"."""
    if name.startswith("distinct_"):
        return metrics.distinct[int(name.removeprefix("distinct_")) - 1]
    value = getattr(metrics, name)
    return value if isinstance(value, Estimate) or value is None else None


#: The figures of a setting, by the names the JSON and CSV use.
METRIC_NAMES = (
    "logprob",
    "perplexity",
    "outside_top_k",
    "length",
    "loop_rate",
    "compression_ratio",
    "ngram_diversity",
    "self_repetition",
    "distinct_1",
    "distinct_2",
    "distinct_3",
    "distinct_4",
)
#: The sections' figures of a setting, given when a sample of the sweep thinks.
SECTION_METRIC_NAMES = (
    "thinking_length",
    "answer_length",
    "thinking_loop_rate",
    "answer_loop_rate",
    "thinking_logprob",
    "answer_logprob",
)


@dataclass(frozen=True)
class SweepResult:
    """A sweep's plan, its samples and the figures of each setting.

    Attributes:
        model: The model file.
        plan: What was run.
        samples: Every finished sample, in the order they finished.
        top_k: The raw top k of `outside_top_k`.
        cancelled: Whether the sweep was stopped before its end (cancelled samples
            are kept in `samples` and left out of the figures).
        contrast_model: The contrast model decoding beside the model ("": none).
        control_vectors: The control vectors the model applied, each file with its
            scale (a sample's `control_strength` multiplies them).
        control_layers: The first and last layer they steered (None: every layer).
    """

    model: str
    plan: SweepPlan
    samples: tuple[SampleRecord, ...]
    top_k: int = DEFAULT_TOP_K
    cancelled: bool = False
    contrast_model: str = ""
    control_vectors: tuple[tuple[str, float], ...] = ()
    control_layers: tuple[int, int] | None = None

    @cached_property
    def metrics(self) -> tuple[SettingMetrics, ...]:
        """The figures of each setting, over its samples that were not cancelled
        (computed once: tens of milliseconds for a sweep of 144 samples).

        A prompt's texts are taken in sample (seed) order, not in the order they
        finished: the compression ratio and the n-gram diversity join them, and their
        figures change with the order, which batching, `--parallel` and `--in-turn`
        would otherwise decide.
        """
        in_order = sorted(
            self.samples, key=lambda s: (s.figures.prompt, s.figures.setting, s.sample)
        )
        done = [s.figures for s in in_order if s.figures.finish_reason != "cancelled"]
        return tuple(
            setting_metrics(done, index, self.top_k) for index in range(len(self.plan.settings))
        )

    @property
    def thinks(self) -> bool:
        """Whether a sample thinks (then each setting has its sections' figures)."""
        return any(sample.figures.thinks for sample in self.samples)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The figures each setting has, by name: the sections' too when a sample
        thinks."""
        return METRIC_NAMES + (SECTION_METRIC_NAMES if self.thinks else ())

    @property
    def temperature_order(self) -> str:
        """Where the settings run the temperature ("first", "last", "between", or
        "mixed" when they differ)."""
        places = {temperature_place(s.settings) for s in self.plan.settings}
        return places.pop() if len(places) == 1 else "mixed"

    def frontier(self, axis: str = "ngram_diversity") -> list[int]:
        """The settings on the quality (raw log-probability per token) against
        diversity (`axis`, see `DIVERSITY_AXES`) Pareto frontier."""
        sign = 1.0 if DIVERSITY_AXES[axis] else -1.0
        indices, points = [], []
        for metrics in self.metrics:
            quality, diversity = metrics.logprob, metric(metrics, axis)
            if quality is not None and diversity is not None:
                indices.append(metrics.setting)
                points.append((sign * diversity.mean, quality.mean))
        return [indices[i] for i in pareto_frontier(points)]

    def to_json(self) -> dict[str, Any]:
        """The result as one JSON object (`sweep --json`)."""
        plan = self.plan
        metrics = self.metrics
        frontier = set(self.frontier())
        return {
            "model": self.model,
            "contrast_model": self.contrast_model or None,
            "control_vectors": [
                {"path": path, "scale": scale} for path, scale in self.control_vectors
            ],
            "control_layers": None if self.control_layers is None else list(self.control_layers),
            "temperature_order": self.temperature_order,
            "prompts": list(plan.prompts),
            "system": plan.system,
            "mode": plan.mode,
            "samples_per_setting": plan.samples,
            "seed": plan.seed,
            "max_tokens": plan.max_tokens,
            "top_k": self.top_k,
            "cancelled": self.cancelled,
            "settings": [
                {
                    "index": index,
                    "label": setting.label,
                    "settings": setting.settings.to_json(),
                    "samples": metrics[index].samples,
                    "finish_reasons": metrics[index].finish_reasons,
                    "on_frontier": index in frontier,
                    "metrics": {
                        name: estimate_json(metric(metrics[index], name))
                        for name in self.metric_names
                    },
                }
                for index, setting in enumerate(plan.settings)
            ],
            "samples": [sample.to_json() for sample in self.samples],
        }

    @classmethod
    def from_json(
        cls, values: dict[str, Any], registry: Registry = BUILT_IN_REGISTRY
    ) -> SweepResult:
        """The result from `to_json`'s object, its settings made with `registry`.

        Raises:
            SweepFileError: The object is not a sweep result.
        """
        try:
            settings = tuple(
                SweepSetting(str(s["label"]), SamplerSettings.from_dict(s["settings"], registry))
                for s in values["settings"]
            )
            plan = SweepPlan(
                prompts=tuple(str(p) for p in values["prompts"]),
                settings=settings,
                samples=int(values["samples_per_setting"]),
                seed=int(values["seed"]),
                max_tokens=int(values["max_tokens"]),
                mode="completion" if values.get("mode") == "completion" else "chat",
                system=values.get("system"),
            )
            samples = tuple(SampleRecord.from_json(s) for s in values["samples"])
            layers = values.get("control_layers")
            result = cls(
                str(values["model"]),
                plan,
                samples,
                int(values["top_k"]),
                bool(values.get("cancelled", False)),
                contrast_model=str(values.get("contrast_model") or ""),
                control_vectors=tuple(
                    (str(v["path"]), float(v["scale"])) for v in values.get("control_vectors", ())
                ),
                control_layers=None if layers is None else (int(layers[0]), int(layers[1])),
            )
        except (KeyError, TypeError, ValueError, IndexError, SamplescopeError) as error:
            raise SweepFileError(f"not a sweep result: {type(error).__name__}: {error}") from None
        for sample in samples:
            f = sample.figures
            if not (0 <= f.prompt < len(plan.prompts) and 0 <= f.setting < len(settings)):
                raise SweepFileError(
                    f"not a sweep result: a sample of prompt {f.prompt}, setting {f.setting}"
                )
        return result

    def samples_of(self, setting: int) -> list[SampleRecord]:
        """The samples of one setting, by prompt then seed."""
        mine = [s for s in self.samples if s.figures.setting == setting]
        return sorted(mine, key=lambda s: (s.figures.prompt, s.sample))
