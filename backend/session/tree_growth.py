"""Growing an explored tree, a strategy of the loop: a batch of nodes a step, each forked
from its parent.

Growing a tree is a strategy of the loop (`backend.session.strategy`): each step it
asks for a batch of nodes, a node's sequence forked from its parent's by `seq_cp` (its
parent's last child takes the parent's sequence over), and the loop decodes them in
one `llama_decode`, one token per sequence, as many at once as the model's sequences
allow. `lockstep=False` decodes the same nodes in the same order, one per
`llama_decode` (the reference the bench measures against): the memory's cells are then
laid out the same, which matters because llama.cpp's numbers depend on where a
sequence's cells lie, not only on how tokens were batched. The sequences are scheduled
so that a tree of depth D always fits in D sequences (the point's own and D - 1 more):
wider batches when more are free.

Each node's probability is the `prob_after` of its token in the step's record, the
sampler run on the node's logits and history (prompt, reply and path) with a sampler
that continues from its parent's step, as a branch forced down that path would. At the
root it is a fresh sampler resumed at the point, so a root child's probability is what
"what if" shows as `after` for that candidate at that step.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

import numpy as np

from backend.session.explore_tree import MAX_NODES, ExploreError, Tree, TreeNode, TreeShape
from backend.session.run import StepInput
from backend.session.session import Session
from backend.session.strategy import Decodes, Extend, Plan, run_quietly
from sampling.records import Step
from sampling.sampler import DEFAULT_CANDIDATES, Sampler, SamplerState
from sampling.settings.record import SamplerSettings


def tree_streams(shape: TreeShape, n_seq_max: int) -> int:
    """How many sequences (KV streams) a tree of `shape` decodes in: one per level at
    least, one per decoded node at most (the widest batches), up to the model's limit.
    Each stream holds the point's history and a path (at least 256 cells: llama.cpp's
    smallest), and a node's copy of its parent copies the whole stream."""
    return min(n_seq_max, max(shape.depth, shape.most_decoded + 1))


@dataclass(eq=False, slots=True)
class _Node:
    """A node while the tree grows."""

    token: int
    prob: float
    logprob_path: float
    level: int
    decodable: bool
    ends: bool
    parent: _Node | None = None
    seq_id: int | None = None
    state: SamplerState | None = None
    """The sampler's state after this node's step (where its children's steps start)."""
    kids: list[_Node] = field(default_factory=list)
    remaining: int = 0
    """How many of its decodable kids are not decoded yet."""

    def frozen(self, text_of: dict[int, str]) -> TreeNode:
        return TreeNode(
            self.token,
            text_of[self.token],
            self.prob,
            self.logprob_path,
            tuple(kid.frozen(text_of) for kid in self.kids),
            self.ends,
        )


def kept_children(step: Step, shape: TreeShape) -> list[tuple[int, float]]:
    """The (token, probability) children a step gives: its kept candidates by
    descending probability (ties: lower id first), at most `width`, stopping once
    their probabilities reach `mass`."""
    table = step.table
    rows = [
        (float(prob), int(token))
        for token, prob in zip(table.token_ids, table.prob_after, strict=True)
        if prob > 0.0
    ]
    rows.sort(key=lambda row: (-row[0], row[1]))
    chosen: list[tuple[int, float]] = []
    total = 0.0
    for prob, token in rows:
        if len(chosen) >= shape.width or total >= shape.mass:
            break
        chosen.append((token, prob))
        total += prob
    return chosen


class _Grower:
    """Grows one tree on a session whose sequence 0 holds the point's history."""

    def __init__(
        self,
        session: Session,
        settings: SamplerSettings,
        shape: TreeShape,
        index: int,
        cancel: threading.Event | None,
        streams: int,
    ) -> None:
        self.session = session
        self.model = session.model
        self.memory = session.memory
        self.shape = shape
        self.index = index
        self.cancel = cancel
        self.sampler = Sampler(
            settings,
            vocab_size=self.model.n_vocab,
            n_candidates=max(DEFAULT_CANDIDATES, shape.width),
            vocabulary=self.model,
        )
        self.free = list(range(streams - 1, 0, -1))
        self.ended: list[int] = []
        """Sequences given back since the last step (the next plan ends them)."""
        self.stopped = False

    # ---- steps --------------------------------------------------------------------

    def expand(self, node: _Node, logits: object, uniform: float | None = None) -> None:
        """Run the node's step on its logits and make its kids."""
        sampler = self.sampler
        if node.parent is not None:
            assert node.parent.state is not None
            sampler.restore(node.parent.state)
        sampler.resume(self.index + node.level)
        history = self.memory.tokens(0 if node.seq_id is None else node.seq_id)
        step = sampler.sample(logits, history, uniform=uniform)
        node.state = sampler.state()
        level = node.level + 1
        for token, prob in kept_children(step, self.shape):
            ends = self.model.is_eog(token)
            kid = _Node(
                token,
                prob,
                node.logprob_path + math.log(prob),
                level,
                decodable=level < self.shape.depth and not ends,
                ends=ends,
                parent=node,
            )
            node.kids.append(kid)
        node.remaining = sum(kid.decodable for kid in node.kids)

    # ---- sequences ----------------------------------------------------------------

    def release(self, node: _Node) -> None:
        """Give a node's sequence back (never sequence 0, the point's own)."""
        if node.seq_id:
            self.ended.append(node.seq_id)
            self.free.append(node.seq_id)
        node.seq_id = None

    def new_seqs(self, chunks: Sequence[tuple[_Node, Sequence[_Node]]]) -> int:
        """How many free sequences decoding these kids takes (a parent's last kid
        takes the parent's sequence over, the point's excepted)."""
        count = 0
        for parent, kids in chunks:
            takes_over = parent.level > 0 and len(kids) == parent.remaining
            count += len(kids) - int(takes_over)
        return count

    def fits(self, chunks: Sequence[tuple[_Node, Sequence[_Node]]]) -> bool:
        """Whether these kids can be decoded at once and leave enough sequences to
        finish the levels below them, one node at a time if need be."""
        kids = sum(len(kids) for _, kids in chunks)
        if kids > self.model.n_batch:
            return False
        level = chunks[0][1][0].level
        below = self.shape.depth - 1 - level  # decodable levels under the kids
        return len(self.free) - self.new_seqs(chunks) >= below

    def decode(
        self, chunks: Sequence[tuple[_Node, Sequence[_Node]]]
    ) -> Generator[Plan, list[np.ndarray], None]:
        """Have the kids decoded in one step, one token per sequence, and expand each."""
        batch: list[_Node] = []
        extend: list[Extend] = []
        for parent, kids in chunks:
            for kid in kids:
                assert parent.seq_id is not None
                parent.remaining -= 1
                if parent.remaining == 0 and parent.level > 0:
                    kid.seq_id = parent.seq_id  # takes the parent's sequence over
                    parent.seq_id = None
                    extend.append(Extend(kid.seq_id, (kid.token,)))
                else:
                    kid.seq_id = self.free.pop()
                    extend.append(Extend(kid.seq_id, (kid.token,), fork_from=parent.seq_id))
                batch.append(kid)
        ended, self.ended = self.ended, []
        logits = yield Plan(extend, ended)
        for kid, row in zip(batch, logits, strict=True):
            self.expand(kid, row)

    # ---- the schedule -------------------------------------------------------------

    def grow(self, group: list[_Node]) -> Generator[Plan, list[np.ndarray], None]:
        """Decode everything below the nodes of `group` (one level, each holding its
        sequence and knowing its kids), then give their sequences back: the strategy,
        one plan a step."""
        if self.cancel is not None and self.cancel.is_set():
            self.stopped = True
        for node in group:
            if node.remaining == 0 or self.stopped:
                self.release(node)
        group = [node for node in group if node.seq_id is not None]
        if not group:
            return
        everything = [(node, [k for k in node.kids if k.decodable]) for node in group]
        if self.fits(everything):
            yield from self.decode(everything)
            yield from self.grow([kid for _, kids in everything for kid in kids])
        elif len(group) > 1:
            for node in group:
                yield from self.grow([node])
        else:
            parent, todo = everything[0]
            while todo and not self.stopped:
                size = 1
                while size < len(todo) and self.fits([(parent, todo[: size + 1])]):
                    size += 1
                chunk, todo = todo[:size], todo[size:]
                yield from self.decode([(parent, chunk)])
                yield from self.grow(chunk)
                if self.cancel is not None and self.cancel.is_set():
                    self.stopped = True
            self.release(parent)


def check_shape(shape: TreeShape, n_seq_max: int) -> None:
    """Refuse a tree a model of `n_seq_max` sequences cannot grow (before any work).

    Raises:
        ExploreError: It is deeper than the sequences, or has too many nodes.
    """
    if shape.depth > n_seq_max:
        raise ExploreError(
            f"a tree of depth {shape.depth} needs {shape.depth} sequences at once: "
            f"this model holds {n_seq_max}"
        )
    if shape.most_nodes > MAX_NODES:
        raise ExploreError(
            f"a tree of width {shape.width} and depth {shape.depth} has up to "
            f"{shape.most_nodes} nodes: at most {MAX_NODES} are explored at once"
        )


def grow_tree(
    session: Session,
    given: StepInput,
    settings: SamplerSettings,
    shape: TreeShape,
    *,
    index: int = 0,
    uniform: float | None = None,
    lockstep: bool = True,
    cancel: threading.Event | None = None,
    streams: int | None = None,
) -> Tree:
    """The tree below a point whose history sequence 0 holds.

    Args:
        session: The model and its memory; sequence 0 holds `given.history`.
        given: The point's logits and history.
        settings: The sampler settings every node's step runs under.
        shape: How far to grow.
        index: How many reply tokens come before the point (min_tokens counts them).
        uniform: The uniform the root's step draws with (the stored step's own).
        lockstep: Decode nodes in lockstep batches (else one at a time).
        cancel: When set, stop (the nodes not expanded yet stay leaves).
        streams: The sequences the memory holds for the tree, sequence 0 the point's
            (None: `tree_streams`); the memory is made so if it is not.

    Raises:
        ExploreError: The tree would not fit the model's sequences or context.
        SamplescopeError: The model failed.
    """
    model, memory = session.model, session.memory
    history = tuple(given.history)
    check_shape(shape, model.n_seq_max)
    cells = len(history) + shape.depth
    if cells > model.n_ctx:
        raise ExploreError(
            f"a tree of depth {shape.depth} decodes up to {shape.depth} tokens after "
            f"the {len(history)} the point holds: {cells} do not fit the context of "
            f"{model.n_ctx}"
        )
    if streams is None:
        streams = tree_streams(shape, model.n_seq_max)
    memory.reserve(streams, cells)
    if list(memory.tokens(0)) != list(history):
        raise ExploreError("internal: the point's sequence does not hold its history")
    grower = _Grower(session, settings, shape, index, cancel, streams)
    root = _Node(-1, 1.0, 0.0, 0, decodable=True, ends=False, seq_id=0)
    started = session.clock()
    counts = Decodes()
    try:
        grower.expand(root, given.logits, uniform)
        run_quietly(memory, grower.grow([root]), lockstep=lockstep, counts=counts)
    finally:
        memory.drop_others()
        memory.reserve(1, 0)  # the tree's context is freed: the chat's comes back
    elapsed_ms = (session.clock() - started) * 1000
    tokens = {kid.token for kid in _every(root)}
    text_of = {
        token: model.token_bytes(token, special=True).decode("utf-8", "replace") for token in tokens
    }
    return Tree(
        tuple(kid.frozen(text_of) for kid in root.kids),
        history,
        shape,
        settings,
        counts.tokens,
        counts.decodes,
        elapsed_ms,
        lockstep,
        complete=not grower.stopped,
    )


def _every(node: _Node) -> list[_Node]:
    nodes: list[_Node] = []
    todo = list(node.kids)
    while todo:
        kid = todo.pop()
        nodes.append(kid)
        todo.extend(kid.kids)
    return nodes
