"""Conversation → prompt tokens: the chat template, safe tokenization, context fitting.

Template markers become special tokens; message text never does. Runs of plain text
(template text next to message text) are tokenized together, exactly as llama.cpp
tokenizes a whole rendered prompt with special parsing on — so for ordinary text the
ids equal llama-cpp-python's own, and a user typing ``<|im_end|>`` gets plain-text
tokens instead of a forged turn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from backend.chat.protocol import ChatMessage
from backend.chat.template import ChatTemplate, SpecialSplitter
from sampling.errors import SamplescopeError

RUN_CACHE = 1024
"""How many tokenized runs of plain text a prompt builder keeps (the latest used)."""


class PromptTooLongError(SamplescopeError):
    """Even the system prompt and an empty last message do not fit the context."""


class Tokenizer(Protocol):
    """What the prompt builder needs from the runtime."""

    @property
    def bos(self) -> int: ...

    @property
    def add_bos(self) -> bool: ...

    def tokenize(self, text: str, *, special: bool) -> list[int]: ...

    def token_bytes(self, token: int, *, special: bool = False) -> bytes: ...

    def special_texts(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    """A prompt that fits the context.

    Attributes:
        tokens: The prompt's token ids.
        messages: The messages actually rendered.
        dropped: How many of the oldest non-system messages were left out.
        truncated_tokens: How many tokens were cut from the start of the last message.
    """

    tokens: list[int]
    messages: tuple[ChatMessage, ...]
    dropped: int
    truncated_tokens: int


class PromptBuilder:
    """Turns messages into tokens with one model's chat template.

    Args:
        tokenizer: The model's tokenizer (a `LlamaRuntime`).
        template: The model's chat template (ChatML if it has none).
    """

    def __init__(self, tokenizer: Tokenizer, template: ChatTemplate) -> None:
        self.tokenizer = tokenizer
        self.template = template
        self._splitter = SpecialSplitter(tokenizer.special_texts())
        self._special_ids: dict[str, list[int]] = {}
        self._run_ids: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._run_lock = threading.Lock()  # a prompt may be built off the generation's thread

    def tokens(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt's token ids, ending with the assistant's generation prompt."""
        ids: list[int] = []
        run: list[str] = []

        def flush() -> None:
            if run:
                ids.extend(self._run_tokens("".join(run)))
                run.clear()

        for segment in self.template.segments(messages, add_generation_prompt=True):
            if segment.message is not None:
                run.append(segment.text)
                continue
            for piece, special in self._splitter.split(segment.text):
                if special:
                    flush()
                    marker = self._special_ids.get(piece)
                    if marker is None:
                        marker = self.tokenizer.tokenize(piece, special=True)
                        self._special_ids[piece] = marker
                    ids.extend(marker)
                else:
                    run.append(piece)
        flush()
        return self._with_bos(ids)

    def _run_tokens(self, text: str) -> tuple[int, ...]:
        """`text` (a run between special markers) tokenized, from a cache of the last
        `RUN_CACHE` runs: every turn's prompt holds the earlier turns' runs again, and
        `fit` tokenizes several candidate prompts of the same messages."""
        with self._run_lock:
            cached = self._run_ids.get(text)
            if cached is not None:
                self._run_ids.move_to_end(text)
                return cached
        tokens = tuple(self.tokenizer.tokenize(text, special=False))
        with self._run_lock:
            self._run_ids[text] = tokens
            if len(self._run_ids) > RUN_CACHE:
                self._run_ids.popitem(last=False)
        return tokens

    def raw_tokens(self, text: str) -> list[int]:
        """`text` alone, without the chat template (its markers are not parsed)."""
        return self._with_bos(self.tokenizer.tokenize(text, special=False))

    def _with_bos(self, ids: list[int]) -> list[int]:
        bos = self.tokenizer.bos
        if self.tokenizer.add_bos and bos >= 0 and (not ids or ids[0] != bos):
            return [bos, *ids]
        return ids

    def fit(self, messages: Sequence[ChatMessage], budget: int) -> FittedPrompt:
        """The prompt of `messages` in at most `budget` tokens.

        Drops the oldest non-system messages first (never the system prompt, never the
        last message; a reply left without its question goes too), then cuts the
        oldest tokens of the last message.

        Raises:
            PromptTooLongError: Nothing can make it fit.
        """
        full = self.tokens(messages)
        if len(full) <= budget:
            return FittedPrompt(full, tuple(messages), 0, 0)
        system = [m for m in messages[:1] if m.role == "system"]
        rest = list(messages[len(system) :])
        if not rest:
            raise PromptTooLongError(
                f"the system prompt alone takes {len(full)} tokens; the context allows {budget}"
            )

        def kept_after(drop: int) -> list[ChatMessage]:
            tail = rest[drop:]
            while len(tail) > 1 and tail[0].role != "user":
                tail = tail[1:]  # a reply without its question is dropped with it
            return system + tail

        # Binary search for the fewest dropped messages that fit.
        low, high = 1, len(rest) - 1
        best: list[int] | None = None
        best_messages: list[ChatMessage] = []
        while low <= high:
            middle = (low + high) // 2
            candidate = kept_after(middle)
            ids = self.tokens(candidate)
            if len(ids) <= budget:
                best, best_messages = ids, candidate
                high = middle - 1
            else:
                low = middle + 1
        if best is not None:
            return FittedPrompt(best, tuple(best_messages), len(messages) - len(best_messages), 0)
        return self._truncate_last(system, rest[-1], budget, len(messages) - len(system) - 1)

    def _truncate_last(
        self, system: list[ChatMessage], last: ChatMessage, budget: int, dropped: int
    ) -> FittedPrompt:
        content_ids = self.tokenizer.tokenize(last.content, special=False)
        overhead = len(self.tokens([*system, ChatMessage(last.role, "")]))
        if overhead > budget:
            raise PromptTooLongError(
                f"the system prompt and the chat template take {overhead} tokens;"
                f" the context allows {budget}"
            )
        cut = max(0, len(content_ids) - (budget - overhead))
        for _ in range(8):  # re-tokenizing the cut text can merge differently: retry
            data = b"".join(self.tokenizer.token_bytes(t) for t in content_ids[cut:])
            message = ChatMessage(last.role, data.decode("utf-8", errors="ignore"))
            ids = self.tokens([*system, message])
            if len(ids) <= budget:
                return FittedPrompt(ids, (*system, message), dropped, cut)
            cut = min(len(content_ids), cut + len(ids) - budget)
        raise PromptTooLongError(f"the last message cannot be cut to fit {budget} tokens")
