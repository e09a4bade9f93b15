"""A sweep: many samples of every setting of a grid, on each of several prompts.

Every sample is one reply: prompt p, setting s, seed `seed + j` for its j-th sample.
All the samples of one prompt decode in lockstep on the one loop
(`SessionBackend.generate_many`), in batches of up to the model's `n_seq_max`
sequences: the prompt is prefilled once (the later batches find it in the memory),
and every step decodes one token of every live sample in one batch. Lockstep
decoding is batch-invariant, so each sample is the reply `generate` gives alone with
its settings and seed. `in_turn` runs them one after the other instead (the bench's
peer).

The sweep yields a `SampleToken` per sampled token (for a progress bar) and a
`SweepSample` when a sample finishes, with the events it generated (to save it as a
chat). A cancel ends the batch running (its samples finish as "cancelled") and
starts no other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backend.chat.completion import Mode, as_document
from backend.chat.events import FinishedEvent, GenerationEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.samplers.guidance import Guidance
from sampling.settings.record import SamplerSettings

if TYPE_CHECKING:
    from backend.session.backend import SessionBackend

#: Samples one lockstep batch decodes at once unless asked otherwise (measured on
#: SmolLM2, 1 thread: 16 samples in one batch ran ~1.6x faster than in batches of 4).
DEFAULT_PARALLEL = 16
#: The most samples one batch may hold.
MAX_PARALLEL = 64
#: The most settings a sweep's grid may hold (each --set times the --grid lists).
MAX_SETTINGS = 10_000
#: The most samples a sweep may take in all (prompts × settings × samples).
MAX_SAMPLES = 100_000


@dataclass(frozen=True, slots=True)
class SweepSetting:
    """One point of the grid.

    Attributes:
        label: How the output names it ("t=0.7 min_p=0.1").
        settings: Its settings (the seed is each sample's own).
    """

    label: str
    settings: SamplerSettings


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What a sweep runs.

    Attributes:
        prompts: The user's messages (or texts to continue, in completion mode).
        settings: The grid's points.
        samples: Samples per setting and prompt (seeds `seed`, `seed + 1`, ...); the
            sweep's samples in all (prompts × settings × samples) are at most
            `MAX_SAMPLES`.
        seed: The first sample's seed.
        max_tokens: Each sample's token limit.
        mode: "chat" (each prompt a user turn in the chat template) or "completion".
        system: A system prompt before each prompt (chat mode).
    """

    prompts: tuple[str, ...]
    settings: tuple[SweepSetting, ...]
    samples: int
    seed: int = 0
    max_tokens: int = 64
    mode: Mode = "chat"
    system: str | None = None

    def __post_init__(self) -> None:
        if not self.prompts:
            raise SamplescopeError("nothing to sweep: no prompt given")
        if not self.settings:
            raise SamplescopeError("nothing to sweep: no setting given")
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise SamplescopeError(
                f"invalid samples={self.samples:,}: expected 1 to {MAX_SAMPLES:,}"
            )
        if len(self.settings) > MAX_SETTINGS:
            raise SamplescopeError(
                f"{len(self.settings):,} settings: a sweep runs at most {MAX_SETTINGS:,}"
            )
        total = len(self.prompts) * len(self.settings) * self.samples
        if total > MAX_SAMPLES:
            raise SamplescopeError(
                f"the sweep is {len(self.prompts):,} prompts × {len(self.settings):,} settings"
                f" × {self.samples:,} samples = {total:,} samples; a sweep takes at most"
                f" {MAX_SAMPLES:,}"
            )
        if self.max_tokens < 1:
            raise SamplescopeError(f"invalid max_tokens={self.max_tokens}: expected at least 1")
        top = self.seed + self.samples - 1
        if self.seed < 0 or top >= 2**64:
            raise SamplescopeError(
                f"invalid seed={self.seed}: the seeds {self.seed}..{top} must lie in 0..2**64-1"
            )

    @property
    def shape(self) -> str:
        """ "2 prompts × 3 settings × 4 samples", each count with its word."""
        counts = ((len(self.prompts), "prompt"), (len(self.settings), "setting"))
        words = [f"{n:,} {word}" + ("s" if n != 1 else "") for n, word in counts]
        words.append(f"{self.samples:,} sample" + ("s" if self.samples != 1 else ""))
        return " × ".join(words)

    @property
    def per_prompt(self) -> int:
        """How many samples each prompt has."""
        return len(self.settings) * self.samples

    @property
    def keys(self) -> tuple[SampleKey, ...]:
        """Every sample, prompt by prompt, then setting by setting, then seed."""
        return tuple(
            SampleKey(prompt, setting, sample)
            for prompt in range(len(self.prompts))
            for setting in range(len(self.settings))
            for sample in range(self.samples)
        )

    def settings_of(self, key: SampleKey) -> SamplerSettings:
        """The settings sample `key` runs with, its seed applied."""
        return self.settings[key.setting].settings.with_changes(seed=self.seed + key.sample)

    def messages(self, prompt: int) -> list[ChatMessage]:
        """The conversation prompt `prompt` is (a document in completion mode)."""
        messages = [] if self.system is None else [ChatMessage("system", self.system)]
        messages.append(ChatMessage("user", self.prompts[prompt]))
        return as_document(messages) if self.mode == "completion" else messages


@dataclass(frozen=True, slots=True)
class SampleKey:
    """Which sample: prompt, setting and sample (its seed is the plan's seed + sample)."""

    prompt: int
    setting: int
    sample: int


@dataclass(frozen=True, slots=True)
class SampleToken:
    """A sample took one token (the sweep's progress)."""

    key: SampleKey


@dataclass(frozen=True, slots=True)
class SweepSample:
    """A finished sample.

    Attributes:
        key: Which sample.
        settings: Its settings, seed included.
        steps: Each sampled token's record.
        finished: How it ended (text, token ids, reason, stats).
        events: Every event its generation yielded, in order (saving it replays them).
    """

    key: SampleKey
    settings: SamplerSettings
    steps: tuple[Step, ...]
    finished: FinishedEvent
    events: tuple[GenerationEvent, ...]


SweepEvent = SampleToken | SweepSample


def batches(keys: Sequence[SampleKey], size: int) -> list[list[SampleKey]]:
    """`keys` cut into runs of at most `size` that each hold one prompt's samples."""
    if size < 1:
        raise SamplescopeError(f"invalid batch size {size}: expected at least 1")
    runs: list[list[SampleKey]] = []
    for key in keys:
        if runs and runs[-1][0].prompt == key.prompt and len(runs[-1]) < size:
            runs[-1].append(key)
        else:
            runs.append([key])
    return runs


def run_sweep(
    backend: SessionBackend,
    plan: SweepPlan,
    *,
    cancel: threading.Event | None = None,
    in_turn: bool = False,
) -> Iterator[SweepEvent]:
    """Run every sample of `plan` (see the module doc); each ends with a SweepSample.

    Args:
        backend: The model.
        plan: The prompts, settings and samples.
        cancel: Ends the batch running and starts no other.
        in_turn: One sample at a time instead of in lockstep batches.
    """
    size = 1 if in_turn else backend.model.n_seq_max
    if any(Guidance.is_on(plan.settings_of(key)) for key in plan.keys):
        size = max(1, size // 2)  # a guided sample's negative prompt decodes beside it
    for batch in batches(plan.keys, size):
        if cancel is not None and cancel.is_set():
            return
        lives = [LiveSettings(plan.settings_of(key)) for key in batch]
        generation = backend.generate_many(
            plan.messages(batch[0].prompt),
            lives,
            max_tokens=plan.max_tokens,
            cancel=cancel,
            raw=plan.mode == "completion",
        )
        events: list[list[GenerationEvent]] = [[] for _ in batch]
        for number, event in generation:
            events[number].append(event)
            key = batch[number]
            if isinstance(event, TokenEvent):
                yield SampleToken(key)
            elif isinstance(event, FinishedEvent):
                steps = tuple(e.step for e in events[number] if isinstance(e, TokenEvent))
                yield SweepSample(key, lives[number].current, steps, event, tuple(events[number]))
