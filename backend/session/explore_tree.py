"""An explored tree: how far it grows, its nodes and the tree of a point.

From a point (the end of a prompt, or a token of a reply), the root's children are the
candidates the sampler chain keeps there, most probable first: at most `width` of
them, and no more once their probabilities reach `mass` (the child that crosses it is
kept, as top-p keeps it). Every child above the last level is decoded to give its own
children, down to `depth` levels; an end-of-generation token is a leaf.

These are the frozen records a tree is handed back as: `backend.session.tree_growth`
grows one on the loop, `backend.session.explore` at a point of a reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings

#: The most nodes one tree may have (width ** depth beyond it is refused).
MAX_NODES = 100_000


class ExploreError(SamplescopeError):
    """A tree cannot be explored (the message says why)."""


@dataclass(frozen=True, slots=True)
class TreeShape:
    """How far a tree grows.

    Attributes:
        depth: How many levels of tokens below the point (at least 1).
        width: The most children a node has (at least 1).
        mass: A node's children stop once their probabilities sum to this (the one
            crossing it is kept); 1.0: `width` alone decides.

    Raises:
        ExploreError: A value is out of range.
    """

    depth: int
    width: int
    mass: float = 1.0

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ExploreError(f"invalid depth={self.depth}: expected at least 1")
        if self.width < 1:
            raise ExploreError(f"invalid width={self.width}: expected at least 1")
        if not 0.0 < self.mass <= 1.0:
            raise ExploreError(f"invalid mass={self.mass}: expected 0 < mass <= 1")

    @property
    def most_nodes(self) -> int:
        """The most nodes a tree of this shape has (the root left out; counting stops
        past `MAX_NODES`)."""
        return _levels(self.width, self.depth)

    @property
    def most_decoded(self) -> int:
        """The most nodes decoded: every level but the last (counting stops past
        `MAX_NODES`)."""
        return _levels(self.width, self.depth - 1)


def _levels(width: int, depth: int) -> int:
    """width + width² + … + width^depth, or the first partial sum past `MAX_NODES`."""
    total, level = 0, 1
    for _ in range(depth):
        level *= width
        total += level
        if total > MAX_NODES:
            break
    return total


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One continuation token and the continuations below it.

    Attributes:
        token_id: The token.
        text: Its text (control tokens by name, undecodable bytes replaced).
        prob: Its probability in the distribution its parent's step draws from.
        logprob_path: The sum of the natural logs of the probabilities from the point
            down to this node (the path's log-probability under the chain).
        children: Its own continuations, most probable first (none for a leaf, an
            end-of-generation token, or a node a cancel left unexpanded).
        ends: Whether the token ends a generation.
    """

    token_id: int
    text: str
    prob: float
    logprob_path: float
    children: tuple[TreeNode, ...] = ()
    ends: bool = False

    def walk(self) -> list[TreeNode]:
        """This node and every node below it, depth first."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes


@dataclass(frozen=True, slots=True)
class Tree:
    """The continuations of a point.

    Attributes:
        children: The point's continuations, most probable first.
        history: The tokens before the point (prompt and reply so far).
        shape: How far it was grown.
        settings: The sampler settings every node's probabilities come from.
        decoded: How many nodes were decoded (one token each).
        decodes: How many `llama_decode` calls that took.
        elapsed_ms: The time growing the tree took, by the session's clock (the point's
            own rebuild left out).
        lockstep: Whether nodes were decoded in lockstep batches (else one at a time).
        complete: False when a cancel stopped it (some nodes left unexpanded).
    """

    children: tuple[TreeNode, ...]
    history: tuple[int, ...]
    shape: TreeShape
    settings: SamplerSettings
    decoded: int
    decodes: int
    elapsed_ms: float
    lockstep: bool
    complete: bool = True

    def nodes(self) -> list[TreeNode]:
        """Every node, depth first."""
        return [node for child in self.children for node in child.walk()]

    @property
    def node_count(self) -> int:
        """How many nodes the tree has."""
        return len(self.nodes())
