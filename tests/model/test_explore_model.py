"""`samplescope explore` on the real default model: the root's children are what-if's
`after`, the path sums, the limits, lockstep against one node at a time, the errors."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.chat.protocol import ChatMessage
from backend.session.explore import explore
from backend.session.explore_tree import ExploreError, Tree, TreeNode, TreeShape
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "1024", "--batch", "64"]
QUESTION = [ChatMessage("user", "Tell me about owls.")]


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A chat saved by `generate --save --json` (sampled, 16 tokens)."""
    db = tmp_path_factory.mktemp("explore") / "chats.sqlite3"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "generate",
                "Tell me about owls.",
                "--save",
                "--json",
                "--max-tokens",
                "16",
                "--db",
                str(db),
                "--seed",
                "11",
                *MODEL_FLAGS,
            ]
        )
    assert code == 0
    return db, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def wide_backend(default_model_path: Path) -> Iterator[LlamaBackend]:
    """The model with 64 sequences (lockstep batches up to 27 nodes wide)."""
    backend = LlamaBackend.load(
        default_model_path, n_ctx=1024, n_batch=64, n_threads=1, n_seq_max=64
    )
    yield backend
    backend.close()


def walk(nodes: list[dict[str, Any]], depth: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    for node in nodes:
        yield depth, node
        yield from walk(node["children"], depth + 1)


@pytest.mark.parametrize("position", [1, 6])
def test_the_roots_children_are_the_kept_candidates_with_whatifs_after(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str], position: int
) -> None:
    db, result = saved
    where = [str(result["chat_id"]), "--at", str(position), "--db", str(db), "--threads", "1"]
    step = run_json(capsys, ["whatif", *where, "--json"])
    tree = run_json(capsys, ["explore", *where, "--depth", "2", "--width", "5", "--json"])
    kept = sorted(
        (c for c in step["candidates"] if c["after"] > 0),
        key=lambda c: (-c["after"], c["token_id"]),
    )
    expected = [(c["token_id"], c["after"]) for c in kept[:5]]
    assert [(n["token_id"], n["prob"]) for n in tree["children"]] == expected
    assert tree["at"] == position and tree["chat_id"] == result["chat_id"]
    assert tree["nodes"] == sum(1 for _ in walk(tree["children"]))
    assert all(depth <= 2 for depth, _ in walk(tree["children"]))
    assert all(len(n["children"]) <= 5 for _, n in walk(tree["children"]))


def test_each_path_sum_is_the_sum_of_the_logs_along_it(
    saved: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, result = saved
    argv = ["explore", str(result["chat_id"]), "--at", "3", "--db", str(db), "--threads", "1"]
    tree = run_json(capsys, [*argv, "--depth", "3", "--width", "3", "--json"])

    def check(nodes: list[dict[str, Any]], above: float) -> int:
        count = 0
        for node in nodes:
            assert node["logprob_path"] == pytest.approx(above + math.log(node["prob"]), abs=1e-12)
            count += 1 + check(node["children"], node["logprob_path"])
        return count

    assert check(tree["children"], 0.0) == tree["nodes"] > 3
    assert tree["decoded"] == sum(1 for d, n in walk(tree["children"]) if d < 3 and not n["ends"])


def test_width_depth_and_mass_limit_a_prompts_tree(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explore", "--prompt", "Tell me about owls.", *MODEL_FLAGS, "--json"]
    wide = run_json(capsys, [*argv, "--depth", "2", "--width", "4", "--top-p", "1", "--min-p", "0"])
    assert len(wide["children"]) == 4
    assert max(depth for depth, _ in walk(wide["children"])) == 2
    narrow = run_json(capsys, [*argv, "--depth", "2", "--width", "4", "--mass", "0.5"])
    for _, node in [(0, {"children": narrow["children"]}), *walk(narrow["children"])]:
        probs = [child["prob"] for child in node["children"]]
        assert sum(probs[:-1]) < 0.5
    greedy = run_json(capsys, [*argv, "--depth", "3", "--width", "4", "--temperature", "0"])
    assert greedy["nodes"] == 3 and greedy["children"][0]["prob"] == 1.0


def plain(tree: Tree) -> dict[tuple[int, ...], float]:
    """Each node's probability by its path of token ids."""
    paths: dict[tuple[int, ...], float] = {}

    def visit(nodes: tuple[TreeNode, ...], above: tuple[int, ...]) -> None:
        for node in nodes:
            path = (*above, node.token_id)
            paths[path] = node.prob
            visit(node.children, path)

    visit(tree.children, ())
    return paths


def test_lockstep_gives_exactly_the_tree_one_node_at_a_time_gives(
    wide_backend: LlamaBackend, q4_0_model_path: Path
) -> None:
    """Each node in its own KV stream: the tree decoded in lockstep batches is the tree
    decoded one node a `llama_decode`, every path's probability bit for bit (on
    SmolLM2's Q4_1 and on its Q4_0 copy, whose weights llama.cpp would repack)."""
    settings = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=1.0, min_p=0.0)
    shape = TreeShape(depth=4, width=3)
    batched = explore(wide_backend, QUESTION, (), settings, shape)
    alone = explore(wide_backend, QUESTION, (), settings, shape, lockstep=False)
    assert (batched.decoded, alone.decoded) == (39, 39)
    assert (batched.decodes, alone.decodes) == (3, 39)
    assert batched.node_count == alone.node_count == 120
    assert plain(batched) == plain(alone)
    q4_0 = LlamaBackend.load(q4_0_model_path, n_ctx=1024, n_batch=64, n_threads=1, n_seq_max=64)
    try:
        shape = TreeShape(depth=3, width=3)
        batched = explore(q4_0, QUESTION, (), settings, shape)
        alone = explore(q4_0, QUESTION, (), settings, shape, lockstep=False)
    finally:
        q4_0.close()
    assert batched.node_count == 39 and batched.decodes == 2
    assert plain(batched) == plain(alone)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explore", "999", "--at", "1"], "has no chat 999"),
        (["explore", "{chat}", "--at", "0"], "the position must be 1 to 16, not 0"),
        (["explore", "{chat}", "--at", "17"], "the position must be 1 to 16, not 17"),
        (["explore", "{chat}", "--reply", "2", "--at", "1"], "has no reply 2"),
        (["explore", "{chat}"], "needs --at POS"),
        (["explore", "--depth", "2"], "give a saved chat's CHAT_ID with --at POS, or --prompt"),
        (["explore", "{chat}", "--at", "1", "--prompt", "hi"], "or --prompt TEXT"),
        (["explore", "--prompt", "hi", "--at", "2"], "not --prompt"),
        (["explore", "{chat}", "--at", "1", "--width", "0"], "invalid width=0"),
        (["explore", "{chat}", "--at", "1", "--depth", "65", "--width", "1"], "needs 65 seq"),
        (["explore", "{chat}", "--at", "1", "--depth", "17", "--width", "2"], "at most 100000"),
    ],
)
def test_clear_errors_for_a_bad_chat_position_or_shape(
    saved: tuple[Path, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    db, result = saved
    argv = [a.replace("{chat}", str(result["chat_id"])) for a in argv]
    capsys.readouterr()
    assert main([*argv, "--db", str(db), "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("samplescope: ") and err.count("\n") == 1


def test_a_tree_too_big_is_refused_before_the_point_is_rebuilt(
    wide_backend: LlamaBackend,
) -> None:
    memory = wide_backend.session.memory
    memory.clear()
    with pytest.raises(ExploreError, match="at most 100000 are explored at once"):
        explore(wide_backend, QUESTION, (), DEFAULT_CHAT_SETTINGS, TreeShape(depth=17, width=2))
    assert memory.tokens(0) == []  # no prompt prefilled, the chat's context kept


def test_the_bench_rows_count_the_same_tree_both_ways(default_model_path: Path) -> None:
    """A tiny run of `samplescope bench --only explore`'s measurement."""
    from backend.bench.explore import format_rows, run_explore_bench

    rows = run_explore_bench(
        default_model_path, n_threads=1, shape=TreeShape(depth=3, width=2), repeats=1
    )
    lockstep, alone = rows
    assert (lockstep.nodes, lockstep.decoded) == (alone.nodes, alone.decoded) == (14, 6)
    assert (lockstep.decodes, alone.decodes) == (2, 6)
    assert lockstep.nodes_per_s > 0 and alone.nodes_per_s > 0
    table = format_rows(rows)
    assert "| lockstep | 14 | 6 | 2 |" in table and "as fast as one node at a time" in table


def test_a_steered_reply_is_explored_under_its_control_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = Path(__file__).parent.parent / "fixtures" / "control_vector" / "happy.gguf"
    db = tmp_path / "chats.sqlite3"
    argv = ["generate", "Tell me about owls.", "--save", "--json", "--max-tokens", "8"]
    argv += ["--db", str(db), "--seed", "11", "--control-vector", f"{vector}:4", *MODEL_FLAGS]
    argv += ["--control-vector-layers", "10,25", "--control-strength", "1.5"]
    result = run_json(capsys, argv)
    where = [str(result["chat_id"]), "--at", "3", "--db", str(db), "--threads", "1"]
    step = run_json(capsys, ["whatif", *where, "--json"])  # loads the reply's vectors
    tree = run_json(capsys, ["explore", *where, "--depth", "1", "--width", "5", "--json"])
    kept = sorted(
        (c for c in step["candidates"] if c["after"] > 0),
        key=lambda c: (-c["after"], c["token_id"]),
    )
    assert [(n["token_id"], n["prob"]) for n in tree["children"]] == [
        (c["token_id"], c["after"]) for c in kept[:5]
    ]
