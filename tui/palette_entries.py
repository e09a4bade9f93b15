"""A command palette provider whose entries are made once per opening of the palette."""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.command import Provider

EntryT = TypeVar("EntryT")


class OncePerPalette(Provider, Generic[EntryT]):
    """A `Provider` that makes its entries once per opening of the palette.

    Textual makes a provider for each opening and searches it again at every key typed;
    entries made from files or from the registry (presets read and parsed, each
    setting's variations formatted) are made at the first search and kept while the
    palette is open, so a preset saved meanwhile shows at the next opening.
    """

    _made: list[EntryT] | None = None

    def make_entries(self) -> list[EntryT]:
        """The entries, made now (a subclass says how)."""
        raise NotImplementedError

    def entries(self) -> list[EntryT]:
        """The entries of this opening of the palette."""
        if self._made is None:
            self._made = self.make_entries()
        return self._made
