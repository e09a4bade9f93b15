"""What a model's memory holds, sequence by sequence, and how each token was computed.

llama.cpp's numbers depend on how tokens were batched (a token decoded alone differs
by up to ~1 in a logit from the same token inside a prefill chunk), so besides the
tokens each sequence holds, `Memory` keeps where the decode batch that computed each
position began. The cache-reuse rule of a new prompt and rewinding both use it to
compute a token again exactly the way it was computed before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from backend.chat.compare import common_prefix
from backend.llama.context import Layout
from backend.session.model import BatchEntry, Model

#: A context shift must save at least this many tokens of prefill (or reach the cache's end).
MIN_SHIFT_MATCH = 16
#: How many alignments of the cache against the prompt a context shift tries.
MAX_SHIFT_CANDIDATES = 256


def dropped_span(cache: Sequence[int], prompt: Sequence[int], start: int) -> int:
    """Length of a span after `start` whose removal lines the cache up with the prompt.

    Returns 0 when no removal gives a match of at least `MIN_SHIFT_MATCH` tokens (or
    one reaching the end of the cache).
    """
    cached = np.asarray(cache[start:], dtype=np.int64)
    wanted = np.asarray(prompt[start:], dtype=np.int64)
    if cached.size < 2 or wanted.size == 0:
        return 0
    best_gap, best_match = 0, 0
    for gap in (np.flatnonzero(cached[1:] == wanted[0]) + 1)[:MAX_SHIFT_CANDIDATES]:
        n = min(cached.size - int(gap), wanted.size)
        equal = cached[gap : gap + n] == wanted[:n]
        match = n if bool(equal.all()) else int(np.argmin(equal))
        if match > best_match:
            best_gap, best_match = int(gap), match
    if best_match >= min(MIN_SHIFT_MATCH, cached.size - best_gap):
        return best_gap
    return 0


_Books = tuple[dict[int, list[int]], dict[int, list[int]], dict[int, int]]


class Memory:
    """The model's memory as the loop sees it: each sequence's tokens and batches.

    Every change to the model's memory goes through here, so the bookkeeping and the
    memory never disagree. Sequence 0 is the chat's: it is kept across generations.
    A job of several sequences may decode in another context of the model (`reserve`):
    the chat's bookkeeping waits aside meanwhile, and comes back with its context.

    Args:
        model: The model whose memory this describes (its memory is cleared).
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self._tokens: dict[int, list[int]] = {}
        # Where the batch that computed each position began (the same value for one
        # batch's tokens of one sequence; a lockstep step starts at its own position).
        self._starts: dict[int, list[int]] = {}
        # How many leading tokens a forked sequence shares with sequence 0.
        self._shared: dict[int, int] = {}
        # The chat's bookkeeping while another context is in use.
        self._chat: _Books | None = None
        # Whether the sequences share their cells (else each has its own stream).
        self._unified = False
        self._forget()
        model.clear()

    # ---- reading ------------------------------------------------------------------

    def tokens(self, seq_id: int = 0) -> list[int]:
        """The tokens `seq_id` holds, position by position (a live list: do not change it)."""
        return self._tokens[seq_id]

    @property
    def cells_used(self) -> int:
        """Memory cells taken: the longest shared start counted once, plus the rest."""
        main = len(self._tokens[0])
        return main + sum(len(t) - self._shared[s] for s, t in self._tokens.items() if s)

    def fits(self, needed: Mapping[int, int]) -> bool:
        """Whether each sequence can take `needed[seq_id]` more tokens: within its own
        stream's cells, or within the cells every sequence shares."""
        if self._unified:
            return self.cells_used + sum(needed.values()) <= self.model.n_ctx
        cells = self.model.seq_cells
        return all(len(self._tokens[seq_id]) + n <= cells for seq_id, n in needed.items())

    def batch_of(self, pos: int, seq_id: int = 0) -> tuple[int, int]:
        """The [start, end) positions of the decode batch that computed position `pos`."""
        starts = self._starts[seq_id]
        start = starts[pos]
        end = pos + 1
        while end < len(starts) and starts[end] == start:
            end += 1
        return start, end

    # ---- changing -----------------------------------------------------------------

    def _forget(self) -> None:
        self._tokens = {0: []}
        self._starts = {0: []}
        self._shared = {}

    def _failed(self) -> None:
        # The model cleaned up after itself, unless its memory is gone altogether.
        if self.model.lost:
            self._forget()

    def clear(self) -> None:
        """Empty every sequence (back in the chat's context)."""
        self.reserve(1, 0)
        self._chat = None
        self._forget()
        self.model.clear()

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> None:
        """Decode `n_seqs` sequences of up to `cells` tokens each from now on (the
        model's `reserve`): one sequence in the model's own layout is the chat's context,
        several a lockstep context of their own.

        Raises:
            SamplescopeError: The model cannot make such a context (it is back in the
                chat's, and so are the books).
        """
        try:
            switch = self.model.reserve(n_seqs, cells, layout)
        except Exception:
            if self._chat is not None:
                self._tokens, self._starts, self._shared = self._chat
                self._chat, self._unified = None, False
            self._failed()
            raise
        if switch == "fresh":
            if self._chat is None:  # leaving the chat's context: its books wait
                self._chat = (self._tokens, self._starts, self._shared)
            self._forget()
        elif switch == "chat":
            if self._chat is None:
                self._forget()
            else:
                self._tokens, self._starts, self._shared = self._chat
                self._chat = None
        if switch != "kept":
            self._unified = layout is not None and not layout.streams

    def append(self, tokens: Sequence[int], seq_id: int = 0) -> None:
        """Decode `tokens` (at most n_batch) at the end of `seq_id`, in one batch."""
        held = self._tokens[seq_id]
        start = len(held)
        try:
            self.model.decode([BatchEntry(t, start + i, seq_id) for i, t in enumerate(tokens)])
        except Exception:
            self._failed()
            raise
        held.extend(tokens)
        self._starts[seq_id].extend([start] * len(tokens))

    def step(self, entries: Sequence[tuple[int, int]]) -> None:
        """One lockstep step: each (sequence, token) appended in order, all in one
        batch (one decode); each sequence's logits are the row of its last entry."""
        ends = {seq_id: len(held) for seq_id, held in self._tokens.items()}
        batch: list[BatchEntry] = []
        first: dict[int, int] = {}
        for seq_id, token in entries:
            batch.append(BatchEntry(token, ends[seq_id], seq_id))
            first.setdefault(seq_id, ends[seq_id])
            ends[seq_id] += 1
        try:
            self.model.decode(batch)
        except Exception:
            self._failed()
            raise
        for entry in batch:
            self._tokens[entry.seq_id].append(entry.token)
            self._starts[entry.seq_id].append(first[entry.seq_id])

    def prefill(self, tokens: Sequence[int], seq_id: int = 0) -> Iterator[int]:
        """Append a prompt's tokens to `seq_id` in n_batch chunks; yields how many are done.

        The one way every prefill runs (generation, replay and rewind alike), so a
        cache rebuilt later holds the same numbers.
        """
        n_batch = self.model.n_batch
        for start in range(0, len(tokens), n_batch):
            self.append(tokens[start : start + n_batch], seq_id)
            yield min(start + n_batch, len(tokens))

    def keep(self, n: int, seq_id: int = 0) -> int:
        """Truncate `seq_id` to its first `n` tokens; returns how many are kept."""
        held = self._tokens[seq_id]
        n = max(0, min(n, len(held)))
        if n == len(held):
            return n
        try:
            if not self.model.seq_rm(seq_id, n, -1):
                # A partial removal can fail on some memory types: start over.
                self.model.seq_rm(seq_id, -1, -1)
                n = 0
        except Exception:
            self._failed()
            raise
        del held[n:]
        del self._starts[seq_id][n:]
        if seq_id:
            self._shared[seq_id] = min(self._shared[seq_id], n)
        return n

    def remove_span(self, start: int, end: int) -> bool:
        """Take tokens [start, end) out of sequence 0 and shift the later ones back.

        Returns:
            False (nothing changed) when the memory cannot shift positions.
        """
        held = self._tokens[0]
        if not 0 <= start < end <= len(held):
            return False
        try:
            if not self.model.seq_rm(0, start, end):
                return False
            if not self.model.seq_shift(0, end, -1, start - end):
                self.model.seq_rm(0, start, -1)  # cannot shift: drop the rest too
                del held[start:]
                del self._starts[0][start:]
                return False
        except Exception:
            self._failed()
            raise
        del held[start:end]
        shift = end - start
        starts = self._starts[0]
        starts[start:] = [max(start, s - shift) if s >= start else s for s in starts[end:]]
        return True

    def open(self, seq_id: int) -> None:
        """Make `seq_id` (not 0) an empty sequence of its own (emptied first): a prompt of
        its own goes in next (a negative prompt beside the reply)."""
        self.model.seq_rm(seq_id, -1, -1)
        self._tokens[seq_id] = []
        self._starts[seq_id] = []
        self._shared[seq_id] = 0

    def fork(self, seq_id: int, src: int = 0) -> None:
        """Make `seq_id` (emptied first) share everything `src` holds."""
        self.model.seq_rm(seq_id, -1, -1)
        self.model.seq_cp(src, seq_id, 0, -1)
        self._tokens[seq_id] = list(self._tokens[src])
        self._starts[seq_id] = list(self._starts[src])
        self._shared[seq_id] = len(self._tokens[src])

    def drop(self, seq_id: int) -> None:
        """Forget sequence `seq_id` (not 0) altogether."""
        if seq_id and seq_id in self._tokens:
            self.model.seq_rm(seq_id, -1, -1)
            del self._tokens[seq_id], self._starts[seq_id], self._shared[seq_id]

    def drop_others(self) -> None:
        """Forget every sequence but 0 (what a generation left that was not run to
        its end)."""
        for seq_id in [s for s in self._tokens if s]:
            self.drop(seq_id)

    def reuse(self, prompt: list[int]) -> int:
        """Keep the longest cached prefix of `prompt` in sequence 0, less what must be
        computed again.

        The last prompt token is always computed again (its logits are sampled). When
        the cache holds the whole prompt (a regenerate), the batch that computed the
        last token is run again as it was, so the first logits equal the first run's
        and a seed gives the same reply whether the prompt was cached or not. When old
        turns were dropped the prompt is the cache minus a span: that span is taken
        out (a context shift) instead of prefilling everything again.

        Returns:
            How many prompt tokens sequence 0 now holds.
        """
        held = self._tokens[0]
        common = common_prefix(held, prompt)
        if common < len(held) and common < len(prompt) - 1:
            gap = dropped_span(held, prompt, common)
            if gap and self.remove_span(common, common + gap):
                common = common_prefix(held, prompt)
        keep = min(common, len(prompt) - 1)
        if common == len(prompt):
            start, end = self.batch_of(len(prompt) - 1)
            if end == len(prompt):
                keep = start
        return self.keep(keep)
