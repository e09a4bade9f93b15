"""Where the branches of a reply's turn part, as the transcript marks them."""

from __future__ import annotations

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tui.chat.branches import branch_label, divergence, fork_counts, sibling
from tui.chat.reply import Reply


def _branch(parent: Reply | None, fork_at: int | None, length: int) -> Reply:
    tree = parent.tree if parent is not None else []
    reply = Reply(seed=1, settings=DEFAULT_CHAT_SETTINGS, parent=parent, fork_at=fork_at, tree=tree)
    reply.tokens = [object()] * length  # type: ignore[list-item]  # only counted here
    return reply


def test_branches_part_where_they_fork_and_are_counted_there() -> None:
    root = _branch(None, None, 10)
    a = _branch(root, 4, 9)  # from token 4 of the root
    b = _branch(a, 6, 8)  # from token 6 of a
    c = _branch(root, 4, 7)  # a second branch at the root's token 4
    assert root.tree == [root, a, b, c]
    assert divergence(root, a) == divergence(a, root) == 4
    assert divergence(a, b) == 6 and divergence(root, b) == 4
    assert divergence(b, c) == 4 and divergence(root, root) == 10
    assert fork_counts(root) == {4: 4}
    assert fork_counts(b) == {4: 3, 6: 2}
    assert sibling(root, -1) is c and sibling(c, 1) is root and sibling(a, 1) is b
    assert branch_label(b) == "branch 3 of 4, from branch 2 at token 7"
    assert branch_label(root) == "branch 1 of 4"
