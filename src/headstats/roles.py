"""The registry of functional roles and their attention sieves (METHODS 1.1).

A role names where a head playing it should look: its *sieve* ``S_f(i)``, a set of key positions per
query position i. Two kinds exist:

``sieve`` roles
    a boolean key mask per query (``local``, ``delimiter``, ``delimiter_cls``, ``delimiter_sep``,
    ``block``), scored by :func:`headstats.scores.sieve_bias`.
``arc`` roles
    dependency arcs (``syntactic`` and ``syntactic:<rel>``), scored per arc by
    :func:`headstats.scores.arc_bias`.

Users add a sieve role by registering a function of one sequence's :class:`SequenceLayout`::

    import numpy as np
    from headstats.roles import register_role

    def previous_token(layout, options):
        n = layout.length
        return np.eye(n, k=-1, dtype=bool)          # S(i) = {i - 1}

    register_role("previous", previous_token, description="attends to the previous piece")

and a protocol names it (``roles: [local, previous]``). YAML never runs code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from headstats.errors import HeadstatsError

RoleKind = Literal["sieve", "arc"]
SYNTACTIC_PREFIX = "syntactic:"


@dataclass(frozen=True)
class SequenceLayout:
    """What a sieve function may know of one input sequence (numpy arrays of length ``length``).

    Attributes
    ----------
    length : int
        n, the number of real (unpadded) positions.
    special : ndarray of bool
        Special positions ([CLS], [SEP], ``<s>``, ``</s>``), from the tokenizer's special-token ids.
    cls, sep : ndarray of bool
        The [CLS] position(s), and every [SEP] position.
    segment : ndarray of int
        0 for sentence A, 1 for sentence B; specials belong to the segment they close or open
        ([CLS] and the first [SEP] to A, the last [SEP] to B).
    is_pair : bool
        Whether the input is a sentence pair.
    """

    length: int
    special: np.ndarray
    cls: np.ndarray
    sep: np.ndarray
    segment: np.ndarray
    is_pair: bool


SieveFunction = Callable[[SequenceLayout, object], np.ndarray]


@dataclass(frozen=True)
class RoleSpec:
    """A registered role.

    Attributes
    ----------
    name : str
        The name used in protocols and in the ``role`` column.
    kind : {"sieve", "arc"}
    sieve : callable or None
        For user roles: ``sieve(layout, options) -> (n, n) bool`` (row i = the sieve of query i).
        Built-in sieve roles are computed batched in :mod:`headstats.scores` and have ``sieve=None``.
    pairs_only : bool
        The role is undefined (NaN) on single-sentence inputs.
    description : str
    """

    name: str
    kind: RoleKind
    sieve: SieveFunction | None = None
    pairs_only: bool = False
    description: str = ""


_REGISTRY: dict[str, RoleSpec] = {}

BUILTIN_ROLES = (
    RoleSpec("local", "sieve", description="keys within w positions of the query, itself included"),
    RoleSpec("delimiter", "sieve", description="all special positions: [CLS] and every [SEP]"),
    RoleSpec("delimiter_cls", "sieve", description="the [CLS] position"),
    RoleSpec("delimiter_sep", "sieve", description="every [SEP] position"),
    RoleSpec("block", "sieve", pairs_only=True, description="non-special positions of the query's own segment"),
    RoleSpec("syntactic", "arc", description="the other end of each dependency arc of the protocol's relations"),
)
for _spec in BUILTIN_ROLES:
    _REGISTRY[_spec.name] = _spec


def register_role(
    name: str,
    sieve: SieveFunction,
    *,
    pairs_only: bool = False,
    description: str = "",
    overwrite: bool = False,
) -> RoleSpec:
    """Register a sieve role that a protocol may then name.

    Parameters
    ----------
    name : str
        Identifier-like name (letters, digits, ``_``); must not start with ``syntactic``.
    sieve : callable
        ``sieve(layout: SequenceLayout, options) -> ndarray of bool, shape (n, n)``: entry (i, j) is True
        when key j is in the sieve of query i. ``options`` is the protocol's ``ScoringOptions``.
    pairs_only : bool
        Score only pair inputs (NaN for single sentences).
    """
    if not name or not name.replace("_", "").isalnum() or name.startswith("syntactic"):
        raise ValueError(f"role name {name!r} must be letters, digits and '_' and not start with 'syntactic'")
    if name in {r.name for r in BUILTIN_ROLES}:
        raise ValueError(f"built-in role {name!r} cannot be replaced; register your role under another name")
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"role {name!r} is already registered; pass overwrite=True to replace it")
    if not callable(sieve):
        raise TypeError("sieve must be a callable (layout, options) -> (n, n) boolean array")
    spec = RoleSpec(name, "sieve", sieve=sieve, pairs_only=pairs_only, description=description)
    _REGISTRY[name] = spec
    return spec


def unregister_role(name: str) -> None:
    """Remove a user role (built-in roles cannot be removed)."""
    if name in {r.name for r in BUILTIN_ROLES}:
        raise ValueError(f"built-in role {name!r} cannot be unregistered")
    _REGISTRY.pop(name, None)


def list_roles() -> list[str]:
    """Registered role names; ``syntactic:<rel>`` is valid for any dependency relation."""
    return list(_REGISTRY)


def get_role(name: str) -> RoleSpec:
    """The spec of a role; ``syntactic:<rel>`` resolves to an arc role for that relation."""
    if name.startswith(SYNTACTIC_PREFIX):
        relation = name[len(SYNTACTIC_PREFIX):]
        if not relation:
            raise HeadstatsError("role 'syntactic:' needs a relation, e.g. 'syntactic:nsubj'")
        return RoleSpec(name, "arc", description=f"the other end of each '{relation}' arc")
    if name not in _REGISTRY:
        raise HeadstatsError(
            f"unknown role {name!r}; choose one of {', '.join(list_roles())}, or 'syntactic:<relation>'"
        )
    return _REGISTRY[name]


def check_role(name: str) -> str:
    """Return ``name`` if it is a valid role, else raise an error listing the valid ones."""
    get_role(name)
    return name


def role_relation(name: str) -> str | None:
    """The relation of ``syntactic:<rel>`` (canonical label), or None for other roles."""
    if name.startswith(SYNTACTIC_PREFIX):
        from headstats.inputs.parsing import normalize_relation_name

        return normalize_relation_name(name[len(SYNTACTIC_PREFIX):])
    return None
