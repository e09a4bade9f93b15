"""Explore the continuations of a point of a reply: the point rebuilt, then its tree grown.

The point (the end of a prompt, or a token of a reply) is rebuilt as what-if rebuilds
a step, and the tree of the candidates the chain keeps there (`backend.session.
explore_tree`) is grown below it on the loop (`backend.session.tree_growth`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from backend.chat.compare import common_prefix
from backend.chat.events import Decoding
from backend.chat.protocol import ChatMessage
from backend.session.backend import SessionBackend
from backend.session.explore_tree import ExploreError, Tree, TreeShape
from backend.session.one_distribution import refuse_second_distribution
from backend.session.tree_growth import check_shape, grow_tree, tree_streams
from sampling.settings.record import SamplerSettings

#: Sequences a model loaded for exploring holds (`samplescope explore`, the bench): its
#: widest lockstep batch is one fewer, and a tree is at most this deep.
EXPLORE_SEQ_MAX = 64


def explore(
    backend: SessionBackend,
    messages: Sequence[ChatMessage],
    prefix: Sequence[int],
    settings: SamplerSettings,
    shape: TreeShape,
    *,
    max_tokens: int = 512,
    raw: bool = False,
    decoding: Decoding | None = None,
    uniform: float | None = None,
    lockstep: bool = True,
    cancel: threading.Event | None = None,
) -> Tree:
    """The tree of continuations at token `len(prefix)` of a reply to `messages`.

    The point is rebuilt as what-if rebuilds a step (`SessionBackend.step_input`: the
    prompt prefilled and the reply's tokens decoded as its generation decoded them),
    so the root's step is the one the reply's sampler saw. A reply decoded beside
    siblings (`decoding`) is rebuilt so for the root; the tree then grows from its
    tokens decoded alone.

    Args:
        backend: The model.
        messages: The conversation the reply answers.
        prefix: The reply's tokens before the point (none: the prompt's end).
        settings: The sampler settings of every step.
        shape: How far to grow.
        max_tokens: The reply's length limit (it decides how the prompt is fitted).
        raw: Feed the last message without the chat template.
        decoding: How the reply was decoded beside siblings (None: alone).
        uniform: The uniform the root's step draws with (the stored step's own).
        lockstep: Decode nodes in lockstep batches (else one at a time).
        cancel: When set, stop (the nodes not expanded yet stay leaves).

    Raises:
        ExploreError: The tree would not fit, or `settings` need a second distribution
            (guidance, contrast: `refuse_second_distribution`).
        SamplescopeError: The point cannot be rebuilt or the model failed.
    """
    check_shape(shape, backend.model.n_seq_max)  # before the point is rebuilt
    refuse_second_distribution(settings, "explore", ExploreError)
    streams = tree_streams(shape, backend.model.n_seq_max)
    given = backend.step_input(
        messages,
        prefix,
        max_tokens=max_tokens,
        raw=raw,
        decoding=decoding,
        streams=streams,
        extra_cells=shape.depth,
        hold=True,
    )
    memory = backend.session.memory
    memory.reserve(streams, len(given.history) + shape.depth)
    held = memory.tokens(0)
    if list(held) != list(given.history):
        # Rebuilt beside siblings (sequence 0 is another sibling's, or another layout's):
        # the point's own prompt prefilled and its tokens decoded alone after what they
        # share, as a generation decodes them.
        kept = memory.keep(common_prefix(held, given.history))
        n_prompt = len(given.history) - len(prefix)
        for _ in memory.prefill(list(given.history[kept:n_prompt])):
            pass
        for token in given.history[max(kept, n_prompt) :]:
            memory.append([token])
    return grow_tree(
        backend.session,
        given,
        settings,
        shape,
        index=len(prefix),
        uniform=uniform,
        lockstep=lockstep,
        cancel=cancel,
        streams=streams,
    )
