"""Changes to a protocol from the command line: ``--set KEY=VALUE`` and ``--limit N``.

Both are applied to the protocol's YAML mapping *before* it is validated (:func:`apply_overrides`), so a value
set here is checked exactly as the same value written in the file, and the run folder's
``protocol.resolved.yaml`` records the protocol as it ran (``manifest.json`` keeps the command line too).

- ``--set statistics.tau=2`` sets one key by its dotted path; the value is read as a YAML scalar or list
  (``2``, ``fdr_bh``, ``[local, block]``, ``null``). A list entry is named by its index or its ``name``
  (``datasets.ewt_dev.limit=100``, ``models.0.path=bert-base-uncased``), and an analysis' options by
  ``analysis_options.<analysis>.<key>``. An unknown key is refused with the nearest known one.
- ``--limit N`` caps every data set's inputs at ``N`` (its ``limit``, and a GLUE sample's ``n``) and every
  option ``max_inputs`` of the protocol's analyses (``analysis_options.clustering.max_inputs``): the quick
  version of a shipped protocol, as lm-eval's ``--limit``.
"""

from __future__ import annotations

import copy
from typing import Callable, Iterable, Mapping, TypeVar

import yaml

from headstats.errors import HeadstatsError, ProtocolError
from headstats.registry import nearest_name

#: The options of an analysis that count inputs, capped by ``--limit`` (a field of that name in an analysis'
#: options model; None there means "all inputs").
INPUT_CAP_OPTIONS = ("max_inputs",)

T = TypeVar("T")


def parse_assignment(text: str) -> tuple[list[str], object]:
    """``"statistics.tau=2"`` -> ``(["statistics", "tau"], 2)``: the dotted key's parts and the value read as YAML.

    Raises
    ------
    ProtocolError
        Text without ``=``, an empty key part, or a value that is not valid YAML.
    """
    from headstats.config.protocol import SAFE_LOADER, printable

    key, sep, value_text = str(text).partition("=")
    key = key.strip()
    parts = key.split(".")
    if not sep or not key or any(not p.strip() for p in parts):
        raise ProtocolError(f"--set {printable(text)!r} is not KEY=VALUE; give a dotted protocol key and a value, "
                            "e.g. --set statistics.tau=2")
    try:
        value = yaml.load(value_text, Loader=SAFE_LOADER)
    except yaml.YAMLError:
        raise ProtocolError(f"--set {printable(key)}: the value {printable(value_text)!r} is not valid YAML; quote "
                            "it, e.g. --set 'description=\"a: b\"'") from None
    if isinstance(value, dict):
        raise ProtocolError(f"--set {printable(key)}: give one value or a list, not a mapping; set each key of the "
                            f"mapping by its own dotted path (--set {printable(key)}.KEY=VALUE)")
    return [p.strip() for p in parts], value


def _unknown_key(shown: str, prefix: list[str], part: str, known: list[str]) -> ProtocolError:
    where = ".".join([*prefix, part])
    near = nearest_name(part, known)
    guess = f"; did you mean '{'.'.join([*prefix, near])}'?" if near else ""
    return ProtocolError(f"--set {shown}: unknown protocol key '{where}'{guess} (keys here: {', '.join(known)})")


def _keys_at(loc: list) -> list[str]:
    """The keys allowed at ``loc`` (a list of keys and indexes): the protocol's schema, and below
    ``analysis_options.<analysis>`` that analysis' options model; empty where any key goes (a mapping such as
    ``statistics.tau``)."""
    from headstats.config.protocol import known_keys

    keys = [p for p in loc if not isinstance(p, int)]
    if keys[:1] == ["analysis_options"] and len(keys) >= 2:
        from headstats.analyses import get_analysis

        options = get_analysis(keys[1]).options
        if options is None:
            return []
        return known_keys(tuple(loc[2:]), options) if len(keys) > 2 else sorted(options.model_fields)
    return known_keys(tuple(loc))


def _entry(node: list, part: str, shown: str, where: str) -> int:
    """The index of list entry ``part``: a number, or the ``name`` of a mapping (or the string) in the list."""
    if part.lstrip("-").isdigit():
        index = int(part)
        if -len(node) <= index < len(node):
            return index % len(node)
        raise ProtocolError(f"--set {shown}: '{where}' has {len(node)} entries; give an index from 0 to "
                            f"{len(node) - 1} or an entry's name")
    names = [item.get("name") if isinstance(item, dict) else item for item in node]
    if part in names:
        return names.index(part)
    known = [str(n) for n in names if isinstance(n, str)]
    near = nearest_name(part, known)
    guess = f"; did you mean {near!r}?" if near else ""
    raise ProtocolError(f"--set {shown}: '{where}' has no entry named {part!r}{guess} (give an index or one of: "
                        f"{', '.join(known) or 'none'})")


def set_key(raw: dict, parts: list[str], value: object, *, shown: str | None = None) -> None:
    """Set the key at ``parts`` (``["statistics", "tau"]``) of the protocol mapping ``raw`` to ``value``, in place,
    creating the sections on the way; every key is checked against the schema (:func:`_keys_at`).

    Raises
    ------
    ProtocolError
        An unknown key (with the nearest known one), a list entry that does not exist, an unknown analysis, or a
        path through a value that is not a section.
    UnknownNameError
        ``analysis_options.<name>`` naming no registered analysis.
    """
    from headstats.config.protocol import printable

    shown = printable(shown if shown is not None else ".".join(parts))
    node: object = raw
    loc: list = []
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        where = ".".join(str(p) for p in parts[:k]) or "(top level)"
        if isinstance(node, list):
            index = _entry(node, part, shown, where)
            if isinstance(node[index], str) and not last:  # models: [default] -> {name: default}
                node[index] = {"name": node[index]}
            key: object = index
        elif isinstance(node, dict):
            if loc == ["analysis_options"]:
                from headstats.analyses import check_analyses

                try:
                    check_analyses([part])
                except HeadstatsError as exc:  # the registry's message, with the nearest name
                    raise ProtocolError(f"--set {shown}: {exc}") from None
            known = _keys_at(loc)
            if known and part not in known:
                raise _unknown_key(shown, [str(p) for p in parts[:k]], part, known)
            key = part
        else:
            raise ProtocolError(f"--set {shown}: '{where}' holds a value, not keys; set it whole "
                                f"(--set {where}=VALUE)")
        loc.append(key)
        if last:
            node[key] = value  # type: ignore[index]
        else:
            child = node[key] if isinstance(node, list) else node.get(key)  # type: ignore[union-attr]
            if child is None:
                child = node[key] = {}  # type: ignore[index]
            node = child


def cap_inputs(raw: dict, limit: int) -> None:
    """``--limit N``, in place: every data set's ``limit`` (and a GLUE sample's ``n``) at most ``limit``, and the
    options of :data:`INPUT_CAP_OPTIONS` of every analysis the protocol runs at most ``limit``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ProtocolError(f"--limit must be a whole number >= 1, got {limit!r}")

    def capped(value: object) -> object:
        return limit if not isinstance(value, int) or isinstance(value, bool) or value > limit else value

    for spec in raw.get("datasets") or [] if isinstance(raw.get("datasets"), list) else []:
        if not isinstance(spec, dict):
            continue
        spec["limit"] = capped(spec.get("limit"))
        if isinstance(spec.get("glue"), dict) and spec["glue"].get("n") is not None:
            spec["glue"]["n"] = capped(spec["glue"]["n"])
    analyses = raw.get("analyses")
    if not isinstance(analyses, list):
        return
    from headstats.analyses import get_analysis

    options = raw.get("analysis_options")
    for name in analyses:
        try:
            model = get_analysis(name).options
        except (HeadstatsError, TypeError):  # an unknown name: refused with its message by the validation
            continue
        for option in INPUT_CAP_OPTIONS:
            if model is None or option not in model.model_fields:
                continue
            if not isinstance(options, dict):
                options = raw["analysis_options"] = {}
            mine = options.get(name)
            if mine is None:
                mine = options[name] = {}
            if isinstance(mine, dict):
                default = model.model_fields[option].get_default(call_default_factory=True)
                mine[option] = capped(mine.get(option, default))


def _items(assignments: Iterable[str] | Mapping[str, object]) -> list[tuple[str, list[str], object]]:
    """``(shown, parts, value)`` of each assignment: ``--set`` texts parsed, or a mapping's dotted keys split."""
    if isinstance(assignments, Mapping):
        return [(f"{key}={value!r}", str(key).split("."), value) for key, value in assignments.items()]
    return [(str(text), *parse_assignment(text)) for text in assignments]


def _apply(raw: Mapping, items: list[tuple[str, list[str], object]], limit: int | None) -> dict:
    out = copy.deepcopy(dict(raw))
    for shown, parts, value in items:
        set_key(out, parts, value, shown=shown)
    if limit is not None:
        cap_inputs(out, limit)
    return out


def apply_overrides(raw: Mapping, assignments: Iterable[str] | Mapping[str, object] = (), *,
                    limit: int | None = None) -> dict:
    """A copy of the protocol mapping ``raw`` with ``assignments`` set and ``limit`` applied, not yet validated.

    Parameters
    ----------
    raw : mapping
        A protocol's YAML mapping (:func:`headstats.config.protocol.read_protocol_file`).
    assignments : iterable of str or mapping
        ``"statistics.tau=2"`` texts as ``--set`` takes them (values read as YAML), or a mapping of dotted keys
        to values already parsed (``{"statistics.tau": 2}``); applied in order, a later one winning.
    limit : int, optional
        ``--limit``: cap every data set's inputs and the analyses' ``max_inputs`` (:func:`cap_inputs`), after
        the assignments.

    Raises
    ------
    ProtocolError
        A malformed assignment or an unknown key (see :func:`set_key`).
    """
    return _apply(raw, _items(assignments), limit)


def validate_with_overrides(raw: Mapping, assignments: Iterable[str] | Mapping[str, object] = (), *,
                            limit: int | None = None, validate: Callable[[dict], T]) -> T:
    """``validate(apply_overrides(raw, assignments, limit=limit))``, where a problem that an assignment brought
    in names it: ``--set statistics.tau=abc: invalid protocol at 'statistics.tau': ...``.

    The culprit is the first assignment whose prefix of the assignments fails ``validate`` (one validation per
    assignment, only when the whole fails); a problem of the file itself keeps its own message.
    """
    items = _items(assignments)
    changed = _apply(raw, items, limit)  # a malformed assignment or unknown key: its own message
    try:
        return validate(changed)
    except HeadstatsError as exc:
        culprit = _culprit(raw, items, validate)
        if culprit is None:
            raise
        from headstats.config.protocol import printable

        raise type(exc)(f"--set {printable(culprit)}: {exc}") from None


def _culprit(raw: Mapping, items: list, validate) -> str | None:
    """The first assignment that makes ``validate`` fail when the assignments are applied one by one to ``raw``
    (None when ``raw`` fails by itself or no prefix fails)."""
    for k in range(len(items) + 1):
        try:
            validate(_apply(raw, items[:k], None))
        except HeadstatsError:
            return items[k - 1][0] if k else None
    return None


def load_overridden(path, assignments: Iterable[str] | Mapping[str, object] = (), *,
                    limit: int | None = None):
    """:func:`headstats.config.protocol.load_protocol` with ``--set`` ``assignments`` and ``--limit`` applied to
    the file's mapping before validation (:func:`validate_with_overrides`), its paths resolved as the file's.

    Raises
    ------
    ProtocolError, UnknownNameError
        As :func:`~headstats.config.protocol.load_protocol`, and a malformed assignment or unknown key, or a bad
        value named by the ``--set`` that brought it in.
    """
    from headstats.config.protocol import read_protocol_file, resolve_paths, validate_protocol

    raw = read_protocol_file(path)
    return resolve_paths(validate_with_overrides(raw, assignments, limit=limit, validate=validate_protocol), path)
