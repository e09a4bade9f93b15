"""The explore screen on the fake backend: `x` grows the tree at the selected token,
`e` grows deeper, `s` ranks the paths, `b` makes a path a branch; the messages that
carry each step; and a snapshot."""

from __future__ import annotations

import math

import pytest
from textual.binding import Binding
from textual.message import Message
from textual.pilot import Pilot

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import SIZE, fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.explore.screen import ExploreScreen, Shown

pytestmark = pytest.mark.anyio

# No filter cuts: every node has its 3 children.
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(min_p=0.0, top_k=0, top_p=1.0, seed=5)
INDEX = 4


def explore_messages(log: list[Message]) -> list[str]:
    kinds = (ExploreScreen.Grown, ExploreScreen.Failed, ExploreScreen.Chosen)
    return [type(m).__name__ for m in log if isinstance(m, kinds)]


async def open_tree(pilot: Pilot[object], app: SamplescopeApp) -> ExploreScreen:
    await send(pilot, app, "hello there")
    await wait_until(
        pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
    )
    await pilot.press("ctrl+t")
    app.query_one(Transcript).select(0, INDEX)
    await pilot.press("x")
    await wait_until(pilot, lambda: isinstance(app.screen, ExploreScreen))
    screen = app.screen
    assert isinstance(screen, ExploreScreen)
    await wait_until(pilot, lambda: bool(screen.nodes) and screen.growing is None)
    await pilot.pause()
    return screen


def sums_hold(nodes: list[Shown], above: float) -> bool:
    return all(
        math.isclose(n.logprob_path, above + math.log(n.prob), abs_tol=1e-12)
        and sums_hold(n.children, n.logprob_path)
        for n in nodes
    )


async def test_x_grows_the_tree_e_grows_deeper_and_b_makes_a_path_a_branch() -> None:
    log: list[Message] = []
    app = make_app(fake_backend(), max_tokens=20, settings=SETTINGS)
    async with app.run_test(size=SIZE, message_hook=log.append) as pilot:
        screen = await open_tree(pilot, app)
        assert explore_messages(log) == ["Grown"]
        reply = chat_of(app).conversation.replies[-1]
        step = reply.tokens[INDEX].step
        # The root's children: the step's candidates as generated (the same settings).
        kept = sorted(
            zip(step.table.prob_after, step.table.token_ids, strict=True),
            key=lambda row: (-row[0], row[1]),
        )[:3]
        assert [(n.token_id, n.prob) for n in screen.nodes] == [(int(t), float(p)) for p, t in kept]
        assert all(len(n.children) == 3 for n in screen.nodes)
        assert all(
            len(c.children) == 3 and not c.children[0].children
            for n in screen.nodes
            for c in n.children
        )
        assert sums_hold(screen.nodes, 0.0)

        leaf = screen.nodes[0].children[1].children[2]
        tree = screen.query_one("#explore-tree")
        for line in range(tree.last_line + 1):  # type: ignore[attr-defined]
            node = tree.get_node_at_line(line)  # type: ignore[attr-defined]
            if node is not None and node.data == leaf.path:
                tree.cursor_line = line  # type: ignore[attr-defined]
        await pilot.press("e")
        await wait_until(pilot, lambda: bool(leaf.children) and screen.growing is None)
        await pilot.pause()
        assert explore_messages(log) == ["Grown", "Grown"]
        assert len(leaf.children) == 3 and sums_hold(screen.nodes, 0.0)
        deepest = leaf.children[0].children[0].children[0]
        assert len(deepest.path) == 6

        await pilot.press("s")
        await pilot.pause()
        first = tree.get_node_at_line(0)  # type: ignore[attr-defined]
        best = max(
            (leaf for node in screen.nodes for leaf in node.leaves()),
            key=lambda leaf: leaf.logprob_path,
        )
        assert screen.order == "paths" and first is not None and first.data == best.path

        tree.cursor_line = 0  # type: ignore[attr-defined]
        await pilot.press("b")
        await wait_until(pilot, lambda: not isinstance(app.screen, ExploreScreen))
        assert explore_messages(log) == ["Grown", "Grown", "Chosen"]
        await wait_until(
            pilot,
            lambda: not chat_of(app).generating and len(chat_of(app).conversation.finished) == 2,
        )
        branch = chat_of(app).conversation.replies[-1]
        ids = [t.step.token_id for t in branch.tokens]
        assert branch.fork_at == INDEX and branch.parent is reply
        assert ids[:INDEX] == [t.step.token_id for t in reply.tokens[:INDEX]]
        assert tuple(ids[INDEX : INDEX + len(best.path)]) == best.path
        # The forced path's records carry the tree's probabilities (the fake's logits
        # depend on the context only, so here they are exact).
        probs = [t.step.prob for t in branch.tokens[INDEX : INDEX + len(best.path)]]
        assert math.isclose(sum(map(math.log, probs)), best.logprob_path, abs_tol=1e-9)


async def test_x_needs_a_selected_token_and_escape_goes_back() -> None:
    log: list[Message] = []
    app = make_app(fake_backend(), max_tokens=20, settings=SETTINGS)
    async with app.run_test(size=SIZE, message_hook=log.append) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        app.chat_screen.action_explore()
        await pilot.pause()
        assert not isinstance(app.screen, ExploreScreen)  # a notice says how
        await pilot.press("ctrl+t", "left", "x")
        await wait_until(pilot, lambda: isinstance(app.screen, ExploreScreen))
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        await wait_until(pilot, lambda: bool(screen.nodes))
        await pilot.press("escape")
        await pilot.pause()
        assert (
            not isinstance(app.screen, ExploreScreen)
            and len(chat_of(app).conversation.finished) == 1
        )
        assert explore_messages(log) == ["Grown"]


def test_the_tree_screen(snap_compare: object) -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=SETTINGS)

    async def explored(pilot: Pilot[object]) -> None:
        await open_tree(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=explored)  # type: ignore[operator]


def test_the_help_lists_x_and_the_explore_screens_keys() -> None:
    from tui.app import APP_WIDE_BINDINGS
    from tui.help.sections import key_sections

    sections = dict(key_sections(APP_WIDE_BINDINGS, {}))
    assert "explore" in dict(sections["chat"])["x"]
    explained = dict(sections["explore (x on a token)"])
    bindings = [b for b in ExploreScreen.BINDINGS if isinstance(b, Binding) and b.key != "escape"]
    assert [explained[b.key] for b in bindings] == [b.description for b in bindings]
    assert next(iter(sections)).startswith("everywhere")
