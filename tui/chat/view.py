"""The chat view: the conversation, its replies streaming in, and the panels around.

`ChatView` owns the chat's widgets (transcript, message box, sliders, status line and
the per-token panels of `tui.chat.panels`) and draws the chat's state (`Conversation`),
which its handlers change. Its `selected` is the token the panels show (the token
cursor's, else the latest); each panel draws it as it is handed over, all of them at
once, or while a reply streams, those due at a tick of the redraw timer.
It consumes its replies' events: the app's `GenerationRunner` runs each reply on the
worker thread and hands the events over on the UI thread. The app passes down what
the view needs and calls its methods for the keys; the view never reaches up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input

from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    GenerationStats,
    LoopEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    RewindEvent,
    TokenEvent,
)
from backend.chat.protocol import LiveSettings, ModelInfo
from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import PhraseBans
from backend.store.store import ChatRecord
from sampling.analysis.surprise import SurpriseRule
from sampling.settings.record import SamplerSettings
from tui.chat.beam_job import BeamJob
from tui.chat.branch_nav import move_branch
from tui.chat.conversation import Conversation
from tui.chat.draw_budget import budget_for
from tui.chat.live_status import status_changes
from tui.chat.paint_schedule import STATUS_EVERY, TEXT_EVERY, PaintSchedule
from tui.chat.panels import PANELS
from tui.chat.reply import FINISH_LABELS, Reply
from tui.chat.reply_job import ReplyJob
from tui.chat.selection import NOTHING, ChatPanel, PanelT, Selection, select
from tui.chat.steering import ask_alternative
from tui.chat.stored import stored_replies
from tui.chat.transcript import Transcript
from tui.chat.whatif import WhatIf
from tui.panel.beam_controls import BeamControls
from tui.panel.loop_controls import LoopControls
from tui.panel.phrase_bans import PhraseBanControls
from tui.panel.sampling_panel import SamplingPanel
from tui.runner import GenerationRunner
from tui.widgets.entry import covered
from tui.widgets.status_line import StatusLine, StatusState, contrast_label, model_label
from tui.widgets.token_text import TokenPieces

STORED_REPLIES_NOTE = "Replies of a saved chat have no per-token record; new replies will."


class ChatView(Vertical):
    """The chat: it shows the conversation and streams its replies in.

    Args:
        runner: Runs the replies (the app's, shared with the compare view).
        conversation: The chat's state, which the view's handlers change.
        live: The settings the sliders change and every reply reads.
        pieces: Shows any token id (the probability panel's candidates).
        max_tokens: The longest reply.
        clock: Time source for the live tokens/s (a fake one in snapshots).
        cursor_blink: Whether the message box's cursor blinks.
        panels: The per-token panels' classes, each made with the view as its host.
    """

    selected: reactive[Selection] = reactive(NOTHING, init=False)
    """The token the panels show: the token cursor's, else the latest."""

    def __init__(
        self,
        runner: GenerationRunner,
        conversation: Conversation,
        live: LiveSettings,
        pieces: TokenPieces,
        *,
        max_tokens: int,
        clock: Callable[[], float] = time.perf_counter,
        cursor_blink: bool = True,
        panels: Sequence[type[ChatPanel]] = PANELS,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.runner = runner
        self.conversation = conversation
        self.live = live
        self.pieces = pieces
        self.max_tokens = max_tokens
        self.generating = False
        """Whether a reply is running."""
        self.event_log: list[GenerationEvent] | None = None
        """Set to a list to record every event of the current reply handled (tests)."""
        self._clock = clock
        self._pending: Callable[[], None] | None = None
        self._dirty = False
        self._first_token_at: float | None = None
        self._last_token_at: float | None = None
        self._generated = 0  # tokens the running reply sampled (not a branch's given ones)
        self.beam_width = 0
        """Beams a reply keeps (0: replies are sampled)."""
        self.length_penalty = 0.0
        """A finished beam ranks by logprob / length ** it."""
        self._beam_job: BeamJob | None = None  # the running reply's, when a beam search
        self._probs_note = ""
        """What the probability panel says when no reply of this session has a token."""
        self._had_thinking = False  # whether the footer shows the thinking key
        self._transcript = Transcript(id="transcript")
        self._prompt = Input(placeholder="Type a message; Enter sends it", id="prompt")
        self._prompt.cursor_blink = cursor_blink
        self._sampling = SamplingPanel(live.current, id="sampling")
        self._status = StatusLine(id="status")
        self.panels = [kind(self) for kind in panels]
        """The per-token panels, in their columns' order."""
        self.schedule = PaintSchedule(
            {self._transcript: TEXT_EVERY, self._status: STATUS_EVERY}
            | {panel: panel.PAINT_EVERY for panel in self.panels},
            text=self._transcript,
        )
        """What each tick of the redraw timer draws while a reply streams."""
        self._due: Collection[Widget] | None = None  # the panels due at this tick
        self.whatif = WhatIf(self)  # `w` on a past token

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield self._transcript
                yield from (panel for panel in self.panels if panel.COLUMN == "left")
                yield self._prompt
            with Vertical(id="right"):
                yield self._sampling
                yield from (panel for panel in self.panels if panel.COLUMN == "right")
        yield self._status

    def on_mount(self) -> None:
        self._transcript.border_title = "chat"

    @property
    def ready(self) -> bool:
        """Whether a model is loaded (and none is being opened in its place)."""
        return self.runner.unavailable() is None

    @property
    def status(self) -> StatusState:
        """What the status line shows."""
        return self._status.state

    @property
    def cursor(self) -> tuple[int, int] | None:
        """The selected past token (reply, token), or None."""
        return self._transcript.cursor

    @property
    def surprise(self) -> SurpriseRule:
        """Which tokens count as surprising (the transcript's rule)."""
        return self._transcript.surprise

    def panel(self, kind: type[PanelT]) -> PanelT:
        """The panel of class `kind`."""
        for panel in self.panels:
            if isinstance(panel, kind):
                return panel
        raise LookupError(f"the chat has no {kind.__name__}")

    def toggle_panel(self, name: str) -> None:
        """Show or hide the panel named `name` (a plot's key)."""
        for panel in self.panels:
            if name == panel.NAME:
                panel.toggle()

    def select_token(self, number: int, index: int) -> None:
        """Put the token cursor on token `index` of reply `number` (a timeline's click)."""
        if number < len(self.conversation.replies):
            self.screen.set_focus(self._transcript)
            self._transcript.select(number, index)

    @property
    def colour(self) -> bool:
        """Whether tokens are tinted by probability."""
        return self._transcript.colour

    def show_model(self, info: ModelInfo) -> None:
        """The model is loaded: say which, and that the chat is ready."""
        backend = self.runner.backend
        # Layers on RPC servers: the decode waits on them, not on this machine's cores.
        self.schedule.budget = None if info.placement else budget_for(info.n_threads)
        self._status.update(
            model=model_label(info.name, info.path),
            contrast=contrast_label(info.contrast_model),
            threads=info.n_threads,
            placement=info.placement,
            ctx_total=info.n_ctx,
            ctx_used=backend.context_used if backend is not None else 0,
            phase="idle",
        )
        self._sampling.show_steering(bool(info.control_vectors))

    def show_load_error(self, error: str) -> None:
        """The model could not be loaded: say why and what to do."""
        self._status.update(phase="error")
        self._transcript.add_note(f"Could not load the model: {error}", error=True)
        self._transcript.add_note("Quit with ctrl+q, then run: samplescope --model PATH")

    @on(Input.Submitted, "#prompt")
    def _on_submit(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        why = self.runner.unavailable()
        if why is not None:
            self.notify(why, severity="warning")
            return
        if self.generating:
            self.notify("A reply is running: wait, or press Esc to stop it.")
            return
        event.input.clear()
        self.conversation.ask(text)
        self._transcript.add_user(text)
        self.start_reply()

    def start_reply(self) -> None:
        """Generate the assistant's reply to the conversation, with the live settings."""
        if self.beam_width:
            reply, beams = self.conversation.begin_beams(
                self.live.current, self.max_tokens, self.beam_width, self.length_penalty
            )
            self.run_reply(reply, beams)
            self._beam_job = beams
            return
        reply, job = self.conversation.begin_reply(self.live, self.max_tokens)
        self.run_reply(reply, job)

    def run_reply(self, reply: Reply, job: ReplyJob | BeamJob, *, replace: bool = False) -> None:
        """Show `reply` last (`replace`: instead of its turn's and what follows); run its job."""
        self._beam_job = None
        self._transcript.clear_cursor()
        self.whatif.reply_started(reply)
        if replace:
            self._transcript.remove_replies_from(reply.turn)
        self._transcript.add_reply(reply)
        self.generating = True
        self._first_token_at = self._last_token_at = None
        self._generated = 0
        self.schedule.restart()
        self._status.update(phase="prefill", prefill_done=0, prefill_total=0, note="")
        self.runner.start(job, self)

    def stop(self) -> bool:
        """Stop the running reply, keeping what was generated; False if none runs."""
        if self.generating:
            self.runner.cancel()
        return self.generating

    def stop_then(self, action: Callable[[], None]) -> bool:
        """If a reply runs, stop it and run `action` once it ended (True); else False."""
        if not self.generating:
            return False
        self.runner.cancel()
        self._pending = action
        return True

    def new_chat(self) -> None:
        """Forget the conversation (the backend's cache is reset before the next reply)."""
        self.conversation.restart()
        self._probs_note = ""
        self._transcript.clear()
        self._redraw()  # the panel and the plots: nothing yet
        self._status.update(ctx_used=0, ctx_note="", note="new chat")

    def show_chat(self, record: ChatRecord, cursor: tuple[int, int] | None = None) -> None:
        """Make a stored chat the conversation, continued on Enter: its replies with their
        records (else plain text); `cursor`: select that token rather than focus the input."""
        recorder = self.conversation.recorder
        shown = stored_replies(record, recorder.store, self.pieces) if recorder else {}
        self.conversation.restart(record, list(shown.values()))
        self._transcript.show_record(record, shown, cursor)
        self._probs_note = STORED_REPLIES_NOTE if len(record.replies) > len(shown) else ""
        self._redraw()
        self._status.update(ctx_used=0, ctx_note="", note=f"chat {record.id}")
        if cursor is None:
            self.focus_input()

    def adopt_reply(
        self, settings: SamplerSettings, tokens: Sequence[TokenEvent], finished: FinishedEvent
    ) -> None:
        """Make a reply generated elsewhere (a compare column) the last reply, and save
        it: another branch of the last reply, if the conversation ends with one (made by
        this model: else it replaces that reply)."""
        conversation = self.conversation
        if conversation.ends_with_reply:
            last = conversation.replies[-1]
            if conversation.made_elsewhere(last) is not None:
                conversation.drop_last_reply()
                self._transcript.remove_replies_from(last.turn)
        branching = conversation.ends_with_reply
        for token in tokens:
            self.pieces.learn(token)
        reply = self.conversation.adopt_reply(settings, tokens, finished, self.max_tokens)
        transcript = self._transcript
        (transcript.show_branch if branching else transcript.add_reply)(reply)
        self.flush_now()

    def show_last_branch(self, branch: Reply, at: int) -> None:
        """Draw `branch` as the last reply, its token `at` selected (where it parts)."""
        self._transcript.show_branch(branch, at)
        self._redraw()

    @on(Transcript.BranchAsked)
    def _on_branch_asked(self, message: Transcript.BranchAsked) -> None:
        message.stop()
        move_branch(self, message.delta)

    def focus_input(self) -> None:
        """Focus the message box (at once: the next key goes there)."""
        self.screen.set_focus(self._prompt)

    def set_bans(self, bans: PhraseBans) -> None:
        """Ban phrases from the next reply on, and show them on the sampling panel."""
        self.conversation.bans = bans
        self._sampling.show_bans(bans)

    def set_loops(self, guard: LoopGuard) -> None:
        """Watch the next replies for loops so (off, mark, stop), shown on the panel."""
        self.conversation.loops = guard
        self._sampling.show_loops(guard)

    @on(LoopControls.Changed)
    def _on_loops_changed(self, message: LoopControls.Changed) -> None:
        message.stop()
        self.set_loops(message.guard)

    @on(BeamControls.Changed)
    def _on_beams_changed(self, message: BeamControls.Changed) -> None:
        message.stop()
        self.beam_width, self.length_penalty = message.width, message.length_penalty
        self._sampling.show_beams(self.beam_width, self.length_penalty)

    @on(PhraseBanControls.Changed)
    def _on_bans_changed(self, message: PhraseBanControls.Changed) -> None:
        message.stop()
        self.set_bans(message.bans)

    def show_settings(self, settings: SamplerSettings) -> None:
        """Show the settings in force on the sampling panel."""
        self._sampling.show(settings)
        self.whatif.update()

    def focus_sampling(self) -> None:
        """Focus the first slider."""
        self._sampling.focus_first()

    def enter_token_cursor(self) -> None:
        """Enter token-cursor mode on the latest token.

        The focus moves at once, not after the messages already queued (Textual's
        `focus()`): the keys that follow, ← → typed straight after, move the cursor."""
        self.screen.set_focus(self._transcript)
        if self.cursor is None:
            self._transcript.action_move_token(1_000_000)

    def leave_token_cursor(self) -> bool:
        """Leave token-cursor mode for the message box; False if not in it."""
        if self.cursor is None and not self._transcript.has_focus:
            return False
        self._transcript.clear_cursor()
        self.focus_input()
        return True

    def set_surprise(self, rule: SurpriseRule) -> None:
        """Change which tokens count as surprising (the config file's `surprise`)."""
        self._transcript.set_surprise(rule)

    def set_colour(self, colour: bool) -> None:
        """Tint each token by its probability, or not."""
        self._transcript.set_colour(colour)

    @property
    def has_thinking(self) -> bool:
        """Whether a reply shown has a thinking (its key shows in the footer then)."""
        return self._transcript.has_thinking

    def toggle_thinking(self) -> bool:
        """Show every reply's thinking, or fold them; returns whether shown."""
        return self._transcript.toggle_thinking()

    @on(Transcript.AlternativesAsked)
    def _on_alternatives(self, message: Transcript.AlternativesAsked) -> None:
        message.stop()
        if not covered(self):  # an Enter typed twice asks once
            ask_alternative(self, *message.cursor)

    @on(Transcript.SurpriseChanged)
    def _on_surprise_changed(self, message: Transcript.SurpriseChanged) -> None:
        message.stop()
        self._select()  # the timeline marks the tokens of the new rule

    @on(Transcript.TokenSelected)
    def _on_token_selected(self, message: Transcript.TokenSelected) -> None:
        message.stop()
        if message.cursor is None and self.generating:
            self._dirty = True  # back to the latest token, at the panels' next ticks
            return
        self._select()

    def _select(self, due: Collection[Widget] | None = None) -> None:
        """Take the selection, and hand it to the panels (`due`: only those)."""
        self._due = due
        try:
            self.selected = select(self.conversation.replies, self.cursor, self._probs_note)
        finally:
            self._due = None

    def watch_selected(self, selection: Selection) -> None:
        due = self._due
        for panel in self.panels:
            if due is None or panel in due:
                panel.selected = selection

    # -- the reply streaming in (GenerationConsumer) -------------------------------------

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """Handle one event of the running reply."""
        if self.event_log is not None:
            self.event_log.append(event)
        if isinstance(event, TokenEvent):
            now = self._clock()
            if self._first_token_at is None:
                self._first_token_at = now
            self._last_token_at = now
            self._generated += 1
            self.conversation.replies[-1].tokens.append(event)
            self.pieces.learn(event)
            self._dirty = True
        elif isinstance(event, RewindEvent):
            self.conversation.rewind_reply(event)
            self._generated = max(0, self._generated - len(event.token_ids))
            self._transcript.show_branch(self.conversation.replies[-1])
            self._dirty = True
        elif isinstance(event, LoopEvent):
            self.conversation.replies[-1].loop = event.loop
            self._dirty = True
        elif isinstance(event, PrefillProgress):
            self._status.update(prefill_done=event.done, prefill_total=event.total)
        elif isinstance(event, PhaseEvent):
            if event.phase == "decode":
                self._status.update(phase="decode", decode_tokens=0, decode_tps=None)
        elif isinstance(event, NoticeEvent):
            self._transcript.add_note(event.message)
        elif isinstance(event, FinishedEvent):
            self._finish(event)

    def generation_ended(self, error: str | None) -> None:
        """The reply's job returned: its FinishedEvent came before, unless it broke."""
        if self.generating:
            reason = error or "the reply ended without finishing"
            self._finish(FinishedEvent("error", GenerationStats(), "", (), error=reason))
        # The job's context is freed only now: the memory is what the next reply starts from.
        self._update_status()

    def _finish(self, event: FinishedEvent) -> None:
        reply = self.conversation.finish_reply(event)
        beams, self._beam_job = self._beam_job, None
        if beams is not None and event.reason != "error":
            self.conversation.add_beams(reply, beams)
            self._transcript.show_branch(reply)  # its beams' fork marks
        self.generating = False
        self._redraw()
        stats = event.stats
        self._status.update(
            phase="idle",
            last_ttft_ms=stats.ttft_ms,
            last_tps=stats.decode_tps,
            last_reason=FINISH_LABELS.get(event.reason, event.reason),
            last_discarded=stats.discarded_tokens,
        )
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending()

    def paint(self) -> None:
        """One tick of the redraw timer: the parts the schedule says are due."""
        if not self._dirty:
            return
        if not self.generating:
            self._redraw()
            return
        # The parts due are drawn together: one repaint for all of them.
        due = self.schedule.tick()
        if self._transcript in due:
            self._transcript.sync_last()
            self._note_thinking()
        if any(panel in due for panel in self.panels):
            self._select(due)
        if self._status in due:
            self._update_status()

    def flush_now(self) -> None:
        """Draw what is pending now rather than at the next tick (tests, snapshots)."""
        self._redraw()

    def _redraw(self) -> None:
        self._dirty = False
        self._transcript.sync_last()
        self._note_thinking()
        self._select()
        self._update_status()

    def _note_thinking(self) -> None:
        """Show the thinking key in the footer once a reply has a thinking."""
        if self.has_thinking != self._had_thinking:
            self._had_thinking = not self._had_thinking
            self.app.refresh_bindings()

    def _update_status(self) -> None:
        self._status.update(
            **status_changes(
                self.runner.backend,
                self.conversation,
                self.generating,
                self._generated,
                self._first_token_at,
                self._last_token_at,
            )
        )
