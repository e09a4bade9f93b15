"""The explore tree in lockstep against the same nodes decoded one at a time.

`run_explore_bench(model_path)` grows the tree of width 3 and depth 4 after one prompt
(120 nodes, 39 of them decoded: every level but the last) both ways on one model
loaded with `EXPLORE_SEQ_MAX` sequences: in lockstep (one `llama_decode` for every node
of a level that fits, here 3 batches of 3, 9 and 27) and one node per `llama_decode`
(the same schedule and memory sharing, so only the batching differs), alternating,
best of `repeats`. It reports nodes per second both ways and their ratio. The point's
own rebuild (the prompt's prefill) is left out of both. The end-of-generation token
is banned and no filter cuts, so every node has its 3 children. Run:
`samplescope bench --only explore`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backend.chat.protocol import ChatMessage
from backend.session.explore import EXPLORE_SEQ_MAX, explore
from backend.session.explore_tree import Tree, TreeShape
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS

PROMPT = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]
SHAPE = TreeShape(depth=4, width=3)


@dataclass(frozen=True, slots=True)
class ExploreBenchRow:
    """One way of decoding the tree, its best run.

    Attributes:
        way: "lockstep" or "one at a time".
        nodes: The tree's nodes.
        decoded: How many of them were decoded.
        decodes: The `llama_decode` calls that took.
        best_ms: The best time growing the tree took.
    """

    way: str
    nodes: int
    decoded: int
    decodes: int
    best_ms: float

    @property
    def nodes_per_s(self) -> float:
        """The tree's nodes per second of its best run."""
        return self.nodes / (self.best_ms / 1000) if self.best_ms > 0 else 0.0


def run_explore_bench(
    model_path: Path, *, n_threads: int, shape: TreeShape = SHAPE, repeats: int = 3
) -> tuple[ExploreBenchRow, ExploreBenchRow]:
    """Measure (see the module doc): (lockstep, one at a time)."""
    backend = LlamaBackend.load(
        model_path, n_ctx=2048, n_threads=n_threads, n_seq_max=EXPLORE_SEQ_MAX
    )
    eos = backend.runtime.eos
    ban = ((eos, float("-inf")),) if eos >= 0 else ()
    settings = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=1.0, min_p=0.0, logit_bias=ban)
    best: dict[bool, Tree] = {}
    try:
        explore(backend, PROMPT, (), settings, TreeShape(depth=2, width=2))  # warm up
        for _ in range(repeats):
            for lockstep in (True, False):  # alternating: a disturbance hits both
                tree = explore(backend, PROMPT, (), settings, shape, lockstep=lockstep)
                if lockstep not in best or tree.elapsed_ms < best[lockstep].elapsed_ms:
                    best[lockstep] = tree
    finally:
        backend.close()
    rows = tuple(
        ExploreBenchRow(
            "lockstep" if lockstep else "one at a time",
            best[lockstep].node_count,
            best[lockstep].decoded,
            best[lockstep].decodes,
            best[lockstep].elapsed_ms,
        )
        for lockstep in (True, False)
    )
    return rows[0], rows[1]


def format_rows(rows: tuple[ExploreBenchRow, ExploreBenchRow]) -> str:
    """The rows as a markdown table and the ratio."""
    lockstep, alone = rows
    lines = [
        "| way | nodes | decoded | llama_decode calls | best ms | nodes/s |",
        "|---|---|---|---|---|---|",
        *(
            f"| {row.way} | {row.nodes} | {row.decoded} | {row.decodes} | {row.best_ms:.1f} |"
            f" {row.nodes_per_s:.1f} |"
            for row in rows
        ),
    ]
    ratio = lockstep.nodes_per_s / alone.nodes_per_s if alone.nodes_per_s > 0 else 0.0
    lines.append(f"\nlockstep grows the tree {ratio:.2f}x as fast as one node at a time")
    return "\n".join(lines)
