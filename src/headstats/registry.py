"""One generic registry whose entries carry behaviour and metadata.

Every pluggable kind of thing in headstats (roles, one-sample tests, paired tests, corrections, input formats,
collectors) lives in a :class:`Registry`. An entry is whatever object carries the behaviour (a function or a
small frozen dataclass). Unknown names raise :class:`~headstats.errors.UnknownNameError` listing the valid
names and suggesting the nearest, in the manner of lm-evaluation-harness' ``lm_eval/api/registry.py``.
"""

from __future__ import annotations

import difflib
from typing import Callable, Generic, Iterable, Iterator, TypeVar

from headstats.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named collection of entries of one kind.

    Parameters
    ----------
    kind : str
        What an entry is, in words (``"role"``, ``"test"``, ``"correction"``): used in error messages.
    hint : str, optional
        Extra words appended to an unknown-name error (for example how to register one).
    """

    def __init__(self, kind: str, *, hint: str = "") -> None:
        self.kind = kind
        self.hint = hint
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T, *, overwrite: bool = False) -> T:
        """Add ``entry`` under ``name``; refuse to replace an existing one unless ``overwrite``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it")
        self._entries[name] = entry
        return entry

    def decorator(self, name: str, *, overwrite: bool = False) -> Callable[[T], T]:
        """``@registry.decorator("name")`` registers the decorated object."""
        def wrap(entry: T) -> T:
            return self.register(name, entry, overwrite=overwrite)
        return wrap

    def unregister(self, name: str) -> None:
        """Remove ``name`` (unknown names raise)."""
        self.get(name)
        del self._entries[name]

    def get(self, name: str) -> T:
        """The entry called ``name``.

        Raises
        ------
        UnknownNameError
            With the valid names and the nearest one, e.g. ``unknown test 'wilcox'; did you mean
            'wilcoxon'? choose one of t, wilcoxon, sign``.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The error message for an unknown ``name``."""
        names = list(self._entries)
        guess = did_you_mean(name, names)
        hint = f" ({self.hint})" if self.hint else ""
        return f"unknown {self.kind} {name!r}{guess}; choose one of {', '.join(names)}{hint}"

    def describe(self, name: str, attribute: str = "description") -> str:
        """The entry's ``attribute`` (its display name for reports), or ``name`` itself when unregistered.

        Reports name tests and corrections by what their registry entries say, so a newly registered one is
        named without a copy of its words elsewhere.
        """
        if name not in self._entries:
            return str(name)
        return str(getattr(self._entries[name], attribute, None) or name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


def did_you_mean(name: object, names: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the known name nearest to ``name`` (difflib ratio at least 0.6), else ``""``."""
    close = difflib.get_close_matches(str(name), list(names), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
