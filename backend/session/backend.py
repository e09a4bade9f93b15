"""A conversation in, generation events out: the chat's side of the one loop.

`SessionBackend` turns messages into prompt tokens with a model's chat template
(fitted to the context) and runs them through `backend.session.loop`: one reply
(`generate`, the `backend.chat.protocol.ChatBackend` contract), several sequences
in lockstep (`generate_many`: compare's columns), or a past step's input rebuilt
(`step_input`: what-if). The llama.cpp backend and the test suite's fake are both a
`SessionBackend` over their own `Model`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from backend.chat.events import Decoding, FinishedEvent, GenerationEvent
from backend.chat.prompt import PromptBuilder
from backend.chat.protocol import ChatMessage, LiveSettings, ModelInfo
from backend.chat.template import ChatTemplate
from backend.llama.context import Layout
from backend.llama.vocab_match import check_same_vocabulary
from backend.session.loop import Generation
from backend.session.loop_watch import LoopGuard, watching
from backend.session.model import Model
from backend.session.phrase_bans import PhraseBans, backtracking
from backend.session.run import Steer, StepInput, clock_now
from backend.session.session import Session
from sampling.errors import SamplescopeError
from sampling.samplers.guidance import Guidance, GuidanceParams
from sampling.settings.record import SamplerSettings

#: At most this share of the context is reserved for the reply when fitting a prompt.
MAX_HEADROOM_SHARE = 0.5


class SessionBackend:
    """A model behind the `ChatBackend` protocol, generating through the one loop.

    Exactly one thread may call `generate` (and every other method but `info`);
    others may read `info` and set a cancel event.

    Args:
        model: The model.
        template: Its chat template.
        info: What the status line shows about it.
        clock: The time source of the generations' figures.
        template_notice: Why `template` is not the model's own (None: it is).
    """

    def __init__(
        self,
        model: Model,
        template: ChatTemplate,
        info: ModelInfo,
        *,
        clock: Callable[[], float] = clock_now,
        template_notice: str | None = None,
    ) -> None:
        self.model = model
        self.template = template
        self.template_notice = template_notice
        """Why the template is not the model's own (None when it is)."""
        self.prompt = PromptBuilder(model, template)
        self.session = Session(model, clock)
        self.contrast: SessionBackend | None = None
        """A smaller model of the same vocabulary that decodes every reply in step
        (`--contrast-model`), or None."""
        self._info = info

    @property
    def info(self) -> ModelInfo:
        """The loaded model."""
        return self._info

    @property
    def context_used(self) -> int:
        """Tokens the chat's sequence holds in the model's memory."""
        return len(self.session.memory.tokens())

    @property
    def has_own_template(self) -> bool:
        """Whether the template is the model's own."""
        return self.template_notice is None

    def thinking_tags(self, raw: bool = False) -> tuple[str, ...]:
        """The thinking tags of the chat template (start, then ends), for a chat; none
        for a model whose template shows no thinking format, and in completion mode
        (`raw`: `--thinking-tags` names them there)."""
        if raw:
            return ()
        return self.template.format_tags

    def special_texts(self) -> list[str]:
        """The texts of the vocabulary's special tokens."""
        return self.model.special_texts()

    def add_contrast(self, small: SessionBackend) -> None:
        """Decode every reply in step with `small` too (`--contrast-model`), in place of
        the contrast model before (freed). `small` is freed when it does not fit.

        Raises:
            VocabularyMismatch: The vocabularies differ (the first difference named).
            SamplescopeError: The context sizes differ.
        """
        names = ("the model", "the contrast model")
        try:
            check_same_vocabulary(self.model, small.model, names)
            if small.model.n_ctx != self.model.n_ctx:
                raise SamplescopeError(
                    f"the model's context is {self.model.n_ctx} tokens and the contrast"
                    f" model's {small.model.n_ctx}: contrast needs the same (--ctx)"
                )
        except SamplescopeError:
            small.close()
            raise
        self.drop_contrast()
        self.contrast = small
        self._info = replace(self._info, contrast_model=str(Path(small.info.path).resolve()))

    def drop_contrast(self) -> None:
        """Free the contrast model (none loaded: nothing to do): replies decode alone."""
        small, self.contrast = self.contrast, None
        if small is not None:
            small.close()
            self._info = replace(self._info, contrast_model="")

    def reset(self) -> None:
        """Forget the memory (a new chat)."""
        self.session.memory.clear()

    def close(self) -> None:
        """Free the model (nothing here; a backend owning one frees it)."""

    def tokenize_messages(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt tokens `generate` would feed for `messages` (before fitting)."""
        return self.prompt.tokens(messages)

    # ---- generating ---------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[ChatMessage],
        settings: LiveSettings,
        *,
        max_tokens: int = 512,
        cancel: threading.Event | None = None,
        raw: bool = False,
        steer: Steer | None = None,
        bans: PhraseBans | None = None,
        loops: LoopGuard | None = None,
    ) -> Iterator[GenerationEvent]:
        """Generate the assistant's reply to `messages` (see `ChatBackend.generate`).

        `FinishedEvent.token_ids` holds every sampled id, the end-of-generation token
        included; `text` holds the reply without it.

        `steer` starts the reply with given tokens (`prefix`, decoded as a generation
        decodes them: no events, but part of the finished text and token ids) and may
        force the next token (`force`): the branch of a reply from one of its tokens.
        Token events then count from `len(prefix)`; `max_tokens` counts the prefix.

        `bans` keeps banned phrases out of the reply by backtracking
        (`backend.session.phrase_bans`): each rejected attempt comes as a RewindEvent.

        `loops` watches the reply for repetition loops (`backend.session.loop_watch`):
        LoopEvents, the FinishedEvent's `loop`, and in "stop" mode the finish "loop".
        """
        generation = self.generate_many(
            messages,
            [settings],
            max_tokens=max_tokens,
            cancel=cancel,
            raw=raw,
            steer=steer,
            rewindable=bool(bans),
        )
        events = backtracking(generation, bans) if bans else iter(generation)
        if loops:
            events = watching(generation, loops, events)
        for _, event in events:
            yield event

    def generate_many(
        self,
        messages: Sequence[ChatMessage],
        lives: Sequence[LiveSettings],
        *,
        max_tokens: int = 512,
        cancel: threading.Event | None = None,
        raw: bool = False,
        steer: Steer | None = None,
        rewindable: bool = False,
        layout: Layout | None = None,
    ) -> Generation:
        """Replies to `messages`, one per settings, in lockstep (one decode per step for
        every live sequence); iterate it for (sequence number, event) pairs, each
        sequence's events as `generate` yields them. One sequence decodes into the
        chat's; several decode in a context of their own, each in its own KV stream
        (`layout` None), so that each sequence gets the tokens it gets alone.
        `rewindable`: the generation can be rewound (`Generation.rewind`). The model
        takes what it takes of the first sequence's settings first (`prepare_model`)."""
        self.prepare_model(lives[0].current)
        return Generation(
            self.session,
            lambda: self.fit_prompt(messages, max_tokens, raw),
            lives,
            max_tokens=max_tokens,
            cancel=cancel,
            steer=steer,
            rewindable=rewindable,
            layout=layout,
            negative=lambda settings: self.negative_tokens(settings, raw),
            companion=None if self.contrast is None else self.contrast.session,
            thinking_tags=self.thinking_tags(raw),
        )

    def prepare_model(self, settings: SamplerSettings) -> None:
        """Set what the model itself takes from `settings` before a reply (the control
        vectors' strength, `LlamaBackend`); nothing here."""

    def negative_tokens(self, settings: SamplerSettings, raw: bool) -> list[int]:
        """The negative prompt guidance steers away from, as tokens: a conversation of
        the negative system prompt (when given) and the negative prompt as the user's
        turn, or in completion mode (`raw`) the negative prompt as the whole document.
        An empty negative prompt is the empty turn (in completion mode: nothing but a
        BOS token, where the model has one)."""
        params = settings.of(GuidanceParams)
        if raw:
            return self.prompt.raw_tokens(params.negative_prompt)
        messages = [ChatMessage("system", params.negative_system)] if params.negative_system else []
        messages.append(ChatMessage("user", params.negative_prompt))
        return self.prompt.tokens(messages)

    def fit_prompt(
        self, messages: Sequence[ChatMessage], max_tokens: int, raw: bool
    ) -> tuple[list[int], list[str]]:
        """The prompt's tokens, fitted to leave room for the reply, and notices saying
        what was cut.

        Raises:
            SamplescopeError: Nothing to answer, or nothing makes it fit.
        """
        if not messages:
            raise SamplescopeError("nothing to answer: the conversation is empty")
        n_ctx = self.model.n_ctx
        headroom = min(max_tokens, int(n_ctx * MAX_HEADROOM_SHARE))
        budget = n_ctx - headroom
        notices: list[str] = []
        if raw:
            prompt = self.prompt.raw_tokens(messages[-1].content)
            if len(prompt) > budget:
                cut = len(prompt) - budget
                # Keep a leading BOS: cut the oldest text after it.
                keep = 1 if prompt[0] == self.model.bos else 0
                prompt = prompt[:keep] + prompt[cut + keep :]
                notices.append(f"cut the oldest {cut} tokens of the prompt to fit the context")
            return prompt, notices
        fitted = self.prompt.fit(messages, budget)
        if fitted.dropped:
            notices.append(
                f"dropped the {fitted.dropped} oldest message(s) to fit the context"
                f" of {n_ctx} tokens (the system prompt is kept)"
            )
        if fitted.truncated_tokens:
            notices.append(
                f"cut the first {fitted.truncated_tokens} tokens of the last message"
                f" to fit the context of {n_ctx} tokens"
            )
        return fitted.tokens, notices

    def step_input(
        self,
        messages: Sequence[ChatMessage],
        prefix: Sequence[int],
        *,
        max_tokens: int = 512,
        raw: bool = False,
        decoding: Decoding | None = None,
        streams: int = 0,
        extra_cells: int = 0,
        hold: bool = False,
        guidance: SamplerSettings | None = None,
    ) -> StepInput:
        """What the sampler saw at token `len(prefix)` of a reply to `messages`.

        The memory is built exactly as `generate` builds it (reuse, prefill in the
        same chunks, each earlier token decoded alone), so the logits are the ones the
        sampler saw when the reply was generated on the same memory. A reply decoded in
        lockstep (`decoding`) is rebuilt in lockstep: every sibling samples again beside
        it up to the step, as they did (its own tokens come out as `prefix` again), in
        the memory layout it was decoded in. `streams` and `extra_cells` ask for a
        context of that many sequences with that much room past the step, kept after
        it with `hold` (an explore tree grows from it). A guided step (`guidance`: the
        settings it ran with) is rebuilt with its negative prompt beside it, and comes
        with the negative prompt's logits (`StepInput.second`); with a contrast model
        loaded, every step comes with the smaller model's (`StepInput.small`).

        Raises:
            SamplescopeError: The prompt or the tokens cannot be fed.
        """
        kept: list[StepInput] = []
        index = len(prefix)
        if guidance is not None:
            self.prepare_model(guidance)

        def keep(
            at: int,
            logits: object,
            history: Sequence[int],
            second: object = None,
            small: object = None,
        ) -> None:
            if at == index:
                copied = None if second is None else np.array(second, dtype=np.float32)
                twin = None if small is None else np.array(small, dtype=np.float32)
                kept.append(
                    StepInput(np.array(logits, dtype=np.float32), tuple(history), copied, twin)
                )

        layout = None
        if decoding is None:
            rebuilt = SamplerSettings(temperature=0.0)
            if guidance is not None and Guidance.is_on(guidance):
                params = guidance.of(GuidanceParams)
                rebuilt = rebuilt.with_changes(
                    guidance_scale=params.guidance_scale,
                    negative_prompt=params.negative_prompt,
                    negative_system=params.negative_system,
                )
            lives, steer = [LiveSettings(rebuilt)], Steer(tuple(prefix))
            number = 0
        else:
            lives = [LiveSettings(settings) for settings in decoding.settings]
            number, steer = decoding.number, Steer()
            layout = Layout(decoding.streams, decoding.repack)
        lives[number].step_sink = keep
        generation = Generation(
            self.session,
            lambda: self.fit_prompt(messages, max_tokens, raw),
            lives,
            max_tokens=index + 1,
            steer=steer,
            layout=layout,
            streams=streams,
            extra_cells=extra_cells,
            hold=hold,
            negative=lambda settings: self.negative_tokens(settings, raw),
            companion=None if self.contrast is None else self.contrast.session,
            thinking_tags=self.thinking_tags(raw),
        )
        for _, event in generation:
            if isinstance(event, FinishedEvent) and event.error:
                raise SamplescopeError(event.error)
        if not kept:
            raise SamplescopeError("the step could not be rebuilt")
        return kept[0]
