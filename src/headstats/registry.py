"""One generic registry whose entries carry behaviour and metadata.

Every pluggable kind of thing in headstats (roles, one-sample tests, paired tests, corrections, input formats,
collectors) lives in a :class:`Registry`. An entry is whatever object carries the behaviour (a function or a
small frozen dataclass). Unknown names raise :class:`~headstats.errors.UnknownNameError` listing the valid
names and suggesting the nearest, in the manner of lm-evaluation-harness' ``lm_eval/api/registry.py``.

An entry may also be registered *lazily*, as the ``"package.module:attribute"`` reference of the object
(:meth:`Registry.register_lazy`, lm-evaluation-harness' lazy placeholders): the registry imports it the first
time the entry is asked for, and caches it. That is how a registry names code that is slow to import or that
imports the registry itself. ``tests/test_layers.py`` reads every such reference as an import of the module
that writes it: a reference never reaches up a layer or closes a circle.
"""

from __future__ import annotations

import difflib
import importlib
import re
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
        self._lazy: dict[str, str] = {}  # name -> "package.module:attribute", until first asked for

    def register_lazy(self, name: str, reference: str, *, overwrite: bool = False) -> None:
        """Add the object at ``reference`` (``"package.module:attribute"``) under ``name``, imported at first use.

        Raises
        ------
        ValueError
            For a reference that is not ``package.module:attribute``, or a name already registered (unless
            ``overwrite``).
        """
        if not isinstance(reference, str) or not REFERENCE.fullmatch(reference):
            raise ValueError(f"a lazy {self.kind} is 'package.module:attribute', not {reference!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it")
        self._entries.pop(name, None)
        self._lazy[name] = reference
        self._entries[name] = None  # type: ignore[assignment]  # keeps the registration order

    def _materialise(self, name: str) -> T:
        reference = self._lazy[name]
        module, _, attribute = reference.partition(":")
        try:
            entry = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ImportError(f"{self.kind} {name!r} names {reference!r}, which cannot be imported: {exc}") from exc
        if self._lazy.get(name) == reference:  # the import may have registered the real entry already
            del self._lazy[name]
            self._entries[name] = entry
        return self._entries[name]

    def register(self, name: str, entry: T, *, overwrite: bool = False) -> T:
        """Add ``entry`` under ``name``; refuse to replace an existing one unless ``overwrite``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it")
        self._lazy.pop(name, None)
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
        self._lazy.pop(name, None)

    def get(self, name: str) -> T:
        """The entry called ``name``.

        Raises
        ------
        UnknownNameError
            With the valid names and the nearest one, e.g. ``unknown test 'wilcox'; did you mean
            'wilcoxon'? choose one of t, wilcoxon, sign``.
        """
        try:
            if name in self._lazy:
                return self._materialise(name)
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
        return str(getattr(self.get(name), attribute, None) or name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs in registration order (lazy entries imported)."""
        return [(name, self.get(name)) for name in list(self._entries)]

    def references(self) -> dict[str, str]:
        """The lazy entries not imported yet: name -> ``"package.module:attribute"``."""
        return dict(self._lazy)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


#: A lazy entry's reference: ``package.module:attribute``.
REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def nearest_name(name: object, names: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name nearest to ``name`` (difflib's ratio, at least ``cutoff``), else None; of names as near, the
    first in ``names`` (a registry's order: ``fdr`` -> ``fdr_bh``, registered before ``fdr_by``)."""
    names = list(names)
    scored = [(difflib.SequenceMatcher(None, str(name), str(n)).ratio(), -k) for k, n in enumerate(names)]
    if not scored:
        return None
    ratio, minus_index = max(scored)
    return names[-minus_index] if ratio >= cutoff else None


def did_you_mean(name: object, names: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the known name nearest to ``name`` (:func:`nearest_name`), else ``""``."""
    close = nearest_name(name, names)
    return f"; did you mean {close!r}?" if close is not None else ""
