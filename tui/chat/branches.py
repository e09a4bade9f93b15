"""A turn's reply tree as the screen sees it: where branches fork, and which is next.

Every branch of a turn is a `Reply` in one shared `tree` list (oldest first); a
branch forks from token `fork_at` of its `parent`. Pure functions, no widget.
"""

from __future__ import annotations

from tui.chat.reply import Reply


def _path(reply: Reply) -> list[Reply]:
    """The branch and its ancestors, the branch first."""
    path = [reply]
    while path[-1].parent is not None:
        path.append(path[-1].parent)
    return path


def divergence(a: Reply, b: Reply) -> int:
    """The index of the first token where branches `a` and `b` of one turn part
    (tokens before it are shared); for a == b, the length of `a`."""
    if a is b:
        return len(a.tokens)
    path_a, path_b = _path(a), _path(b)
    on_b = {id(branch) for branch in path_b}
    common = next((branch for branch in path_a if id(branch) in on_b), None)
    forks = []
    for path in (path_a, path_b):
        if common is None or path[0] is common:
            continue
        child = path[path.index(common) - 1]
        forks.append(child.fork_at or 0)
    return min(forks) if forks else 0


def fork_counts(reply: Reply) -> dict[int, int]:
    """For each token of `reply` where other branches of its turn part from it:
    how many branches go on from there (itself included)."""
    counts: dict[int, int] = {}
    for other in reply.tree:
        if other is not reply:
            at = divergence(reply, other)
            counts[at] = counts.get(at, 1) + 1
    return counts


def ghost_forks(reply: Reply) -> list[int]:
    """The token indexes where `reply` itself went back from a rejected attempt (a
    ghost branch forking from its tokens there), in order."""
    forks = {
        other.fork_at or 0
        for other in reply.tree
        if other.is_ghost and other is not reply and divergence(reply, other) == other.fork_at
    }
    return sorted(forks)


def sibling(reply: Reply, delta: int) -> Reply:
    """The branch `delta` places after `reply` in its turn's tree, wrapping around."""
    tree = reply.tree
    return tree[(tree.index(reply) + delta) % len(tree)]


def branch_label(reply: Reply) -> str:
    """Where a branch sits in its tree, e.g. "branch 2 of 3, from branch 1 at token 4"."""
    tree = reply.tree
    label = f"branch {tree.index(reply) + 1} of {len(tree)}"
    if reply.parent is not None and reply.parent in tree:
        number = tree.index(reply.parent) + 1
        label += f", from branch {number} at token {(reply.fork_at or 0) + 1}"
    if reply.is_ghost:
        label += " (rejected: it held a banned phrase)"
    return label
