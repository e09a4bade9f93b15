"""The chain-order editor: keys move and switch samplers; each change goes up as a message."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.pilot import Pilot

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, type_message, wait_until
from tui.app import SamplescopeApp
from tui.panel.chain_order import ChainOrder, rows_for
from tui.panel.sampling_panel import SamplingPanel

pytestmark = pytest.mark.anyio

NAMES = ("penalties", "temperature", "top_k", "top_p", "min_p")


class OrderHost(App[None]):
    """The editor alone; it keeps every order asked for and accepts each one."""

    def __init__(self, order: tuple[str, ...]) -> None:
        super().__init__()
        self.order = order
        self.asked: list[tuple[str, ...]] = []

    def compose(self) -> ComposeResult:
        yield ChainOrder("samplers", "order", NAMES, self.order)

    def on_chain_order_changed(self, message: ChainOrder.Changed) -> None:
        self.asked.append(message.order)
        message.chain.set_value(message.order)


async def test_moving_and_switching_post_the_orders_in_sequence() -> None:
    host = OrderHost(NAMES)
    async with host.run_test(size=(60, 12)) as pilot:
        chain = host.query_one(ChainOrder)
        chain.focus()
        await pilot.press("down", "shift+down")  # temperature after top_k
        await pilot.press("space")  # temperature off
        await pilot.press("up", "space")  # top_k off
        await pilot.press("space")  # top_k on again, where it was
        await pilot.press("down", "space")  # temperature on again
        await pilot.press("]", "[")  # down and back up: two orders
        await pilot.pause()
        assert host.asked == [
            ("penalties", "top_k", "temperature", "top_p", "min_p"),
            ("penalties", "top_k", "top_p", "min_p"),
            ("penalties", "top_p", "min_p"),
            ("penalties", "top_k", "top_p", "min_p"),
            ("penalties", "top_k", "temperature", "top_p", "min_p"),
            ("penalties", "top_k", "top_p", "temperature", "min_p"),
            ("penalties", "top_k", "temperature", "top_p", "min_p"),
        ]
        assert chain.value == host.asked[-1]


async def test_a_refused_order_snaps_back_and_the_ends_do_not_move() -> None:
    host = OrderHost(NAMES)
    async with host.run_test(size=(60, 12)) as pilot:
        chain = host.query_one(ChainOrder)
        chain.focus()
        await pilot.press("shift+up")  # the top row cannot go higher: nothing asked
        assert host.asked == []
        host.on_chain_order_changed = lambda message: host.asked.append(message.order)  # type: ignore[method-assign]
        await pilot.press("shift+down")
        await pilot.pause()
        assert host.asked == [("temperature", "penalties", "top_k", "top_p", "min_p")]
        chain.set_value(NAMES)  # what the owner says is in force
        assert chain.value == NAMES
        assert [name for name, _ in chain.rows] == list(NAMES)


def test_rows_keep_a_sampler_switched_off_after_the_one_it_followed() -> None:
    rows = rows_for(NAMES, [], ("temperature", "top_p"))
    assert rows == [
        ("penalties", False),
        ("temperature", True),
        ("top_k", False),
        ("top_p", True),
        ("min_p", False),
    ]
    moved = rows_for(NAMES, rows, ("top_p", "temperature"))
    assert moved == [
        ("penalties", False),
        ("top_p", True),
        ("temperature", True),
        ("top_k", False),
        ("min_p", False),
    ]


async def send_message_and_wait_paused(
    pilot: Pilot[object], app: SamplescopeApp, fake: FakeBackend
) -> None:
    """Send a message and wait until the fake model pauses mid-reply."""
    await wait_until(pilot, lambda: chat_of(app).ready)
    await type_message(pilot, app, "tell me about the cat")
    await wait_until(pilot, fake.paused.is_set)
    await wait_until(
        pilot,
        lambda: (
            bool(chat_of(app).conversation.replies)
            and len(chat_of(app).conversation.replies[-1].tokens) == 5
        ),
    )


class PanelHost(App[None]):
    """The sampling panel alone; it keeps every `SettingChanged` and applies it."""

    def __init__(self, settings: SamplerSettings = DEFAULT_CHAT_SETTINGS) -> None:
        super().__init__()
        self.settings = settings
        self.asked: list[tuple[str, object]] = []

    def compose(self) -> ComposeResult:
        yield SamplingPanel(self.settings)

    def on_sampling_panel_setting_changed(self, message: SamplingPanel.SettingChanged) -> None:
        self.asked.append((message.field, message.value))
        self.settings = self.settings.with_changes(**{message.field: message.value})
        self.query_one(SamplingPanel).show(self.settings)


async def test_the_panel_posts_the_order_as_a_setting_change() -> None:
    host = PanelHost()
    async with host.run_test(size=(80, 30)) as pilot:
        host.query_one(SamplingPanel).open_group("order")
        chain = host.query_one(ChainOrder)
        chain.focus()
        start = DEFAULT_CHAT_SETTINGS.order
        assert chain.value == start
        await pilot.press(*["down"] * start.index("top_k"), "shift+up")  # top_k one up
        await pilot.press("down", "space")  # the sampler now after top_k switched off
        await pilot.pause()
        moved = list(start)
        at = moved.index("top_k")
        moved[at - 1], moved[at] = moved[at], moved[at - 1]
        switched = [name for name in moved if name != moved[at]]
        assert host.asked == [("samplers", tuple(moved)), ("samplers", tuple(switched))]
        assert host.settings.order == tuple(switched)
        assert chain.value == tuple(switched)


async def test_a_change_of_order_mid_reply_applies_from_the_next_token() -> None:
    fake = FakeBackend(pause_after_tokens=5)
    app = SamplescopeApp(fake, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await send_message_and_wait_paused(pilot, app, fake)
        app.query_one(SamplingPanel).open_group("order")
        chain = app.query_one(ChainOrder)
        chain.focus()
        top_k_row = [name for name, _ in chain.rows].index("top_k")
        await pilot.press(*["down"] * top_k_row, "space")  # top_k off, mid-reply
        await pilot.pause()
        without_top_k = tuple(name for name in DEFAULT_CHAT_SETTINGS.order if name != "top_k")
        assert app.live.current.samplers == without_top_k
        fake.resume.set()
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        steps = [token.step for token in chat_of(app).conversation.replies[-1].tokens]
        assert len(steps) > 5
        assert [s.settings.order for s in steps[:5]] == [DEFAULT_CHAT_SETTINGS.order] * 5
        assert {s.settings.order for s in steps[5:]} == {without_top_k}
        assert all(s.cut_by != "top_k" for s in steps[5:])


@pytest.mark.parametrize("temperature_last", [False, True])
async def test_moving_the_temperature_runs_the_order_as_shown(temperature_last: bool) -> None:
    host = PanelHost(DEFAULT_CHAT_SETTINGS.with_changes(temperature_last=temperature_last))
    async with host.run_test(size=(80, 30)) as pilot:
        host.query_one(SamplingPanel).open_group("order")
        chain = host.query_one(ChainOrder)
        chain.focus()
        start = host.settings.order
        at = start.index("temperature")
        # llama.cpp's chain, temperature last: after it only what its placement puts
        # right after it (smoothing) or last (adaptive-p).
        assert start[at:] == ("temperature", "smoothing", "adaptive_p")
        await pilot.press(*["down"] * at, "shift+up")
        await pilot.pause()
        moved = (*start[: at - 1], "temperature", start[at - 1], *start[at + 1 :])
        # temperature_last on would move it back last: the panel switches it off first.
        wanted = [("temperature_last", False)] if temperature_last else []
        assert host.asked == [*wanted, ("samplers", moved)]
        assert host.settings.order == moved and chain.value == moved


def test_a_long_order_shows_a_window_of_rows_that_follows_the_cursor() -> None:
    names = tuple(f"unit_{i}" for i in range(12))
    chain = ChainOrder("samplers", "order", names, names)
    assert chain.get_content_height(Size(80, 40), Size(80, 40), 60) == 8
    for _ in range(10):
        chain.action_cursor(1)
    shown = chain.render().plain.splitlines()
    assert len(shown) == 8 and shown[-1].strip().startswith("11. unit_10")
    assert chain.value == names  # every row is still there, on
