"""The explore screen on the real default model: `x` at a token of a reply, the root's
children are that step's kept candidates as generated, a path chosen becomes a saved
branch that replays token-identical."""

from __future__ import annotations

import math

import pytest
from textual.widgets import Tree

from backend.session.llama_backend import LlamaBackend
from backend.session.replay import forced_path, replay
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, nth_reply_finished, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.explore.screen import ExploreScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
INDEX = 3
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=1.0, min_p=0.0)


async def test_x_grows_the_tree_at_a_token_and_a_path_becomes_a_branch(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "Name three colours.")
        reply = chat_of(app).conversation.replies[-1]
        transcript = app.query_one(Transcript)
        transcript.focus()
        transcript.select(0, INDEX)
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ExploreScreen))
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        await wait_until(pilot, lambda: bool(screen.nodes) and screen.growing is None, 120)
        stored = reply.tokens[INDEX].step
        kept = sorted(
            zip(stored.table.prob_after, stored.table.token_ids, strict=True),
            key=lambda row: (-row[0], row[1]),
        )[:3]
        assert [(n.token_id, n.prob) for n in screen.nodes] == [(int(t), float(p)) for p, t in kept]
        leaf = screen.nodes[1].children[0].children[2]
        assert leaf.logprob_path == pytest.approx(
            sum(math.log(n.prob) for n in (screen.nodes[1], screen.nodes[1].children[0], leaf)),
            abs=1e-12,
        )
        tree = screen.query_one(Tree)
        tree.cursor_line = next(
            line
            for line in range(tree.last_line + 1)
            if (node := tree.get_node_at_line(line)) is not None and node.data == leaf.path
        )
        await pilot.press("b")
        await nth_reply_finished(pilot, app, 2)
        branch = chat_of(app).conversation.replies[-1]
        ids = tuple(t.step.token_id for t in branch.tokens)
        assert branch.fork_at == INDEX and ids[INDEX : INDEX + 3] == leaf.path
        assert branch.branch_id is not None and chat_of(app).conversation.recorder is not None
        chat = store.load_chat(chat_of(app).conversation.recorder.chat_id)  # type: ignore[arg-type]
        record = next(b for m in chat.messages for b in m.branches if b.id == branch.branch_id)
        forced = forced_path(record, store.load_steps(chat, record))
        assert forced == leaf.path[1:]
        assert replay(llama_backend, chat, record, forced=forced).identical
