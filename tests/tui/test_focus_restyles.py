"""A focus move between the sampling panel's controls restyles the two controls, not
the whole panel, and rebuilds the footer only when the keys it shows change; the chat's
screen starts with its breakpoints' classes, not restyled again by the first resize.

Counts, not timings: how many nodes Textual restyles for one tab, against how many the
panel holds (a `:focus-within` rule on the panel restyled all of them at each tab, and
the footer's keys were built anew each time).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widgets import Input
from textual.widgets._footer import FooterKey  # the footer's key widget (not exported)

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, wait_until
from tui.app import SamplescopeApp
from tui.chat.screen import FOLD_BELOW, ChatScreen
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.slider import Slider

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


def footer_keys_shown(app: SamplescopeApp) -> list[tuple[str, bool]]:
    """The footer's keys as drawn: (key, enabled)."""
    return [(key.key, not key.has_class("-disabled")) for key in app.query(FooterKey)]


def keys_to_show(app: SamplescopeApp) -> list[tuple[str, bool]]:
    """The keys the screen's bindings ask a footer to show, in its order: the first
    binding of each action shown, then the palette's key."""
    bindings = app.screen.active_bindings
    first: dict[str, tuple[str, bool]] = {}
    for _, binding, enabled, _ in bindings.values():
        if binding.show:
            first.setdefault(binding.action, (binding.key, enabled))
    shown = list(first.values())
    palette = bindings.get(app.COMMAND_PALETTE_BINDING)
    if palette is not None:
        shown.append((palette[1].key, palette[2]))
    return shown


async def test_a_tab_between_two_sliders_restyles_them_and_keeps_the_footer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    restyled: list[DOMNode] = []
    apply = Stylesheet.apply

    def counted(self: Stylesheet, node: DOMNode, **kwargs: Any) -> None:
        restyled.append(node)
        apply(self, node, **kwargs)

    monkeypatch.setattr(Stylesheet, "apply", counted)
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        app.chat_screen.action_focus_sampling()
        await pilot.pause()
        assert isinstance(app.focused, Slider) and panel.has_class("-focus-within")
        footer = list(app.query(FooterKey))
        assert footer_keys_shown(app) == keys_to_show(app)
        first = app.focused
        restyled.clear()
        await pilot.press("tab")
        await pilot.pause()
        assert isinstance(app.focused, Slider) and app.focused is not first
        in_panel = len(list(panel.walk_children(with_self=True)))
        assert len(restyled) < in_panel // 5, (len(restyled), in_panel)
        assert list(app.query(FooterKey)) == footer  # the same keys: not rebuilt
        assert panel.has_class("-focus-within")


async def test_the_footer_follows_the_keys_and_the_panel_its_focus() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.pause()
        panel = app.query_one(SamplingPanel)
        assert isinstance(app.focused, Input) and not panel.has_class("-focus-within")
        at_the_prompt = footer_keys_shown(app)
        assert at_the_prompt == keys_to_show(app)
        app.chat_screen.action_focus_sampling()
        await pilot.pause()
        assert panel.has_class("-focus-within")
        assert footer_keys_shown(app) == keys_to_show(app) != at_the_prompt  # a slider's keys
        await pilot.press("f3")  # back to the message box
        await pilot.pause()
        assert isinstance(app.focused, Input) and not panel.has_class("-focus-within")
        assert footer_keys_shown(app) == keys_to_show(app) == at_the_prompt


@pytest.mark.parametrize("size", [(120, 36), (80, 24), (200, 20)])
async def test_the_chat_screen_starts_with_the_breakpoints_of_its_size(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """The first resize finds the breakpoints' classes set (no second restyle of the
    whole screen as the app starts); a later resize moves them as before."""
    changed: list[bool] = []
    update_classes = ChatScreen.update_classes

    def recorded(self: ChatScreen, classes: Any, update: bool = True, animate: bool = True) -> Any:
        before = set(self.classes)
        done = update_classes(self, classes, update=update, animate=animate)
        changed.append(before != set(self.classes))
        return done

    monkeypatch.setattr(ChatScreen, "update_classes", recorded)
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.pause()
        assert changed and not any(changed)
        width, height = size
        assert app.chat_screen.has_class("-wide" if width >= FOLD_BELOW else "-narrow")
        assert app.chat_screen.has_class("-tall" if height >= 30 else "-short")
        await pilot.resize_terminal(FOLD_BELOW - 1 if width >= FOLD_BELOW else FOLD_BELOW, 40)
        await wait_until(pilot, lambda: any(changed))
        assert app.chat_screen.has_class("-narrow" if width >= FOLD_BELOW else "-wide")
        assert app.chat_screen.has_class("-tall")


async def test_the_chat_screen_is_styled_once_as_the_app_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its nodes are styled as they mount, not a second time by the screen's first
    resume."""
    restyled: list[ChatScreen] = []
    update_node_styles = ChatScreen.update_node_styles

    def recorded(self: ChatScreen, animate: bool = True) -> None:
        restyled.append(self)
        update_node_styles(self, animate=animate)

    monkeypatch.setattr(ChatScreen, "update_node_styles", recorded)
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.pause()
        assert restyled == []
