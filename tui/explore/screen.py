"""The explore screen: the tree of continuations the chain keeps at a past token.

Each node shows its token (literally), its probability and the path's summed
log-probability. Space or Enter expands and collapses; `e` explores deeper from the
selected node ("expand here": its children come as another tree of the same shape
grown from there); `s` switches between the tree and every path ranked by its
probability; `b` makes the selected path a branch of the reply (its tokens forced,
the rest sampled); Escape goes back.

The trees grow on the model's worker (`tui.runner.GenerationRunner`): the worker
only hands the runner its events, and this screen, the job's consumer, turns the end
of each job into a `Grown` (or `Failed`) message handled on the UI thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode as TreeWidgetNode

from backend.chat.events import GenerationEvent, NoticeEvent
from backend.session.explore_tree import Tree as ExploredTree
from backend.session.explore_tree import TreeNode
from tui.runner import GenerationRunner, Job
from tui.styled_once import StyledOnceScreen

Path = tuple[int, ...]
"""Token ids from the explored point down to a node."""
TreeItem = TreeWidgetNode[Path]


@dataclass(eq=False)
class Shown:
    """A node as the screen holds it: its subtree can grow ("expand here").

    Attributes:
        token_id: The token.
        text: Its text.
        prob: Its probability at its parent's step.
        logprob_path: The summed log-probability from the explored point.
        path: The token ids from the point to it.
        children: Its continuations, most probable first.
    """

    token_id: int
    text: str
    prob: float
    logprob_path: float
    path: Path
    children: list[Shown] = field(default_factory=list)

    def leaves(self) -> Iterator[Shown]:
        """Every node under it without children (itself when it has none)."""
        if not self.children:
            yield self
        for child in self.children:
            yield from child.leaves()


def shown(nodes: tuple[TreeNode, ...], above: Path, base: float) -> list[Shown]:
    """The screen's nodes for a tree grown at `above` (its sums start from `base`)."""
    result = []
    for node in nodes:
        path = (*above, node.token_id)
        entry = Shown(node.token_id, node.text, node.prob, base + node.logprob_path, path)
        entry.children = shown(node.children, path, base)
        result.append(entry)
    return result


def node_label(node: Shown, piece: str) -> Text:
    """A node's line: the token, its probability, the path's summed log-probability
    (in columns whatever its depth: the tree's guides take 4 cells a level, and a
    node with children 2 more for its expand mark)."""
    width = max(8, 28 - 4 * len(node.path) + (0 if node.children else 2))
    label = Text(piece[:width], style="bold")
    label.pad_right(width - label.cell_len)
    label.append(f" {node.prob:7.2%}")
    label.append(f"  Σlog {node.logprob_path:8.3f}", style="dim")
    return label


def _data_at(widget: Tree[Path], line: int) -> Path | None:
    node = widget.get_node_at_line(line)
    return None if node is None else node.data


class ExploreScreen(StyledOnceScreen[Path | None]):
    """The tree at a past token (see the module doc); dismisses with the path chosen
    for a branch, or None.

    Args:
        title: Where the tree grows, e.g. "reply 1 token 3".
        runner: Runs the jobs on the model's worker.
        job_for: The job growing the tree at a path (() is the point itself); the
            job's `tree` holds its result once it ends.
        piece: Shows a token's text.
    """

    DEFAULT_CSS = """
    ExploreScreen #explore-title { height: 1; padding: 0 1; background: $boost; }
    ExploreScreen #explore-status { height: 1; padding: 0 1; color: $text-muted; }
    ExploreScreen Tree { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back"),
        Binding("e", "grow", "expand here"),
        Binding("s", "sort", "by path prob"),
        Binding("b", "choose", "branch"),
    ]

    class Grown(Message):
        """A job ended with a tree grown at `path`."""

        def __init__(self, path: Path, tree: ExploredTree) -> None:
            super().__init__()
            self.path = path
            self.tree = tree

    class Failed(Message):
        """A job ended without a tree."""

        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    class Chosen(Message):
        """The path chosen to become a branch."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(
        self,
        title: str,
        runner: GenerationRunner,
        job_for: Callable[[Path], Job],
        piece: Callable[[int], str],
    ) -> None:
        super().__init__()
        self.title_text = title
        self.runner = runner
        self.job_for = job_for
        self.piece = piece
        self.nodes: list[Shown] = []
        """The point's continuations."""
        self.order: Literal["tree", "paths"] = "tree"
        self.growing: Path | None = None
        """Where the running job grows a tree (None: no job runs)."""
        self._job: Job | None = None
        self._status = Static("", id="explore-status")
        self._tree: Tree[Path] = Tree(Text(title), data=(), id="explore-tree")

    def compose(self) -> ComposeResult:
        yield Static(Text(f"explore {self.title_text}"), id="explore-title")
        yield self._tree
        yield self._status
        yield Footer()

    def on_mount(self) -> None:
        self._tree.show_root = False
        self._tree.focus()
        self.grow(())

    def on_unmount(self) -> None:
        self.runner.release(self)

    # -- growing --------------------------------------------------------------------

    def grow(self, path: Path) -> None:
        """Grow a tree at `path` on the model's worker."""
        if self.growing is not None:
            self.notify("A tree is still growing.")
            return
        why = self.runner.unavailable()
        if why is not None:
            self._status.update(Text(f"cannot explore: {why}"))
            self.notify(why)
            return
        self.growing = path
        self._job = self.job_for(path)
        self._status.update(Text("exploring…"))
        self.runner.start(self._job, self)

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """A notice of the job (rebuilding the point)."""
        if isinstance(event, NoticeEvent):
            self.notify(event.message)

    def generation_ended(self, error: str | None) -> None:
        """The job ended: its tree (or its error) comes back as a message."""
        job, path, self._job, self.growing = self._job, self.growing, None, None
        tree: ExploredTree | None = getattr(job, "tree", None)
        if error is not None or tree is None or path is None:
            self.post_message(self.Failed(error or "the tree could not be grown"))
        else:
            self.post_message(self.Grown(path, tree))

    def paint(self) -> None:
        """Nothing streams."""

    @on(Grown)
    def _on_grown(self, message: Grown) -> None:
        message.stop()
        tree = message.tree
        if not message.path:
            self.nodes = shown(tree.children, (), 0.0)
        else:
            node = self.find(message.path)
            if node is not None:
                node.children = shown(tree.children, node.path, node.logprob_path)
        count = tree.node_count
        how = f"{tree.decodes} lockstep batches" if tree.lockstep else "one at a time"
        self._status.update(
            Text(
                f"{count} nodes, {tree.decoded} decoded in {how}, {tree.elapsed_ms:.0f} ms · "
                f"depth {tree.shape.depth}, width {tree.shape.width}"
            )
        )
        self.draw(message.path)

    @on(Failed)
    def _on_failed(self, message: Failed) -> None:
        message.stop()
        self._status.update(Text(f"cannot explore: {message.error}"))

    # -- drawing --------------------------------------------------------------------

    def find(self, path: Path) -> Shown | None:
        """The node at `path` (None: not in the tree)."""
        nodes, found = self.nodes, None
        for token in path:
            found = next((n for n in nodes if n.token_id == token), None)
            if found is None:
                return None
            nodes = found.children
        return found

    def draw(self, cursor: Path = ()) -> None:
        """Fill the tree widget (the tree, or every path by its probability)."""
        widget = self._tree
        widget.clear()
        if self.order == "paths":
            leaves = [leaf for node in self.nodes for leaf in node.leaves()]
            leaves.sort(key=lambda leaf: -leaf.logprob_path)
            for leaf in leaves:
                label = Text("".join(self.piece(token) for token in leaf.path)[:40])
                label.pad_right(40 - len(label.plain))
                label.append(f" {math.exp(leaf.logprob_path):7.2%}")
                label.append(f"  Σlog {leaf.logprob_path:8.3f}", style="dim")
                widget.root.add_leaf(label, data=leaf.path)
        else:

            def add(parent: TreeItem, nodes: list[Shown]) -> None:
                for node in nodes:
                    label = node_label(node, self.piece(node.token_id))
                    if node.children:
                        add(parent.add(label, data=node.path, expand=True), node.children)
                    else:
                        parent.add_leaf(label, data=node.path)

            add(widget.root, self.nodes)
        widget.root.expand()
        lines = range(widget.last_line + 1)
        at = (line for line in lines if _data_at(widget, line) == cursor)
        widget.cursor_line = next(at, 0)

    # -- actions --------------------------------------------------------------------

    def _selected(self) -> Path | None:
        node = self._tree.cursor_node
        return None if node is None or not node.data else node.data

    def action_grow(self) -> None:
        """`e`: a tree of the same shape grown from the selected node."""
        path = self._selected()
        if path is None:
            self.notify("Select a node first.")
        else:
            self.grow(path)

    def action_sort(self) -> None:
        """`s`: every path ranked by its probability, or the tree again."""
        self.order = "paths" if self.order == "tree" else "tree"
        self.draw(self._selected() or ())

    def action_choose(self) -> None:
        """`b`: the selected path becomes a branch of the reply."""
        path = self._selected()
        if path is None:
            self.notify("Select a node first.")
        else:
            self.post_message(self.Chosen(path))

    @on(Chosen)
    def _on_chosen(self, message: Chosen) -> None:
        message.stop()
        self.dismiss(message.path)

    def action_close(self) -> None:
        """Escape: back to the chat."""
        self.dismiss(None)
