"""A deterministic fake `Model` for UI tests and snapshots, and the backend over it.

`FakeModel` implements only the `backend.session.model.Model` protocol: a small
vocabulary of words whose logits are derived from a hash of the last few token ids
of a sequence, so the same context always gives the same distribution, spread enough
that top-k / top-p / min-p cutoffs show on screen. `FakeBackend` is the one
generation loop (`SessionBackend`) over it, so the app's tests run the real loop and
the real samplers: every `Step` is a real record, and a reply ends with the
end-of-generation token as a real model's does.

A reply's first `thinking` tokens may be recorded as thinking (`Step.section`), as a
thinking model's loop records them: the app's thinking views are tried on the fake.

Hooks for tests: a per-token and per-prefill-chunk delay, and a pause after a given
number of reply tokens or prefill chunks (the model blocks until `resume` is set or
the generation is cancelled), so a snapshot can catch the app mid-reply.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from backend.chat.events import TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings, ModelInfo
from backend.chat.template import ChatTemplate
from backend.llama.context import Layout, Switch
from backend.llama.pieces import visible_piece
from backend.session.backend import SessionBackend
from backend.session.loop import Event, Generation
from backend.session.model import BatchEntry
from backend.session.run import Steer
from sampling.sections import Section

EOS_ID = 0

FAKE_VOCAB: tuple[str, ...] = (
    "</s>",
    " the",
    " a",
    " cat",
    " dog",
    " sat",
    " on",
    " mat",
    " and",
    " then",
    " it",
    " was",
    " very",
    " happy",
    " sad",
    " small",
    " big",
    " red",
    " blue",
    " tree",
    " house",
    " river",
    " ran",
    " jumped",
    " slept",
    " saw",
    " bird",
    " sky",
    " in",
    " of",
    " to",
    " with",
    ".",
    ",",
    "!",
    "?",
    "\n",
    " I",
    " you",
    " we",
    " they",
    " like",
    " think",
    " maybe",
    " not",
    " all",
    " some",
    " [bold]",
    " tokens",
    " probability",
    " sample",
    " model",
    " next",
    " word",
    " chosen",
    " cut",
    " kept",
    " 42",
    " é",
    " 猫",
    " 🙂",
    "  ",
    " ok",
    " yes",
)
"""The fake vocabulary: id = index. Id 0 ends a reply; " [bold]" tests that markup
stays literal."""

_CONTEXT_WINDOW = 3
_NEWLINE_ID = 36
_ROLE_IDS = {"system": 37, "user": 38, "assistant": 39}
_OTHER_ROLE_ID = 40
_MARKERS = {f"<|{role}|>": token for role, token in _ROLE_IDS.items()}
_ASSISTANT_START = (_NEWLINE_ID, _ROLE_IDS["assistant"], _NEWLINE_ID)

FAKE_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '\\n<|' + message['role'] + '|>\\n' }}{{ message['content'] }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '\\n<|assistant|>\\n' }}{% endif %}"
)
"""Each turn: a newline, its role's marker, a newline, its words; then the
assistant's marker between newlines."""

_WORDS = re.compile(r"\n|[^\s]+")


class FakeModel:
    """A deterministic word-level `Model` (see the module doc).

    Args:
        token_delay: Seconds to sleep before each sampled token's logits.
        prefill_chunk: Prompt tokens per prefill chunk (`n_batch`).
        prefill_delay: Seconds to sleep per prefill chunk.
        pause_after_tokens: Block when decoding this many tokens of a reply.
        pause_after_chunks: Block after this many prefill chunks (before the next).
        n_ctx: The context size.
        min_reply_tokens: End-of-reply is impossible before this many tokens.
        flat_at: The reply token (0-based) whose logits are all equal: a known
            entropy spike and unlikely pick (the plots' tests).
        context_window: How many of a sequence's last ids its logits depend on (the
            whole sequence, for a negative prompt's distribution to differ from the
            reply's all along: guidance's tests).
    """

    n_seq_max = 4
    bos = -1
    add_bos = False
    lost = False
    repack = False

    def __init__(
        self,
        *,
        token_delay: float = 0.0,
        prefill_chunk: int = 8,
        prefill_delay: float = 0.0,
        pause_after_tokens: int | None = None,
        pause_after_chunks: int | None = None,
        n_ctx: int = 2048,
        min_reply_tokens: int = 12,
        flat_at: int | None = None,
        context_window: int = _CONTEXT_WINDOW,
    ) -> None:
        if prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be >= 1, got {prefill_chunk}")
        self.n_ctx = n_ctx
        self.n_vocab = len(FAKE_VOCAB)
        self.n_batch = prefill_chunk
        self.token_delay = token_delay
        self.prefill_delay = prefill_delay
        self.pause_after_tokens = pause_after_tokens
        self.pause_after_chunks = pause_after_chunks
        self.min_reply_tokens = min_reply_tokens
        self.flat_at = flat_at
        self.context_window = context_window
        self.paused = threading.Event()
        """Set while a decode is blocked at a pause point."""
        self.resume = threading.Event()
        """Set it to let a paused decode go on."""
        self.cancel: threading.Event | None = None
        """The running generation's cancel flag (a pause ends when it is set)."""
        self._seqs: dict[int, list[int]] = {}
        self._rows: list[int] = []
        self._chunks = 0

    # ---- tokens -------------------------------------------------------------------

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Newlines and words; with `special`, a role marker is its role's token."""
        if special and text in _MARKERS:
            return [_MARKERS[text]]
        return [_NEWLINE_ID if word == "\n" else _word_id(word) for word in _WORDS.findall(text)]

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """The bytes of a token (the end token's only with `special`)."""
        if token == EOS_ID and not special:
            return b""
        return FAKE_VOCAB[token].encode() if 0 <= token < len(FAKE_VOCAB) else b""

    def shown_piece(self, token: int) -> str:
        """The visible form of a token (for the probability panel)."""
        if 0 <= token < len(FAKE_VOCAB):
            return visible_piece(FAKE_VOCAB[token])
        return f"#{token}"

    def special_texts(self) -> list[str]:
        """The role markers."""
        return list(_MARKERS)

    def is_eog(self, token: int) -> bool:
        """Id 0 ends a reply."""
        return token == EOS_ID

    @property
    def eog_ids(self) -> tuple[int, ...]:
        """Id 0 alone."""
        return (EOS_ID,)

    # ---- decoding -----------------------------------------------------------------

    def decode(self, batch: Sequence[BatchEntry]) -> None:
        """Append the batch's tokens to their sequences: a batch holding several tokens
        of one sequence is a prefill chunk (a pause after some comes before the next
        one); a reply's token may pause."""
        seqs = [entry.seq_id for entry in batch]
        prefill = len(batch) > len(set(seqs))
        if prefill and self._chunks == self.pause_after_chunks:
            self._pause()
        for entry in batch:
            held = self._seqs.setdefault(entry.seq_id, [])
            if entry.pos != len(held):
                raise AssertionError(f"fake: position {entry.pos} after {len(held)} tokens")
            held.append(entry.token)
        self._rows = seqs
        if prefill:
            self._chunks += 1
            self._sleep(self.prefill_delay)
        elif self.pause_after_tokens in {self.reply_index(self._seqs[seq]) for seq in seqs}:
            self._pause()

    def logits(self, row: int = -1) -> npt.NDArray[np.float32]:
        """The fake logits of the last batch's row `row` (a fresh array)."""
        self._sleep(self.token_delay)
        context = self._seqs[self._rows[row]]
        values = context_logits(context, self.context_window)
        index = self.reply_index(context)
        if index == self.flat_at:
            values[:] = 0.0
        if index < self.min_reply_tokens:
            values[EOS_ID] = -1e4
        else:
            values[EOS_ID] = -4.0 + 0.25 * (index - self.min_reply_tokens)
        return values

    @staticmethod
    def reply_index(context: Sequence[int]) -> int:
        """How many tokens follow the last assistant marker (all of them without one)."""
        for start in range(len(context) - 3, -1, -1):
            if tuple(context[start : start + 3]) == _ASSISTANT_START:
                return len(context) - start - 3
        return len(context)

    # ---- memory -------------------------------------------------------------------

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """Drop a sequence's tail (a span in the middle cannot be: False)."""
        for key in list(self._seqs) if seq < 0 else [seq]:
            held = self._seqs.setdefault(key, [])
            if 0 <= p1 < len(held) and p0 > 0:
                return False
            del held[max(p0, 0) : None if p1 < 0 else p1]
        return True

    @property
    def seq_cells(self) -> int:
        """Every sequence may hold the whole context."""
        return self.n_ctx

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """One memory for every layout: nothing changes."""
        return "kept"

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """`dst` holds `src`'s tokens."""
        self._seqs[dst] = list(self._seqs.get(src, [])[p0 : None if p1 < 0 else p1])

    def seq_shift(self, seq: int, p0: int, p1: int, delta: int) -> bool:
        """The fake cannot shift positions."""
        return False

    def clear(self) -> None:
        """Forget every sequence."""
        self._seqs.clear()

    def recover(self) -> None:
        """Never lost: nothing to do."""

    # ---- hooks --------------------------------------------------------------------

    def _pause(self) -> None:
        self.paused.set()
        while not self.resume.wait(0.02):
            if self.cancel is not None and self.cancel.is_set():
                break
        self.paused.clear()

    def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self.cancel is None:
            time.sleep(seconds)
        else:
            self.cancel.wait(seconds)


def context_logits(
    context: Sequence[int], window: int = _CONTEXT_WINDOW
) -> npt.NDArray[np.float32]:
    """The fake logits after `context`: a function of its last `window` ids only."""
    key = ",".join(str(i) for i in context[-window:]).encode()
    seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(len(FAKE_VOCAB)) * 2.0
    # A few strong favourites make the distribution peaked, like a real model's.
    favourites = rng.choice(np.arange(1, len(FAKE_VOCAB)), size=3, replace=False)
    values[favourites] += np.array([3.0, 2.2, 1.5])
    values[EOS_ID] = -4.0
    return values.astype(np.float32)


class _Thinking(Generation):
    """A generation whose replies' first `thinking` tokens are recorded as thinking."""

    thinking = 0

    def __iter__(self) -> Iterator[Event]:
        for number, event in super().__iter__():
            if isinstance(event, TokenEvent) and event.index < self.thinking:
                step = replace(event.step, section=Section.THINKING)
                event = replace(event, step=step)
            yield number, event


class FakeBackend(SessionBackend):
    """The one generation loop over a `FakeModel` (keywords: `FakeModel`'s).

    Args:
        clock: Time source for the stats (inject a fake one for fixed figures).
        thinking: Each reply's first so many tokens are its thinking (0: none).
        path: The file it says it was loaded from (a contrast model's, say).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.perf_counter,
        thinking: int = 0,
        path: str = "<fake>",
        **options: object,
    ) -> None:
        self.thinking = thinking
        self.fake = FakeModel(**options)  # type: ignore[arg-type]
        info = ModelInfo(
            name="fake-words",
            path=path,
            n_ctx=self.fake.n_ctx,
            n_threads=1,
            n_vocab=len(FAKE_VOCAB),
            n_batch=self.fake.n_batch,
        )
        super().__init__(self.fake, ChatTemplate(FAKE_TEMPLATE), info, clock=clock)

    @property
    def paused(self) -> threading.Event:
        """Set while the model is blocked at a pause point."""
        return self.fake.paused

    @property
    def resume(self) -> threading.Event:
        """Set it to let a paused model go on."""
        return self.fake.resume

    @property
    def pause_after_tokens(self) -> int | None:
        """Block when decoding this many tokens of a reply."""
        return self.fake.pause_after_tokens

    @pause_after_tokens.setter
    def pause_after_tokens(self, count: int | None) -> None:
        self.fake.pause_after_tokens = count

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of a token (a saved reply's text, token by token)."""
        return self.fake.token_bytes(token_id)

    def token_piece(self, token_id: int) -> str:
        """The visible form of a token (for the probability panel)."""
        return self.fake.shown_piece(token_id)

    def encode_text(self, text: str) -> list[int]:
        """The ids of a text made of vocabulary entries, longest entry first (no match: [])."""
        ids: list[int] = []
        rest = text
        while rest:
            match = max(
                (i for i, entry in enumerate(FAKE_VOCAB) if i and rest.startswith(entry)),
                key=lambda i: len(FAKE_VOCAB[i]),
                default=None,
            )
            if match is None:
                return []
            ids.append(match)
            rest = rest[len(FAKE_VOCAB[match]) :]
        return ids

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
        """`SessionBackend.generate_many`, the model told the cancel flag (its pauses
        and delays end when it is set)."""
        self.fake.cancel = cancel
        generation = super().generate_many(
            messages,
            lives,
            max_tokens=max_tokens,
            cancel=cancel,
            raw=raw,
            steer=steer,
            rewindable=rewindable,
            layout=layout,
        )
        if self.thinking:
            generation.__class__ = _Thinking  # the same run, its first tokens thinking
            generation.thinking = self.thinking  # type: ignore[attr-defined]
        return generation


def _word_id(word: str) -> int:
    # Prompt words map onto the vocabulary so the penalties have something to see.
    return 1 + zlib.crc32(word.encode()) % (len(FAKE_VOCAB) - 1)
