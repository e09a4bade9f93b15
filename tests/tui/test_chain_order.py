"""The chain-order editor: keys move and switch samplers; each change goes up as a message."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from tui.widgets.chain_order import ChainOrder, rows_for

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
