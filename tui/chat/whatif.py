"""What if: a past step recomputed under the sampling panel's settings, live.

With a past token selected, `w` shows that step's distribution and cut as the
current settings would make them, without generating; every setting changed redraws
it. The step's own logits and history come from memory for the current reply's
latest steps (`backend.session.step_logits.StepLogits`, fed by the generating thread),
else they are rebuilt once through the replay path on the model's worker thread
("recomputing…"; `backend.session.steer.rebuild_step`); either way later changes are
computed from them on the UI thread, a fresh sampler for each. The draw reuses the
step's own uniform: the randomness stays, the settings change (as in compare), so
with the step's own settings it draws the stored token. A step without a uniform (a
greedy or Gumbel draw, a forced token) draws the first of the current seed's stream.
Another seed (or generator) than the step's draws a fresh uniform instead, the new
seed's for this token (`fresh_uniform`), and the header says so: a seed change
changes the draw, as it would have changed the reply.
`b` lists the step's candidates under those settings, the drawn one (▶) first in
line: the one chosen starts a branch from there. `y` copies the command line that
makes the branch ▶ starts (`copy_command`). Esc, or a reply starting, leaves.

Penalties and DRY see the history before the step (the prompt and the reply's
earlier tokens), as the sampler did. Mirostat starts afresh (its running μ is not
kept), so a mirostat step need not reproduce.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from backend.chat.compare import ColumnEvent
from backend.chat.events import GenerationEvent, NoticeEvent
from backend.session.backend import SessionBackend
from backend.session.run import StepInput
from backend.session.steer import rebuild_step
from backend.session.step_logits import StepLogits
from backend.store.records import ReplyRecord
from backend.store.store import ChatStore
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.rng import make_source
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tui.chat.probs_panel import ChatProbs
from tui.chat.reply import Reply
from tui.chat.reply_job import REPLY_COLUMN
from tui.chat.selection import PanelT
from tui.chat.steering import SteeringHost, made_elsewhere, refused, start_branch
from tui.chat.whatif_panel import WhatIfPanel, reseeded
from tui.generate_command import NotOneCommandError, branch_command, generate_command
from tui.runner import GenerationRunner
from tui.widgets.alternatives import Alternative, AlternativesScreen


def fresh_uniform(settings: SamplerSettings, index: int) -> float:
    """The uniform `settings`' seed gives token `index` of a reply that draws one per
    token (the stream's uniform number `index`, counted from 0)."""
    return float(make_source(settings.rng, settings.seed).uniforms(index + 1)[-1])


class WhatIfHost(SteeringHost, Protocol):
    """What what-if needs of the chat view (which calls it)."""

    runner: GenerationRunner

    def panel(self, kind: type[PanelT]) -> PanelT:
        """The chat's panel of that class."""
        ...


@dataclass
class ReplayJob:
    """Rebuilds one stored step's input on the worker thread (a `runner.Job`).

    Attributes:
        store: The chat's database.
        chat_id: The chat.
        from_end: Which of the chat's generated replies, counted from the last (1);
            this session's replies are the chat's last ones.
        tokens: The reply's tokens as shown, to check the stored reply is that one.
        index: The step (0-based).
        given: The rebuilt input, once the job ran.
    """

    store: ChatStore
    chat_id: int
    from_end: int
    tokens: tuple[int, ...]
    index: int
    given: StepInput | None = field(default=None)

    def __call__(self, backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        """Rebuild the step (worker thread); its notices come as events."""
        chat = self.store.load_chat(self.chat_id)
        turns = [m.reply for m in chat.messages if m.reply is not None]
        turn = len(turns) - self.from_end
        reply: ReplyRecord | None = turns[turn] if 0 <= turn < len(turns) else None
        if reply is None or reply.token_ids[: self.index + 1] != self.tokens[: self.index + 1]:
            raise SamplescopeError("this reply is not in the saved chat as shown")
        self.given, notices = rebuild_step(backend, chat, reply, self.index)
        for notice in notices:
            yield ColumnEvent(REPLY_COLUMN, NoticeEvent(notice))


class WhatIf:
    """The what-if mode of the chat view (see the module doc).

    It draws on the chat's `WhatIfPanel`, shown in the probability panel's place.

    Args:
        host: The chat view.
        keeper: The current reply's latest steps (its `keep` becomes the live
            settings' step sink; None: a new one of the default budget).
    """

    def __init__(self, host: WhatIfHost, keeper: StepLogits | None = None) -> None:
        self.host = host
        self.keeper = keeper if keeper is not None else StepLogits()
        self.target: tuple[int, int] | None = None
        """The step shown (reply, token), or None when what-if is off."""
        self.step: Step | None = None
        """The step recomputed under the current settings (None while rebuilt)."""
        self.source = ""
        """Where the step's logits came from: "memory", "replay", or "nowhere: why"."""
        self._given: StepInput | None = None
        self._job: ReplayJob | None = None
        self._shown: tuple[object, ...] | None = None
        host.live.step_sink = self.keeper.keep

    @property
    def panel(self) -> WhatIfPanel:
        """The panel it draws on."""
        return self.host.panel(WhatIfPanel)

    @property
    def probs(self) -> ChatProbs:
        """The probability panel, hidden while what-if shows."""
        return self.host.panel(ChatProbs)

    @property
    def active(self) -> bool:
        """Whether what-if is on."""
        return self.target is not None

    @property
    def recomputing(self) -> bool:
        """Whether the step's input is being rebuilt through the replay path."""
        return self._job is not None

    def toggle(self, cursor: tuple[int, int] | None) -> None:
        """`w`: what-if at the selected token, or off when it shows that one."""
        if cursor is not None and cursor == self.target:
            self.leave()
        elif cursor is None:
            self.host.notify("Select a past token first (ctrl+t, then ← →).")
        elif not refused(self.host):
            self.enter(*cursor)

    def enter(self, number: int, index: int) -> None:
        """What-if on token `index` of reply `number` (of this session); off, with a
        notice, on a reply another model made."""
        reply = self.host.conversation.replies[number]
        if made_elsewhere(self.host, number):
            self.leave()
            return
        self.target = (number, index)
        self.step = None
        self._given = self.keeper.get(reply, index)
        self.source = "memory" if self._given is not None else "replay"
        self.probs.display = False
        self.panel.display = True
        self.host.app.refresh_bindings()  # `b` shows
        if self._given is None:
            self._start_replay(number, reply, index)
        self.update()

    def leave(self) -> bool:
        """Turn what-if off (False: it was not on)."""
        if self.target is None:
            return False
        self.target = self.step = self._given = self._job = self._shown = None
        self.panel.display = False
        self.probs.display = True
        self.host.app.refresh_bindings()
        return True

    def follow(self, cursor: tuple[int, int] | None) -> None:
        """The token cursor moved: what-if follows it (off when the cursor leaves)."""
        if self.target is None or cursor == self.target:
            return
        if cursor is None or self.host.generating:
            self.leave()
        else:
            self.enter(*cursor)

    def reply_started(self, reply: Reply) -> None:
        """A reply's job is about to start: what-if goes off, and its steps are kept
        (a branch keeps its parent's steps before the fork)."""
        self.leave()
        self.keeper.begin(reply, keep_before=len(reply.tokens))

    def update(self) -> None:
        """Recompute the step under the current settings and draw it."""
        if self.target is None:
            return
        number, index = self.target
        replies = self.host.conversation.replies
        if number >= len(replies) or index >= len(replies[number].tokens):
            self.leave()  # the reply went (a regenerate, a new chat)
            return
        stored = replies[number].tokens[index].step
        live = self.host.live.current
        # The chat view calls this on every redraw: recompute only what changed.
        shown = (self.target, stored, live, self._given, self._job, self.source)
        if self._shown is not None and all(map(operator.is_, shown, self._shown)):
            return
        self._shown = shown
        status = "recomputing… (replay)" if self._job is not None else f"from {self.source}"
        if self._given is not None:
            backend = self.host.runner.backend
            vocabulary = backend.model if backend is not None else None
            try:
                sampler = Sampler(live, vocab_size=len(self._given.logits), vocabulary=vocabulary)
                sampler.resume(index, stored.reports)
                given = self._given
                uniform = (
                    fresh_uniform(live, index) if reseeded(stored.settings, live) else stored.draw
                )
                self.step = sampler.sample(
                    given.logits,
                    given.history,
                    uniform=uniform,
                    second=given.second,
                    small=given.small,
                )
            except SamplescopeError as error:
                self.step = None
                status = f"cannot recompute: {error}"
        title = f"reply {number + 1} token {index + 1}"
        self.panel.show(title, stored, self.step, live, self.host.pieces, status)

    def branch(self) -> None:
        """`b`: the step's candidates under the current settings, the one drawn (▶)
        highlighted; the one chosen (a re-sample takes ▶: the step's randomness under
        these settings) starts a branch from there."""
        if self.target is None or self.step is None:
            self.host.notify(self._no_step())
            return
        number, index = self.target
        replies = self.host.conversation.replies
        if number == len(replies) - 1 and not self.host.conversation.ends_with_reply:
            self.host.notify("This reply has no text to branch from: regenerate it (ctrl+r).")
            return
        step = self.step
        listed = [int(token) for token in step.table.token_ids]
        row = listed.index(step.token_id) if step.token_id in listed else len(listed)

        def chosen(choice: Alternative | None) -> None:
            if choice is not None:
                token = step.token_id if choice.token is None else choice.token
                start_branch(self.host, index, token, number)

        title = f"what if at reply {number + 1} token {index + 1}"
        screen = AlternativesScreen(step, title, self.host.pieces, highlighted=row)
        self.host.app.push_screen(screen, chosen)

    def copy_command(self) -> None:
        """`y`: copy the command line that makes the branch `b` ▶ starts (the token the
        what-if draws, then the rest under the current settings).

        From a reply's first token, with one user message before it, that branch is
        the reply `generate` gives under these settings (its first step draws the
        what-if's token with the same uniform): a `generate` line. From a later token
        `generate` cannot keep the tokens before it: the `branch` line of the saved
        chat, which keeps them, is the exact one (and the notice says why).
        """
        if self.target is None or self.step is None:
            self.host.notify(self._no_step())
            return
        number, index = self.target
        conversation = self.host.conversation
        reply, live = conversation.replies[number], self.host.live.current
        where = f"what if at reply {number + 1} token {index + 1}"
        if index == 0:
            backend = self.host.runner.backend
            try:
                line = generate_command(
                    conversation.messages[: reply.turn],
                    live,
                    max_tokens=self.host.max_tokens,
                    mode=conversation.mode,
                    model=None if backend is None else backend.info.path,
                    contrast_model=None if backend is None else backend.info.contrast_model,
                    control_vectors=() if backend is None else backend.info.control_vectors,
                    control_layers=None if backend is None else backend.info.control_layers,
                )
            except NotOneCommandError:
                pass  # an earlier exchange: the branch line keeps it
            else:
                self.host.app.copy_to_clipboard(line)
                self.host.app.notify(
                    line, title=f"Copied the {where} as a command", timeout=30, markup=False
                )  # the prompt, literally
                return
        branch, why = self._branch_line(reply.branch_id, index, live)
        if branch is None:
            self.host.notify(why)
            return
        self.host.app.copy_to_clipboard(branch)
        self.host.app.notify(
            f"{why}\n{branch}", title=f"Copied the {where}", timeout=30, markup=False
        )

    def _branch_line(
        self, branch_id: int | None, index: int, live: SamplerSettings
    ) -> tuple[str | None, str]:
        """The `branch` line of the what-if (None and why when there is none)."""
        recorder = self.host.conversation.recorder
        if recorder is None or recorder.chat_id is None or branch_id is None:
            return None, "This chat is not saved: no command line gives this what-if's branch."
        assert self.step is not None and self.target is not None
        try:
            chat = recorder.store.load_chat(recorder.chat_id)
        except SamplescopeError as error:
            return None, str(error)
        found = [b for m in chat.messages for b in m.branches if b.id == branch_id]
        if not found:
            return None, "This reply is not in the saved chat: no command line gives its branch."
        own = self.host.conversation.replies[self.target[0]].tokens[index].step.settings
        line = branch_command(
            chat.id,
            found[0].number,
            branch_id,
            index + 1,
            self.step.token_id,
            live,
            own,
            max_tokens=self.host.max_tokens,
        )
        why = (
            "`generate` cannot keep a reply's tokens before the one a what-if starts at"
            " (nor an earlier exchange): `branch` keeps them from the saved chat."
        )
        return line, why

    def _no_step(self) -> str:
        """Why there is no what-if step to branch from or copy."""
        if self.target is None:
            return "What if (w) on a past token first."
        if self._job is not None:
            return "The what-if's step is being recomputed: a moment."
        return "The what-if shows no step: its header says why."

    # -- the replay path -----------------------------------------------------------

    def _start_replay(self, number: int, reply: Reply, index: int) -> None:
        conversation = self.host.conversation
        recorder = conversation.recorder
        if recorder is None or recorder.chat_id is None or recorder.error is not None:
            self.source = "nowhere: this chat is not saved, and the step is no longer in memory"
            return
        why = self.host.runner.unavailable()
        if why is not None:
            self.source = f"nowhere: {why}"
            return
        from_end = len(conversation.replies) - number
        tokens = tuple(t.step.token_id for t in reply.tokens)
        self._job = ReplayJob(recorder.store, recorder.chat_id, from_end, tokens, index)
        self.host.runner.start(self._job, self)
        # The cache now holds this step's input: the next reply starts from an empty
        # one, so that its record describes how its cache was made.
        conversation.reset_pending = True

    # -- GenerationConsumer: the replay job's events ---------------------------------

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """A notice of the rebuild."""
        if isinstance(event, NoticeEvent):
            self.host.notify(event.message)

    def generation_ended(self, error: str | None) -> None:
        """The rebuild finished (or failed)."""
        job, self._job = self._job, None
        if job is None or self.target is None:
            return
        if error is not None or job.given is None:
            self.source = f"nowhere: {error or 'the step could not be rebuilt'}"
        else:
            self._given = job.given
        self.update()

    def paint(self) -> None:
        """Nothing streams."""
