"""The registry of functional roles and their attention sieves (METHODS 1.1).

A role names where a head playing it should look: its *sieve* ``S_f(i)``, a set of key positions per
query position i. Two kinds exist:

``sieve`` roles
    a boolean key mask per query (``local``, ``delimiter``, ``delimiter_cls``, ``delimiter_sep``,
    ``block``), scored by :func:`headstats.analyses.sieves.sieve_bias_of_keys`.
``arc`` roles
    dependency arcs (``syntactic`` and ``syntactic:<rel>``), scored per arc by
    :func:`headstats.analyses.sieves.arc_scores`.

Users add a sieve role by registering a function of one sequence's :class:`SequenceLayout`::

    import numpy as np
import pandas as pd
    from headstats.analyses.roles import register_role

    def previous_token(layout, options):
        n = layout.length
        return np.eye(n, k=-1, dtype=bool)          # S(i) = {i - 1}

    register_role("previous", previous_token, description="attends to the previous piece")

and a protocol names it (``roles: [local, previous]``). YAML never runs code.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np

from headstats.errors import HeadstatsError
from headstats.registry import Registry

if TYPE_CHECKING:
    import torch

    from headstats.engine.batch import BatchLayout
    from headstats.inputs.records import Record

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
#: ``batched(layout, window) -> bool tensor`` broadcasting to (B, N, N): entry (b, i, j) True when key j is in
#: the sieve of query i of input b (``layout`` is an :class:`headstats.engine.batch.BatchLayout`).
BatchedSieve = Callable[["BatchLayout", int], "torch.Tensor"]


@dataclass(frozen=True)
class RoleSpec:
    """A registered role: its name, its kind and the behaviour that computes its sieve.

    Attributes
    ----------
    name : str
        The name used in protocols and in the ``role`` column.
    kind : {"sieve", "arc"}
    sieve : callable or None
        ``sieve(layout, options) -> (n, n) bool`` for one sequence (row i = the sieve of query i).
    batched : callable or None
        ``batched(layout, window) -> (B, N, N) bool tensor`` for a whole batch; the built-in roles have one,
        and a user role may bring one for speed. Used in preference to ``sieve``.
    pairs_only : bool
        The role is undefined (NaN) on single-sentence inputs.
    description : str
    builtin : bool
        Built-in roles cannot be replaced or removed.
    """

    name: str
    kind: RoleKind
    sieve: SieveFunction | None = None
    batched: BatchedSieve | None = None
    pairs_only: bool = False
    description: str = ""
    builtin: bool = False


def _local(layout: "BatchLayout", window: int) -> "torch.Tensor":
    """``|i - j| <= w`` (METHODS 1.1, local)."""
    import torch

    n = layout.real.shape[1]
    idx = torch.arange(n, device=layout.real.device)
    return ((idx[:, None] - idx[None, :]).abs() <= window)[None]


def _block(layout: "BatchLayout", window: int) -> "torch.Tensor":
    """Non-special keys of the query's own segment (METHODS 1.1, block)."""
    same = layout.segment[:, :, None] == layout.segment[:, None, :]
    return same & ~layout.special[:, None, :]


def _keys(mask_name: str) -> BatchedSieve:
    """The same keys for every query: the positions of one of the layout's masks (delimiter roles)."""
    def sieve(layout: "BatchLayout", window: int) -> "torch.Tensor":
        return getattr(layout, mask_name)[:, None, :]
    return sieve


#: Every role a protocol may name (besides ``syntactic:<relation>``); built-ins are registered like user roles.
ROLES: Registry[RoleSpec] = Registry(
    "role", hint="or 'syntactic:<relation>'; add a role with headstats.register_role"
)

BUILTIN_ROLES = (
    RoleSpec("local", "sieve", batched=_local, builtin=True,
             description="keys within w positions of the query, itself included"),
    RoleSpec("delimiter", "sieve", batched=_keys("special"), builtin=True,
             description="all special positions: [CLS] and every [SEP]"),
    RoleSpec("delimiter_cls", "sieve", batched=_keys("cls"), builtin=True, description="the [CLS] position"),
    RoleSpec("delimiter_sep", "sieve", batched=_keys("sep"), builtin=True, description="every [SEP] position"),
    RoleSpec("block", "sieve", batched=_block, pairs_only=True, builtin=True,
             description="non-special positions of the query's own segment"),
    RoleSpec("syntactic", "arc", builtin=True,
             description="the other end of each dependency arc of the protocol's relations"),
)
for _spec in BUILTIN_ROLES:
    ROLES.register(_spec.name, _spec)


def register_role(
    name: str,
    sieve: SieveFunction,
    *,
    pairs_only: bool = False,
    description: str = "",
    overwrite: bool = False,
    batched: BatchedSieve | None = None,
) -> RoleSpec:
    """Register a sieve role that a protocol may then name.

    Parameters
    ----------
    name : str
        Identifier-like name (letters, digits, ``_``); must not start with ``syntactic``.
    sieve : callable
        ``sieve(layout: SequenceLayout, options) -> ndarray of bool, shape (n, n)``: entry (i, j) is True
        when key j is in the sieve of query i. ``options`` is the :class:`~headstats.analyses.sieves.ScoreSettings`.
    pairs_only : bool
        Score only pair inputs (NaN for single sentences).
    batched : callable, optional
        The same sieve for a whole batch, ``batched(layout: BatchLayout, window) -> bool tensor`` broadcasting
        to (B, N, N); used instead of ``sieve`` when given (faster on long inputs).
    """
    if not name or not name.replace("_", "").isalnum() or name.startswith("syntactic"):
        raise ValueError(f"role name {name!r} must be letters, digits and '_' and not start with 'syntactic'")
    if name in ROLES and ROLES.get(name).builtin:
        raise ValueError(f"built-in role {name!r} cannot be replaced; register your role under another name")
    if not callable(sieve) or (batched is not None and not callable(batched)):
        raise TypeError("sieve must be a callable (layout, options) -> (n, n) boolean array")
    spec = RoleSpec(name, "sieve", sieve=sieve, batched=batched, pairs_only=pairs_only, description=description)
    return ROLES.register(name, spec, overwrite=overwrite)


def unregister_role(name: str) -> None:
    """Remove a user role (built-in roles cannot be removed)."""
    if name not in ROLES:
        return
    if ROLES.get(name).builtin:
        raise ValueError(f"built-in role {name!r} cannot be unregistered")
    ROLES.unregister(name)


def list_roles() -> list[str]:
    """Registered role names; ``syntactic:<rel>`` is valid for any dependency relation."""
    return ROLES.names()


def get_role(name: str) -> RoleSpec:
    """The spec of a role; ``syntactic:<rel>`` resolves to an arc role for that relation."""
    if name.startswith(SYNTACTIC_PREFIX):
        relation = name[len(SYNTACTIC_PREFIX):]
        if not relation:
            raise HeadstatsError("role 'syntactic:' needs a relation, e.g. 'syntactic:nsubj'")
        return RoleSpec(name, "arc", description=f"the other end of each '{relation}' arc")
    return ROLES.get(name)


def check_role(name: str) -> str:
    """Return ``name`` if it is a valid role, else raise an error listing the valid ones."""
    get_role(name)
    return name


def role_family(role: str) -> str:
    """The paper's kind of a role: ``delimiter_cls`` -> ``delimiter``, ``syntactic:nsubj`` -> ``syntactic``."""
    if role.startswith("delimiter"):
        return "delimiter"
    if role.startswith("syntactic"):
        return "syntactic"
    return role


def role_relation(name: str) -> str | None:
    """The relation of ``syntactic:<rel>`` (canonical label), or None for other roles."""
    if name.startswith(SYNTACTIC_PREFIX):
        from headstats.inputs.parsing import normalize_relation_name

        return normalize_relation_name(name[len(SYNTACTIC_PREFIX):])
    return None


def record_kinds(records: Sequence["Record"]) -> tuple[bool, bool]:
    """Whether some record is a sentence pair, and whether some record is parsed (what decides which roles
    apply, :func:`applicable_roles`)."""
    return any(r.is_pair for r in records), any(r.words_a is not None for r in records)


def applicable_roles(roles: Sequence[str], records: Sequence["Record"] | None = None, *,
                     has_pairs: bool | None = None, has_parses: bool | None = None) -> tuple[list[str], dict[str, str]]:
    """Drop pair-only roles (``block``) from a data set that has no pairs, and arc roles from one without
    parses; say why. ``has_pairs`` and ``has_parses`` stand for ``records`` when they are known without them."""
    if has_pairs is None or has_parses is None:
        has_pairs, has_parses = record_kinds(records or ())
    kept, dropped = [], {}
    for role in roles:
        spec = get_role(role)
        if spec.pairs_only and not has_pairs:
            dropped[role] = "the data set has no sentence pairs"
        elif spec.kind == "arc" and not has_parses:
            dropped[role] = "the data set has no dependency parses"
        else:
            kept.append(role)
    return kept, dropped
