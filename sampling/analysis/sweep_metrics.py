"""A sweep's figures per setting: quality, diversity and length, each with its standard
error over prompts.

Every figure is first taken per prompt, over that prompt's samples of the setting,
then averaged over the prompts; the standard error is the prompts' sample standard
deviation over √(number of prompts) (None with one prompt). Per prompt:

- `logprob`: the mean raw log-probability per token, nats: the sum over the samples'
  tokens of log p(token), p at temperature 1 before any filter (`Step.prob_unfiltered`),
  over their number of tokens (an end-of-generation token counts, as in a reply's
  score);
- `perplexity`: exp(−`logprob`) of that prompt: the samples' perplexity under the model
  at temperature 1;
- `outside_top_k`: the share of the sampled tokens whose raw rank is above k;
- `length`: the mean number of tokens of a sample;
- `loop_rate`: the share of the samples in which a repetition loop formed
  (`sampling.analysis.loops.first_loop`, vLLM's rule: a period of 1..128 tokens repeated 4
  times back to back);
- `compression_ratio`, `ngram_diversity` (n = 1..4), `self_repetition` (n = 4) and
  `distinct` (n = 1..4) of the prompt's sample texts (`sampling.analysis.diversity`).

When a sample of the sweep thinks (a step recorded as thinking), each setting also has
the thinking's and the answer's figures apart, per prompt:

- `thinking_length`, `answer_length`: the mean number of tokens of each section in a
  sample (a sample that does not think is all answer);
- `thinking_loop_rate`, `answer_loop_rate`: the share of the samples with a loop in that
  section (`sampling.analysis.section_loops`: each section watched apart, so a loop
  never spans the end of the thinking);
- `thinking_logprob`, `answer_logprob`: the raw log-probability per token of that
  section's tokens over the prompt's samples (as `logprob`).

A sample's `looped` is then a loop in either section. A sweep where no sample thinks
has none of these, and its figures are as they were.

Finish reasons are counted over every sample. A figure a prompt cannot have (no token,
too few words) leaves that prompt out of the figure's mean.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sampling.analysis.diversity import (
    compression_ratio,
    distinct_n,
    ngram_diversity_score,
    self_repetition_score,
)
from sampling.analysis.loops import LoopRule
from sampling.analysis.section_loops import first_loops
from sampling.records import Step
from sampling.sections import Section

#: The raw top-k the share of tokens outside it counts against, unless given.
DEFAULT_TOP_K = 40
#: distinct-n is given for n = 1 .. this.
DISTINCT_UP_TO = 4


@dataclass(frozen=True, slots=True)
class SectionFigures:
    """What the metrics need of one section of a sample.

    Attributes:
        kind: The section.
        n_tokens: Its tokens (the answer's end-of-generation token included).
        logprob_raw: Sum of their raw log-probabilities (None: a step does not record
            its token's raw probability; 0.0 for no token).
        looped: Whether a repetition loop formed in it.
    """

    kind: Section
    n_tokens: int
    logprob_raw: float | None
    looped: bool


@dataclass(frozen=True, slots=True)
class SampleFigures:
    """What the metrics need of one sample.

    Attributes:
        prompt: The prompt's index.
        setting: The setting's index.
        text: The sample's text.
        n_tokens: Tokens sampled (an end-of-generation token included).
        logprob_raw: Sum of the tokens' raw log-probabilities (None: a step does not
            record its token's raw probability).
        outside_top_k: How many sampled tokens lie outside the raw top k.
        finish_reason: Why the sample ended.
        looped: Whether a repetition loop formed in its tokens (`sampling.analysis.loops`;
            in either section for a sample that thinks).
        sections: The thinking's figures, then the answer's, for a sample that thinks;
            empty for one that does not (see `section`).
    """

    prompt: int
    setting: int
    text: str
    n_tokens: int
    logprob_raw: float | None
    outside_top_k: int
    finish_reason: str
    looped: bool = False
    sections: tuple[SectionFigures, ...] = ()

    @property
    def thinks(self) -> bool:
        """Whether the sample has a thinking section."""
        return bool(self.sections)

    def section(self, kind: Section) -> SectionFigures:
        """One section's figures: a sample that does not think has a thinking of no
        token and is all answer."""
        for figures in self.sections:
            if figures.kind is kind:
                return figures
        if kind is Section.THINKING:
            return SectionFigures(kind, 0, 0.0, False)
        return SectionFigures(kind, self.n_tokens, self.logprob_raw, self.looped)


def _raw_logprob(steps: Sequence[Step]) -> float | None:
    """The steps' summed raw log-probability (None: one does not record it)."""
    raw = [step.prob_unfiltered for step in steps]
    known = [p for p in raw if p is not None]
    if len(known) != len(raw):
        return None
    return sum(math.log(p) if p > 0.0 else -math.inf for p in known)


def _section_figures(
    steps: Sequence[Step], kind: Section, loops: Mapping[Section, object]
) -> SectionFigures:
    """The figures of one section's steps (`loops`: the sections where one formed)."""
    return SectionFigures(kind, len(steps), _raw_logprob(steps), kind in loops)


def sample_figures(
    prompt: int,
    setting: int,
    steps: Sequence[Step],
    text: str,
    finish_reason: str,
    top_k: int = DEFAULT_TOP_K,
    loop_rule: LoopRule | None = None,
) -> SampleFigures:
    """The figures of one sample from its steps (a loop by `loop_rule`, vLLM's
    default when None).

    A step without a recorded rank counts as outside the top k when its token is not
    among its table's first k rows.
    """
    if top_k < 1:
        raise ValueError(f"invalid top_k={top_k}: expected at least 1")
    outside = 0
    for step in steps:
        rank = step.rank_known
        outside += rank is None or rank > top_k
    kinds = [step.section for step in steps]
    loops = first_loops([step.token_id for step in steps], kinds, loop_rule)
    sections: tuple[SectionFigures, ...] = ()
    if Section.THINKING in kinds:
        sections = tuple(
            _section_figures([step for step in steps if step.section is kind], kind, loops)
            for kind in (Section.THINKING, Section.ANSWER)
        )
    return SampleFigures(
        prompt,
        setting,
        text,
        len(steps),
        _raw_logprob(steps),
        outside,
        finish_reason,
        bool(loops),
        sections,
    )


@dataclass(frozen=True, slots=True)
class Estimate:
    """A figure's mean over prompts and its standard error.

    Attributes:
        mean: The mean over the prompts that have the figure.
        stderr: Their sample standard deviation over √n (None when n < 2).
        n: How many prompts have the figure.
    """

    mean: float
    stderr: float | None
    n: int


def estimate(values: Sequence[float | None]) -> Estimate | None:
    """The mean and standard error of the values given (None values left out);
    None when no value is."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    n = len(known)
    mean = math.fsum(known) / n
    if n < 2 or not all(math.isfinite(v) for v in known):
        return Estimate(mean, None, n)
    variance = math.fsum((v - mean) ** 2 for v in known) / (n - 1)
    return Estimate(mean, math.sqrt(variance / n), n)


@dataclass(frozen=True, slots=True)
class SettingMetrics:
    """The figures of one setting (see the module doc for each definition).

    Attributes:
        setting: The setting's index.
        samples: How many samples it has over every prompt.
        finish_reasons: How many samples ended for each reason.
        top_k: The k of `outside_top_k`.
    """

    setting: int
    samples: int
    finish_reasons: dict[str, int]
    top_k: int
    logprob: Estimate | None
    perplexity: Estimate | None
    outside_top_k: Estimate | None
    length: Estimate | None
    loop_rate: Estimate | None
    compression_ratio: Estimate | None
    ngram_diversity: Estimate | None
    self_repetition: Estimate | None
    distinct: tuple[Estimate | None, ...]
    thinking_length: Estimate | None = None
    answer_length: Estimate | None = None
    thinking_loop_rate: Estimate | None = None
    answer_loop_rate: Estimate | None = None
    thinking_logprob: Estimate | None = None
    answer_logprob: Estimate | None = None


PromptFigure = Callable[[Sequence[SampleFigures]], float | None]


def _mean_logprob(samples: Sequence[SampleFigures]) -> float | None:
    tokens = sum(s.n_tokens for s in samples)
    logprobs = [s.logprob_raw for s in samples]
    if tokens == 0 or any(lp is None for lp in logprobs):
        return None
    return math.fsum(lp for lp in logprobs if lp is not None) / tokens


def _perplexity(samples: Sequence[SampleFigures]) -> float | None:
    mean = _mean_logprob(samples)
    return None if mean is None else math.exp(-mean)


def _outside(samples: Sequence[SampleFigures]) -> float | None:
    tokens = sum(s.n_tokens for s in samples)
    return sum(s.outside_top_k for s in samples) / tokens if tokens else None


def _length(samples: Sequence[SampleFigures]) -> float | None:
    return sum(s.n_tokens for s in samples) / len(samples)


def _loop_rate(samples: Sequence[SampleFigures]) -> float | None:
    return sum(s.looped for s in samples) / len(samples)


def _section_length(kind: Section) -> PromptFigure:
    return lambda samples: sum(s.section(kind).n_tokens for s in samples) / len(samples)


def _section_loop_rate(kind: Section) -> PromptFigure:
    return lambda samples: sum(s.section(kind).looped for s in samples) / len(samples)


def _section_logprob(kind: Section) -> PromptFigure:
    def figure(samples: Sequence[SampleFigures]) -> float | None:
        parts = [s.section(kind) for s in samples]
        tokens = sum(part.n_tokens for part in parts)
        logprobs = [part.logprob_raw for part in parts if part.n_tokens]
        if tokens == 0 or any(lp is None for lp in logprobs):
            return None
        return math.fsum(lp for lp in logprobs if lp is not None) / tokens

    return figure


def _texts(samples: Sequence[SampleFigures]) -> list[str]:
    return [s.text for s in samples]


def _distinct(n: int) -> PromptFigure:
    return lambda samples: distinct_n(_texts(samples), n)


def setting_metrics(
    figures: Sequence[SampleFigures], setting: int, top_k: int = DEFAULT_TOP_K
) -> SettingMetrics:
    """The figures of setting `setting` from every sample's (other settings' ignored).

    `top_k` only labels the result: the samples were counted against it already.
    The sections' figures are given when a sample of `figures` (any setting's) thinks.
    A prompt's texts are joined in the order `figures` gives them (the compression
    ratio and the n-gram diversity depend on it): a sweep gives them in sample order.
    """
    mine = [f for f in figures if f.setting == setting]
    by_prompt: dict[int, list[SampleFigures]] = {}
    for figure in mine:
        by_prompt.setdefault(figure.prompt, []).append(figure)
    groups = [by_prompt[p] for p in sorted(by_prompt)]

    def over_prompts(figure: PromptFigure) -> Estimate | None:
        return estimate([figure(group) for group in groups])

    thinking, answer = Section.THINKING, Section.ANSWER
    by_section: dict[str, Estimate | None] = {}
    if any(f.thinks for f in figures):
        by_section = {
            "thinking_length": over_prompts(_section_length(thinking)),
            "answer_length": over_prompts(_section_length(answer)),
            "thinking_loop_rate": over_prompts(_section_loop_rate(thinking)),
            "answer_loop_rate": over_prompts(_section_loop_rate(answer)),
            "thinking_logprob": over_prompts(_section_logprob(thinking)),
            "answer_logprob": over_prompts(_section_logprob(answer)),
        }
    return SettingMetrics(
        setting=setting,
        samples=len(mine),
        finish_reasons=dict(sorted(Counter(f.finish_reason for f in mine).items())),
        top_k=top_k,
        logprob=over_prompts(_mean_logprob),
        perplexity=over_prompts(_perplexity),
        outside_top_k=over_prompts(_outside),
        length=over_prompts(_length),
        loop_rate=over_prompts(_loop_rate),
        compression_ratio=over_prompts(lambda g: compression_ratio(_texts(g))),
        ngram_diversity=over_prompts(lambda g: ngram_diversity_score(_texts(g), 4)),
        self_repetition=over_prompts(lambda g: self_repetition_score(_texts(g), 4)),
        distinct=tuple(over_prompts(_distinct(n)) for n in range(1, DISTINCT_UP_TO + 1)),
        **by_section,
    )
