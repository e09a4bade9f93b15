"""The explore tree on the fake model: its nodes against a tree built by hand from
the model's logits, the path sums, the limits, lockstep against one node at a time,
and the sequences and context it needs."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.explore import explore
from backend.session.explore_tree import ExploreError, Tree, TreeNode, TreeShape
from backend.session.replay import forced_path, replay
from backend.session.run import Steer
from backend.session.steer import explore_step
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.fake_backend import EOS_ID, FakeBackend, FakeModel, context_logits

QUESTION = [ChatMessage("user", "tell me about the cat")]
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(
    seed=3, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.3, repeat_last_n=64
)


def fake_logits(context: list[int]) -> npt.NDArray[np.float32]:
    """What the fake model gives after `context` (its end token held back early on)."""
    values = context_logits(context)
    index = FakeModel.reply_index(context)
    values[EOS_ID] = -1e4 if index < 12 else -4.0 + 0.25 * (index - 12)
    return values


def reference(
    history: list[int], settings: SamplerSettings, shape: TreeShape, level: int = 0
) -> list[tuple[int, float, list[object]]]:
    """The tree built by hand: every node's step computed from the fake's logits of its
    whole history, one path at a time, with a fresh sampler (the settings here are
    stateless)."""
    sampler = Sampler(settings, n_candidates=max(20, shape.width))
    sampler.resume(level)
    step = sampler.sample(fake_logits(history), history)
    rows = sorted(
        (
            (-float(p), int(t))
            for t, p in zip(step.table.token_ids, step.table.prob_after, strict=True)
            if p > 0
        ),
    )
    children: list[tuple[int, float, list[object]]] = []
    total = 0.0
    for neg, token in rows:
        if len(children) == shape.width or total >= shape.mass:
            break
        total += -neg
        below: list[object] = []
        if level + 1 < shape.depth and token != 0:
            below = list(reference([*history, token], settings, shape, level + 1))
        children.append((token, -neg, below))
    return children


def as_plain(nodes: tuple[TreeNode, ...]) -> list[tuple[int, float, list[object]]]:
    return [(n.token_id, n.prob, list(as_plain(n.children))) for n in nodes]


def grown(
    shape: TreeShape,
    *,
    seqs: int = 4,
    lockstep: bool = True,
    settings: SamplerSettings = SETTINGS,
    backend: FakeBackend | None = None,
    prefix: tuple[int, ...] = (),
) -> Tree:
    backend = backend or FakeBackend(prefill_chunk=64)
    backend.fake.n_seq_max = seqs
    return explore(backend, QUESTION, prefix, settings, shape, lockstep=lockstep)


@pytest.mark.parametrize("seqs", [4, 5, 8, 40])
@pytest.mark.parametrize("lockstep", [True, False], ids=["lockstep", "one-at-a-time"])
def test_the_tree_is_the_one_built_by_hand_whatever_the_sequences(
    seqs: int, lockstep: bool
) -> None:
    shape = TreeShape(depth=4, width=3)
    tree = grown(shape, seqs=seqs, lockstep=lockstep)
    assert as_plain(tree.children) == reference(list(tree.history), SETTINGS, shape)
    assert tree.node_count == 3 + 9 + 27 + 81
    assert tree.decoded == 3 + 9 + 27
    if not lockstep:
        assert tree.decodes == tree.decoded
    elif seqs == 40:
        assert tree.decodes == 3  # one batch a level: 3, 9 and 27 nodes


def test_lockstep_batches_as_widely_as_the_sequences_allow() -> None:
    shape = TreeShape(depth=3, width=3)
    counts = {seqs: grown(shape, seqs=seqs).decodes for seqs in (3, 4, 13)}
    assert counts[13] == 2 and counts[3] > counts[4] > counts[13]
    assert grown(shape, seqs=3, lockstep=False).decodes == 12


def test_each_path_sum_is_the_sum_of_the_logs_along_it() -> None:
    tree = grown(TreeShape(depth=3, width=4))

    def check(nodes: tuple[TreeNode, ...], above: float) -> None:
        for node in nodes:
            assert node.logprob_path == pytest.approx(above + math.log(node.prob), abs=1e-12)
            check(node.children, node.logprob_path)

    check(tree.children, 0.0)
    leaves = [n for n in tree.nodes() if not n.children]
    best = max(leaves, key=lambda n: n.logprob_path)
    assert best.logprob_path < 0.0


def test_width_depth_and_mass_limit_the_tree() -> None:
    tree = grown(TreeShape(depth=2, width=5))
    assert len(tree.children) == 5
    assert all(len(n.children) == 5 and not n.children[0].children for n in tree.children)
    assert [n.prob for n in tree.children] == sorted((n.prob for n in tree.children), reverse=True)
    narrow = grown(TreeShape(depth=2, width=5, mass=0.5))
    for nodes in [narrow.children, *(n.children for n in narrow.children)]:
        probs = [n.prob for n in nodes]
        assert sum(probs[:-1]) < 0.5 and (sum(probs) >= 0.5 or len(probs) == 5)
    assert narrow.node_count < tree.node_count
    greedy = grown(TreeShape(depth=3, width=5), settings=SamplerSettings(temperature=0.0))
    assert greedy.node_count == 3 and greedy.children[0].prob == 1.0


def test_the_point_can_be_inside_a_reply() -> None:
    backend = FakeBackend(prefill_chunk=64)
    whole = grown(TreeShape(depth=2, width=3), backend=backend)
    first = whole.children[1]
    deeper = grown(TreeShape(depth=1, width=3), backend=backend, prefix=(first.token_id,))
    assert [(n.token_id, n.prob) for n in deeper.children] == [
        (n.token_id, n.prob) for n in first.children
    ]
    assert deeper.history == (*whole.history, first.token_id)


def test_a_tree_deeper_than_the_sequences_or_past_the_context_is_refused() -> None:
    with pytest.raises(ExploreError, match="needs 5 sequences at once: this model holds 4"):
        grown(TreeShape(depth=5, width=2))
    # Each node's sequence holds the point's history and its path: 4 past the history
    # do not fit a context of 2 past it.
    history = len(grown(TreeShape(depth=1, width=1)).history)
    backend = FakeBackend(prefill_chunk=64, n_ctx=history + 2)
    backend.fake.n_seq_max = 8
    with pytest.raises(ExploreError, match=f"do not fit the context of {history + 2}"):
        explore(backend, QUESTION, (), SETTINGS, TreeShape(depth=4, width=3), max_tokens=1)
    with pytest.raises(ExploreError, match="invalid width=0"):
        TreeShape(depth=2, width=0)
    with pytest.raises(ExploreError, match="at most 100000"):
        grown(TreeShape(depth=4, width=40), seqs=8)


def test_the_memory_holds_the_point_after_and_a_reply_is_unchanged() -> None:
    backend = FakeBackend(prefill_chunk=64)
    tree = grown(TreeShape(depth=3, width=2), backend=backend)
    memory = backend.session.memory
    assert memory.tokens(0) == list(tree.history)
    assert memory.cells_used == len(tree.history)
    after = list(backend.generate(QUESTION, LiveSettings(SETTINGS), max_tokens=6))[-1]
    fresh = list(FakeBackend().generate(QUESTION, LiveSettings(SETTINGS), max_tokens=6))[-1]
    assert isinstance(after, FinishedEvent) and isinstance(fresh, FinishedEvent)
    assert after.token_ids == fresh.token_ids and after.reason == "max_tokens"


def test_a_cancel_leaves_a_partial_tree() -> None:
    cancel = threading.Event()
    cancel.set()
    backend = FakeBackend(prefill_chunk=64)
    tree = explore(backend, QUESTION, (), SETTINGS, TreeShape(depth=3, width=3), cancel=cancel)
    assert not tree.complete and len(tree.children) == 3 and tree.decoded == 0


def test_a_chosen_path_is_forced_step_by_step_at_the_trees_probabilities() -> None:
    backend = FakeBackend(prefill_chunk=64)
    tree = grown(TreeShape(depth=3, width=3), backend=backend)
    node = tree.children[2].children[1].children[0]
    path = (tree.children[2].token_id, tree.children[2].children[1].token_id, node.token_id)
    steer = Steer((), path[0], path[1:])
    events = list(backend.generate(QUESTION, LiveSettings(SETTINGS), max_tokens=6, steer=steer))
    steps = [e.step for e in events if isinstance(e, TokenEvent)]
    assert tuple(s.token_id for s in steps[:3]) == path and len(steps) == 6
    assert sum(math.log(s.prob) for s in steps[:3]) == pytest.approx(node.logprob_path, abs=1e-12)
    bad = Steer((), path[0], (10**6,))
    finished = list(backend.generate(QUESTION, LiveSettings(SETTINGS), steer=bad))[-1]
    assert isinstance(finished, FinishedEvent) and "invalid token id 1000000" in str(finished.error)


def test_a_path_branch_is_stored_and_replays_token_identical(tmp_path: Path) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF fake")
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        backend = FakeBackend()
        recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        assert recorder.begin_reply(QUESTION, SETTINGS, 16)
        for event in backend.generate(QUESTION, LiveSettings(SETTINGS), max_tokens=16):
            recorder.record(event)
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        reply = chat.replies[0]
        tree, _ = explore_step(backend, chat, reply, 3, SETTINGS, TreeShape(depth=3, width=3))
        first = tree.children[2]
        path = (first.token_id, first.children[2].token_id, first.children[2].children[1].token_id)
        assert recorder.begin_branch(reply.id, 3, SETTINGS)
        steer = Steer(reply.token_ids[:3], path[0], path[1:])
        live = LiveSettings(SETTINGS)
        for event in backend.generate(QUESTION, live, max_tokens=16, steer=steer):
            recorder.record(event)
        chat = store.load_chat(recorder.chat_id)
        branch = next(b for m in chat.messages for b in m.branches if b.parent_id == reply.id)
        assert branch.token_ids[3:6] == path and branch.fork_at == 3
        assert forced_path(branch, store.load_steps(chat, branch)) == path[1:]
        assert forced_path(reply, store.load_steps(chat, reply)) == ()
        assert replay(FakeBackend(), chat, branch, forced=path[1:]).identical
        assert not replay(FakeBackend(), chat, branch).identical  # only the fork forced
