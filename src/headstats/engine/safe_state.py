"""Collector states as numbers and JSON, never code: the payload of the state cache and of shard folders.

A state (:meth:`headstats.engine.collector.Collector.state`, and the runner's ``{"state", "counts"}`` entries
around it) is a tree of dicts, lists, tuples, numpy arrays and scalars, strings, and a few dataclasses
(:class:`~headstats.engine.collector.ScoreState`, :class:`~headstats.engine.collector.Moments`, an analysis'
own state class). :func:`pack` writes such a tree as an uncompressed ``.npz`` archive (numpy's zip of ``.npy``
files) holding

- ``a0.npy``, ``a1.npy``, ...: every numeric array (dtype kinds ``b``, ``i``, ``u``, ``f``, ``c``), as numbers;
- ``tree.npy``: a ``uint8`` array of UTF-8 JSON describing the tree, where an array is ``{"$array": i}`` and the
  other non-JSON values are tagged objects (``$tuple``, ``$dict`` with its items as pairs so that keys may be
  ints or tuples, ``$counter``, ``$np`` for a numpy scalar (a 0-d array), ``$strings`` for an array of strings, ``$float`` for
  a non-finite float, ``$bytes`` for bytes kept as a ``uint8`` array, ``$dataclass``).

:func:`unpack` reads it back with ``allow_pickle=False`` (an object array cannot even be read), checks every
member (stored, not deflated: no decompression bomb; names ``tree.npy`` and ``a<i>.npy`` only) and rebuilds
the tree. A dataclass is rebuilt only when its module lies in :data:`DATACLASS_PACKAGES` (headstats' engine,
analyses and records) and the name there is a dataclass: the only code a payload can reach is those classes'
constructors, with numbers and strings as arguments. Nothing else (sets, other objects, a tensor, an
object array of anything but strings) is written: :func:`pack` raises :class:`UnsupportedState`, so a collector
whose state cannot be stored fails the round-trip test of every collector (``tests/test_safe_state.py``), not
a user's run.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import math
import re
import zipfile
from collections import Counter
from typing import Any

import numpy as np

#: Modules whose dataclasses a payload may name (collector states live in the first two).
DATACLASS_PACKAGES = ("headstats.engine.", "headstats.analyses.", "headstats.inputs.records")
_NUMERIC_KINDS = "biufc"
_MEMBER = re.compile(r"^(tree|a[0-9]{1,9})\.npy$")
#: Deepest nesting a payload may have (a state is a few levels deep; a hostile one could be deeper than the stack).
MAX_DEPTH = 64


class UnsupportedState(TypeError):
    """A value that the safe format does not store (write it as arrays, scalars, strings, lists, dicts)."""


class DamagedState(ValueError):
    """Bytes that are not a well-formed safe-format payload."""


def pack(value: Any) -> bytes:
    """The bytes of ``value`` in the safe format (see the module docstring).

    Raises
    ------
    UnsupportedState
        ``value`` holds something other than dicts, lists, tuples, numbers, strings, None, numeric numpy arrays
        and scalars, arrays of strings, and dataclasses of :data:`DATACLASS_PACKAGES`.
    """
    arrays: list[np.ndarray] = []
    tree = _encode(value, arrays, "state")
    buffer = io.BytesIO()
    members = {"tree": np.frombuffer(json.dumps(tree, separators=(",", ":")).encode(), dtype=np.uint8)}
    members.update({f"a{i}": a for i, a in enumerate(arrays)})
    np.savez(buffer, **members)
    return buffer.getvalue()


def unpack(data: bytes) -> Any:
    """The value :func:`pack` wrote into ``data``; no pickle is ever loaded.

    Raises
    ------
    DamagedState
        ``data`` is not a safe-format payload, or names a class outside :data:`DATACLASS_PACKAGES`.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            names = [i.filename for i in infos]
            if len(set(names)) != len(names) or "tree.npy" not in names:
                raise DamagedState("not a state archive (no tree.npy, or a member twice)")
            for info in infos:
                if not _MEMBER.match(info.filename) or info.compress_type != zipfile.ZIP_STORED \
                        or info.file_size > len(data):
                    raise DamagedState(f"unexpected member {info.filename[:60]!r}")
            members = {i.filename[:-4]: _read_array(archive, i.filename) for i in infos}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DamagedState(f"not a state archive ({type(exc).__name__})") from None
    tree_bytes = members.pop("tree")
    if tree_bytes.dtype != np.uint8 or tree_bytes.ndim != 1:
        raise DamagedState("its tree is not UTF-8 JSON")
    try:
        tree = json.loads(tree_bytes.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DamagedState(f"its tree is not JSON ({type(exc).__name__})") from None
    arrays = {int(name[1:]): a for name, a in members.items()}
    return _decode(tree, arrays, 0)


def _read_array(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    with archive.open(name) as handle:
        try:
            array = np.lib.format.read_array(handle, allow_pickle=False)
        except ValueError as exc:  # an object array (pickle), a bad header
            raise DamagedState(f"{name}: {str(exc)[:80]!r}") from None
    if name != "tree.npy" and array.dtype.kind not in _NUMERIC_KINDS:
        raise DamagedState(f"{name} holds {array.dtype} values, not numbers")
    return array


# ------------------------------------------------------------------------------------------------ encoding

def _encode(value: Any, arrays: list[np.ndarray], where: str) -> Any:
    if isinstance(value, np.generic):  # before float: numpy's float64 is a float
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise UnsupportedState(f"{where}: numpy scalar of dtype {value.dtype} (store numbers only)")
        arrays.append(np.asarray(value))
        return {"$np": len(arrays) - 1}
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if type(value) is bytes:
        arrays.append(np.frombuffer(value, dtype=np.uint8))
        return {"$bytes": len(arrays) - 1}
    if isinstance(value, np.ndarray):
        return _encode_array(value, arrays, where)
    if isinstance(value, Counter):
        return {"$counter": [[_encode(k, arrays, where), _encode(v, arrays, f"{where}[{k!r}]")]
                             for k, v in value.items()]}
    if type(value) is dict:
        return {"$dict": [[_encode(k, arrays, where), _encode(v, arrays, f"{where}[{k!r}]")]
                          for k, v in value.items()]}
    if type(value) is list:
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
    if type(value) is tuple:
        return {"$tuple": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith(DATACLASS_PACKAGES):
            raise UnsupportedState(f"{where}: dataclass {cls.__module__}.{cls.__qualname__} is not in "
                                   f"{', '.join(DATACLASS_PACKAGES)}")
        fields = [f for f in dataclasses.fields(value) if f.init]
        return {"$dataclass": [cls.__module__, cls.__qualname__],
                "fields": {f.name: _encode(getattr(value, f.name), arrays, f"{where}.{f.name}") for f in fields}}
    raise UnsupportedState(f"{where}: a {type(value).__module__}.{type(value).__qualname__} cannot be stored "
                           "(a state holds dicts, lists, tuples, numbers, strings, numpy arrays and state dataclasses)")


def _encode_array(value: np.ndarray, arrays: list[np.ndarray], where: str) -> Any:
    kind = value.dtype.kind
    if kind in _NUMERIC_KINDS:
        arrays.append(np.ascontiguousarray(value))
        return {"$array": len(arrays) - 1}
    if kind in "OU":
        flat = value.reshape(-1).tolist()
        if not all(isinstance(x, str) for x in flat):
            odd = next(x for x in flat if not isinstance(x, str))
            raise UnsupportedState(f"{where}: an object array holding a {type(odd).__name__} (store strings or numbers)")
        return {"$strings": flat, "shape": list(value.shape), "dtype": "O" if kind == "O" else value.dtype.str}
    raise UnsupportedState(f"{where}: an array of dtype {value.dtype} (store numbers or strings)")


# ------------------------------------------------------------------------------------------------ decoding

def _decode(node: Any, arrays: dict[int, np.ndarray], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise DamagedState("nested too deep")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(v, arrays, depth + 1) for v in node]
    if not isinstance(node, dict) or len(node) < 1:
        raise DamagedState("a node of its tree is not understood")
    tag = next(iter(node))
    body = node[tag]
    try:
        if tag == "$array":
            return arrays[body]
        if tag == "$bytes":
            array = arrays[body]
            if array.dtype != np.uint8 or array.ndim != 1:
                raise DamagedState("bytes that are not a flat uint8 array")
            return array.tobytes()
        if tag == "$float":
            if body not in ("nan", "inf", "-inf"):
                raise DamagedState(f"not a float: {str(body)[:20]!r}")
            return float(body)
        if tag == "$np":
            array = arrays[body]
            if array.ndim != 0:
                raise DamagedState("a numpy scalar that is not 0-dimensional")
            return array[()]
        if tag in ("$dict", "$counter"):
            items = {_hashable(_decode(k, arrays, depth + 1)): _decode(v, arrays, depth + 1) for k, v in body}
            return Counter(items) if tag == "$counter" else items
        if tag == "$tuple":
            return tuple(_decode(v, arrays, depth + 1) for v in body)
        if tag == "$strings":
            if not all(isinstance(x, str) for x in body):
                raise DamagedState("an array of strings holds something else")
            dtype = object if node["dtype"] == "O" else np.dtype(str(node["dtype"]))
            if dtype is not object and dtype.kind != "U":
                raise DamagedState(f"an array of strings of dtype {dtype}")
            out = np.empty(len(body), dtype=dtype)
            out[:] = body
            return out.reshape([int(n) for n in node["shape"]])
        if tag == "$dataclass":
            cls = _dataclass(*body)
            fields = {str(k): _decode(v, arrays, depth + 1) for k, v in node["fields"].items()}
            return cls(**fields)
    except DamagedState:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise DamagedState(f"its {tag} node is not understood ({type(exc).__name__})") from None
    raise DamagedState(f"unknown tag {str(tag)[:30]!r}")


def _hashable(key: Any) -> Any:
    if isinstance(key, (list, dict, np.ndarray)):
        raise DamagedState("a dict key that is not a number, string or tuple")
    return key


def _dataclass(module: str, qualname: str) -> type:
    """The dataclass ``module.qualname``, only from :data:`DATACLASS_PACKAGES` (else :class:`DamagedState`)."""
    if not isinstance(module, str) or not isinstance(qualname, str) or not module.startswith(DATACLASS_PACKAGES) \
            or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", module + "." + qualname):
        raise DamagedState(f"names a class outside headstats' states ({str(module)[:60]!r}, {str(qualname)[:60]!r})")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError, TypeError):
        raise DamagedState(f"names an unknown class {module}.{qualname}") from None
    if not (isinstance(found, type) and dataclasses.is_dataclass(found)):
        raise DamagedState(f"{module}.{qualname} is not a state class")
    return found
