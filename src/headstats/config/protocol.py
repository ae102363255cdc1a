"""The YAML protocol: one validated, typed description of a study.

A protocol is validated completely before any model is loaded: unknown keys are rejected with the path of
the key, names of roles, tests and corrections are checked against their registries, and data paths are
resolved relative to the protocol file. YAML never runs code: a user adds a role by registering a Python
function (:func:`headstats.analyses.roles.register_role`) and names it here.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
import re
import sys
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import yaml
from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from headstats.errors import HeadstatsError, ProtocolError, UnknownNameError
# The scoring section is the analyses' own schema (ScoreSettings); the protocol only composes it.
from headstats.analyses.sieves import DEFAULT_RELATIONS, DEFAULT_ROLES, SCALES, ScoreSettings  # noqa: F401
from headstats.fields import Float, Int, Seed, StrictModel, non_empty_list
# The comparison's options are its package's own (CompareSpec); the protocol composes them.
from headstats.analyses.finetune_comparison.options import CompareSpec  # noqa: F401
from headstats.model.recipe import FinetuneRecipe
from headstats.stats.options import TestOptions
from headstats.report.options import ReportOptions  # noqa: F401 - the report layer's options (leaf module)


class ModelSpec(StrictModel):
    """A model of the study: a hub id, a directory, ``default``, or one that headstats fine-tunes."""

    name: str
    path: str | None = None
    revision: str | None = None
    finetune: FinetuneRecipe | None = None
    #: Seeds of the fine-tuning recipe: one run per seed, each a replicate (``<name>@seed<s>``); with
    #: ``finetune`` only. The protocol replaces this entry by one model per seed (see :func:`replicate_name`).
    seeds: list[Seed] | None = None
    #: The replicate group this model belongs to: models with the same ``replicate_of`` are runs of one
    #: recipe that differ in their seed (set by ``seeds``, or by hand for checkpoints made elsewhere). A
    #: comparison may name the group in ``finetuned``.
    replicate_of: str | None = None
    #: A control model (METHODS 6.3): this model's configuration and tokenizer with weights drawn by the
    #: family's initialiser under this seed. Set by ``controls: {random_init: ...}`` (``<name>@random<seed>``).
    random_init: Seed | None = None
    #: The trained model this one is a control of (set with ``random_init`` by ``controls``).
    control_of: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if self.path is not None and self.finetune is not None:
            raise ValueError("give either 'path' or 'finetune', not both")
        if self.random_init is not None and self.finetune is not None:
            raise ValueError("'random_init' draws new weights for a model's configuration; a fine-tuning has "
                             "none to draw: give it to the base model (or use controls: {random_init: ...})")
        if self.seeds is not None:
            if self.finetune is None:
                raise ValueError("'seeds' repeats a fine-tuning recipe; give it with 'finetune', or give "
                                 "checkpoints made elsewhere as models with the same 'replicate_of'")
            if not self.seeds:
                raise ValueError("'seeds' is empty; give at least one seed, e.g. [0, 1, 2]")
            if len(set(self.seeds)) != len(self.seeds):
                raise ValueError("'seeds' repeats a seed; give each seed once")
        return self

    @property
    def source(self) -> str:
        return self.path or self.name


class GlueSource(StrictModel):
    """Inputs from a GLUE task (files under ``root`` or the ``datasets`` library)."""

    task: str
    split: str = "dev"
    n: Int | None = Field(None, ge=1)
    sample: Literal["first", "random"] = "first"
    root: str | None = None
    exclude_finetune_rows: bool = True


class DatasetSpec(StrictModel):
    """One data set: a file (text, jsonl, glue tsv, conllu) or a GLUE task."""

    name: str
    path: str | None = None
    #: A registered input format (``headstats list-formats``); inferred from the extension when left out.
    format: str | None = None
    glue: GlueSource | None = None
    limit: Int | None = Field(None, ge=1)
    parse: Literal["auto", "spacy", "gold", "none"] = "auto"

    @model_validator(mode="after")
    def _one_source(self):
        if (self.path is None) == (self.glue is None):
            raise ValueError("give exactly one of 'path' or 'glue'")
        return self




class StatisticsOptions(TestOptions):
    """The protocol's ``statistics:``: the tests' options (:class:`headstats.stats.options.TestOptions`, their
    one set of defaults and checks), whether to run the sensitivity tables, and the assignment's offset gate."""

    sensitivity: bool = True
    #: The offset gate of the role assignment (METHODS 6.2): a head is assigned a syntactic role (``syntactic``,
    #: ``syntactic:<rel>`` of ``scoring.relations``) only when its score test rejects H0: mean <= tau *and* the
    #: one-sided test of its offset-matched excess (H0: mean excess <= 0; this section's test and correction)
    #: rejects too. The control is computed in the same forward pass on every parsed data set that scores a
    #: syntactic role, and ``tests.csv`` carries its estimate, interval and p (``offset_*``, ``gate_removed``).
    #: ``false`` assigns by the score test alone, as Pande et al. did (``paper_faithful.yaml``): no control is
    #: computed for the assignment and those columns are NaN (``analyses: [offset_control]`` still writes its own).
    offset_gate: bool = Field(True, description="assign a syntactic role only if the head also beats its "
                                                "offset-matched control (METHODS 6.2); false: as the paper")


def control_name(name: str, seed: int) -> str:
    """The model name of a random-init control of model ``name`` (METHODS 6.3): ``<name>@random<seed>``."""
    return f"{name}@random{seed}"


class RandomInitControl(StrictModel):
    """``controls: {random_init: {seeds: [...]}}``: for every model of the protocol that is not fine-tuned here
    (a fine-tuned model has its base's configuration, whose controls serve it too), a model of the same
    configuration and tokenizer with weights drawn by the family's own initialiser under each seed (METHODS
    6.3), scored in the same plan, cache and passes as the models it controls."""

    seeds: Annotated[list[Seed], non_empty_list("seed")] = Field(default_factory=lambda: [0])

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, value):
        if len(set(value)) != len(value):
            raise ValueError("'seeds' repeats a seed; give each seed once")
        return value


class ControlOptions(StrictModel):
    """``controls:``: models that answer "is it learned?" beside the trained ones."""

    random_init: RandomInitControl | None = None


def replicate_name(name: str, seed: int) -> str:
    """The model name of one seed of a fine-tuning with ``seeds``: ``<name>@seed<seed>``."""
    return f"{name}@seed{seed}"


class ExecutionOptions(StrictModel):
    """Where and how the forward passes run (``execution:``); none of it changes a number.

    ``executor: local`` (the default) runs everything in this process; ``ray`` runs ``workers`` shards on a Ray
    cluster (``address``; ``auto`` joins the cluster this machine belongs to, none starts a local one), each
    worker with one copy of each model, and merges them. ``cache: false`` turns the state cache off (the cache
    folder is the protocol's ``cache_dir``, ``--cache-dir``, ``$HEADSTATS_CACHE_DIR`` or ``~/.cache/headstats``).
    """

    executor: Literal["local", "ray"] = "local"
    address: str | None = None
    workers: Int = Field(2, ge=1)
    cpus_per_worker: Float = Field(1.0, gt=0)
    gpus_per_worker: Float = Field(0.0, ge=0)
    cache: bool = True
    #: Records per chunk: the unit of caching, resuming and sharding.
    chunk_size: Int = Field(1024, ge=1)
    #: MiB that one batch's attention maps (and the tensors derived from them) may take, for every batch: each
    #: batch is sized from its own longest input, so memory does not depend on the longest input of the data
    #: (``headstats.engine.runner.DEFAULT_MEMORY_BUDGET``; 256 keeps batches of 32 up to 85 pieces with the
    #: default model, 60 with bert-base).
    memory_budget_mb: Int = Field(256, ge=16, description="MiB of attention maps a batch may take; long inputs go in "
                                  "smaller batches; changes speed and memory, and scores only in their last float32 digits")




#: Top-level keys of earlier versions that are now the options of the analysis of the same name
#: (``analysis_options: {surface: {...}}``).
MOVED_TO_ANALYSIS_OPTIONS = ("surface", "clustering", "pictures")


def moved_key_message(raw: object) -> str | None:
    """The fix for a protocol mapping that uses a key of :data:`MOVED_TO_ANALYSIS_OPTIONS`, else None."""
    if not isinstance(raw, dict):
        return None
    for key in MOVED_TO_ANALYSIS_OPTIONS:
        if key in raw:
            return (f"'{key}:' is no longer a top-level key; move '{key}:' under analysis_options: {{{key}: ...}} "
                    f"(with {key} in 'analyses')")
    return None


def upgrade_resolved(raw: object) -> object:
    """A ``protocol.resolved.yaml`` mapping written before the keys of :data:`MOVED_TO_ANALYSIS_OPTIONS` moved,
    in today's form: the options of each analysis the run ran go under ``analysis_options`` (``broad_share``
    from ``surface`` to ``clustering``), the others (defaults, never used) are dropped. Other mappings are
    returned unchanged. For reading old run folders only: a protocol a user writes gets
    :func:`moved_key_message` instead."""
    if moved_key_message(raw) is None:
        return raw
    raw = dict(raw)
    old = {key: dict(raw.pop(key, None) or {}) for key in MOVED_TO_ANALYSIS_OPTIONS}
    share = old["surface"].pop("broad_share", None)
    if share is not None:
        old["clustering"].setdefault("broad_share", share)
    options = dict(raw.get("analysis_options") or {})
    for key, value in old.items():
        if key in (raw.get("analyses") or []):
            options.setdefault(key, value)
    raw["analysis_options"] = options
    return raw


class Protocol(StrictModel):
    """A whole study. See ``protocols/quickstart.yaml`` for a commented example."""

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, value):
        message = moved_key_message(value)
        if message is not None:
            raise ValueError(message)
        return value

    name: str = "study"
    description: str = ""
    seed: Seed = Field(0, description="seed of every random step (GLUE samples, bootstrap and permutation "
                       "tests)")
    #: ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto`` (a GPU if there is one).
    device: str = Field("cpu", description="torch device: cpu, cuda, cuda:1, mps or auto")
    #: Precision of the forward pass: ``float32``, ``bfloat16`` or ``float16`` (GPU only).
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    output: str | None = None
    data_root: str | None = None
    cache_dir: str | None = None
    models: Annotated[list[ModelSpec], non_empty_list("model")] = Field(
        default_factory=lambda: [ModelSpec(name="default")])
    datasets: Annotated[list[DatasetSpec], non_empty_list("data set", has_default=False)]
    scoring: ScoreSettings = Field(default_factory=ScoreSettings)
    statistics: StatisticsOptions = Field(default_factory=StatisticsOptions)
    compare: list[CompareSpec] = Field(default_factory=list)
    report: ReportOptions = Field(default_factory=ReportOptions)
    controls: ControlOptions = Field(default_factory=ControlOptions)

    @field_validator("models", mode="before")
    @classmethod
    def _models_from_strings(cls, value):
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _expand_seeds(self):
        """One model per seed of every fine-tuning with ``seeds``; comparisons naming a replicate group get
        its members (idempotent: the expanded protocol validates to itself)."""
        models: list[ModelSpec] = []
        for spec in self.models:
            if spec.seeds is None:
                models.append(spec)
                continue
            for seed in spec.seeds:
                models.append(ModelSpec(name=replicate_name(spec.name, seed), revision=spec.revision,
                                        finetune=spec.finetune.model_copy(update={"seed": seed}),
                                        replicate_of=spec.name))
        self.models = models = models + self._controls(models)
        names = {m.name for m in models}
        groups: dict[str, list[str]] = {}
        for m in models:
            if m.replicate_of is not None:
                groups.setdefault(m.replicate_of, []).append(m.name)
        clash = sorted(set(groups) & names)
        if clash:
            raise ValueError(f"replicate group {clash[0]!r} is also a model name; give the group another name")
        for comp in self.compare:
            expanded: list[str] = []
            for name in comp.finetuned:
                expanded += groups.get(name, [name])
            comp.finetuned = list(dict.fromkeys(expanded))
        return self

    def _controls(self, models: list[ModelSpec]) -> list[ModelSpec]:
        """The random-init control models of ``controls`` not yet in ``models`` (idempotent)."""
        control = self.controls.random_init
        if control is None:
            return []
        names = {m.name for m in models}
        added = []
        for spec in models:
            if spec.finetune is not None or spec.random_init is not None:
                continue
            for seed in control.seeds:
                name = control_name(spec.name, seed)
                if name not in names:
                    added.append(ModelSpec(name=name, path=spec.source, revision=spec.revision, random_init=seed,
                                           control_of=spec.name))
        return added

    def controls_of(self) -> dict[str, list[str]]:
        """Trained model -> its random-init control models, in protocol order."""
        out: dict[str, list[str]] = {}
        for m in self.models:
            if m.control_of is not None:
                out.setdefault(m.control_of, []).append(m.name)
        return out

    def replicate_groups(self) -> dict[str, list[str]]:
        """Replicate group -> its member models, in protocol order (models without a group are left out)."""
        groups: dict[str, list[str]] = {}
        for m in self.models:
            if m.replicate_of is not None:
                groups.setdefault(m.replicate_of, []).append(m.name)
        return groups

    @model_validator(mode="after")
    def _names_unique_and_known(self):
        for kind, names in (("model", [m.name for m in self.models]), ("dataset", [d.name for d in self.datasets])):
            dupes = repeated_names(names)
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
    execution: ExecutionOptions = Field(default_factory=ExecutionOptions)

    #: Parts of a protocol that can change a forward pass or a collector's state (the rest is statistics,
    #: comparisons' tests, the report, names and where things run).
    PASS_KEYS: ClassVar[tuple[str, ...]] = ("seed", "models", "datasets", "scoring", "dtype", "data_root")

    def options_of(self, analysis: str):
        """The typed options of ``analysis`` (its registered ``options`` model with ``analysis_options[analysis]``;
        the defaults when none are given), or None for an analysis without options: the piece of the protocol
        that the study hands to the analysis' jobs and finish step."""
        from headstats.analyses import analysis_options, get_analysis

        field = get_analysis(analysis).protocol_field
        if field is not None:  # an analysis the protocol turns on by a section of its own: that section
            return getattr(self, field)
        return analysis_options(analysis, (self.analysis_options or {}).get(analysis))

    def enabled_analyses(self) -> list[str]:
        """Every analysis the study runs: those turned on by a protocol section of their own (a registered
        analysis' ``protocol_field``: the roles by ``scoring``, the comparison by ``compare``) when that section
        is not empty, in their order (:func:`headstats.analyses.section_analyses`), then those of ``analyses``."""
        from headstats.analyses import get_analysis, section_analyses

        builtin = [name for name in section_analyses() if getattr(self, get_analysis(name).protocol_field, None)]
        return builtin + [name for name in self.analyses if name not in builtin]

    def pass_fingerprint(self) -> str:
        """sha256 of the parts of the protocol that can change a collector's state (:attr:`PASS_KEYS`)."""
        data = self.model_dump(mode="json", include=set(self.PASS_KEYS))
        data["scoring"].pop("batch_size", None)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()
    #: Options of those analyses, by name (each analysis' own schema, checked with the names): e.g.
    #: ``{dependency: {from_word: first}}``.
    analysis_options: dict[str, dict] = Field(default_factory=dict)


def repeated_names(names) -> list[str]:
    """The names that occur more than once in ``names``, sorted: one pass over them (a protocol may list
    100,000 data sets; comparing every pair took minutes)."""
    return sorted(name for name, k in Counter(names).items() if k > 1)


def printable(text: object) -> str:
    """``text`` with control characters (NUL, newlines, escapes) written as escapes, for one-line messages."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def known_keys(loc: tuple, model: type = None) -> list[str]:
    """The keys the protocol's schema allows at ``loc`` (a pydantic error location such as ``("scoring",)`` or
    ``("datasets", 0, "glue")``); empty when the place is not a section."""
    import typing

    from pydantic import BaseModel

    def sections(annotation) -> list:
        """The pydantic models an annotation can hold (through Optional, list, dict, Union and Annotated)."""
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in sections(arg)]

    current = [model or Protocol]
    for part in loc:
        if isinstance(part, int):
            continue
        found = [m.model_fields[part].annotation for m in current if part in m.model_fields]
        current = [m for annotation in found for m in sections(annotation)]
    return sorted({key for m in current for key in m.model_fields})


def validation_message(exc: ValidationError, *, what: str = "protocol") -> str:
    """One line for the first problem of a pydantic ``ValidationError``: where it is and what to do.

    Unknown keys come first (a misspelt key often explains the other problems), then missing ones.
    """
    order = {"extra_forbidden": 0, "missing": 1}
    errors = exc.errors()
    err = min(errors, key=lambda e: order.get(e["type"], 2))
    loc = _key_path(err["loc"])
    where = printable(".".join(str(p) for p in loc) or "(top level)")
    if not err["loc"] and err["type"] == "value_error":  # a check of the whole protocol: its message says where
        return f"invalid {what}: {printable(err['msg'].removeprefix('Value error, '))}"
    if err["type"] == "extra_forbidden":
        from headstats.registry import did_you_mean

        guess = did_you_mean(err["loc"][-1], known_keys(err["loc"][:-1]))
        return f"unknown key '{where}' in {what}" + (guess or "; remove it or check its spelling")
    if err["type"] == "missing":
        return f"{what} is missing the required key '{where}'"
    # a union (a number or 'auto') gives one error per member at the same key: say what each allows
    same = [e for e in errors if _key_path(e["loc"]) == loc]
    allowed = list(dict.fromkeys(_allowed(e) for e in same))
    value = printable(repr(err.get("input")))
    value = value if len(value) <= 60 else value[:40] + f"... ({len(value)} characters)"
    more = len({tuple(_key_path(e["loc"])) for e in errors}) - 1
    more_text = f" (and {more} more problem(s))" if more > 0 else ""
    return f"invalid {what} at '{where}': {value} is not allowed; it must be {' or '.join(allowed)}{more_text}"


#: Parts of a pydantic error location that name a schema (a union's member, a validator), not a key.
_SCHEMA_PART = re.compile(r"^(int|float|str|bool|bytes|list|dict|tuple|set|none|lax-or-strict|json-or-python|"
                          r"tagged-union|constrained-\w+)$|[\[(<]")


def _key_path(loc: tuple) -> list:
    """The keys of a pydantic error location (``scoring.batch_size``), without the schema parts pydantic adds for a
    union's members (``function-after[...]``, ``literal['auto']``, ``int``)."""
    return [p for p in loc if isinstance(p, int) or not _SCHEMA_PART.search(str(p))]


def _allowed(err: dict) -> str:
    """What one pydantic error says is allowed, in headstats' words (``a whole number >= 1``, ``'auto'``)."""
    ctx = err.get("ctx") or {}
    kind = err["type"]
    bounds = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("<=", "le"),
              "less_than": ("<", "lt")}
    if kind in bounds:
        sign, key = bounds[kind]
        return f"a number {sign} {ctx.get(key)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "a whole number"
    if kind in ("float_type", "float_parsing"):
        return "a number"
    if kind == "finite_number":
        return "a finite number (NaN and inf are refused)"
    if kind == "literal_error":
        return printable(str(ctx.get("expected", err["msg"])))
    return printable(err["msg"].removeprefix("Value error, ").rstrip("."))


def check_names(protocol: Protocol) -> None:
    """Check role, relation, test (one-sample, paired, over seeds), correction, input format and analysis names
    against their registries (before any model is loaded): a name registered from Python is valid here.

    ``syntactic:<relation>`` roles and ``scoring.relations`` must name a known dependency relation;
    relations are rewritten to their canonical names (``obj`` -> ``dobj``).
    """
    from headstats.inputs.parsing import normalize_relation_name
    from headstats.inputs.readers import INPUT_FORMATS
    from headstats.analyses.roles import SYNTACTIC_PREFIX, check_role
    from headstats.stats.corrections import check_correction
    from headstats.stats.onesample import check_test
    from headstats.stats.paired import PAIRED_TESTS
    from headstats.stats.seeds import SEED_TESTS

    try:
        for role in protocol.scoring.roles:
            check_role(role)
            if role.startswith(SYNTACTIC_PREFIX):
                normalize_relation_name(role[len(SYNTACTIC_PREFIX):])
        protocol.scoring.relations = [normalize_relation_name(r) for r in protocol.scoring.relations]
        check_test(protocol.statistics.test)
        check_correction(protocol.statistics.correction)
        for i, comp in enumerate(protocol.compare):
            check_correction(comp.correction)
            for key, registry in (("test", PAIRED_TESTS), ("seed_test", SEED_TESTS)):
                if getattr(comp, key) not in registry:
                    raise UnknownNameError(f"compare[{i}].{key}: {registry.unknown_message(getattr(comp, key))}")
        for ds in protocol.datasets:
            if ds.format is not None:
                INPUT_FORMATS.get(ds.format)
        if protocol.analyses:
            from headstats.analyses import check_analyses

            check_analyses(list(protocol.analyses))
        if protocol.analysis_options:
            from headstats.analyses import analysis_options, check_analyses

            for name in protocol.analysis_options:
                if name not in protocol.analyses:
                    raise ProtocolError(f"analysis_options names {name!r}, which is not in 'analyses'; add it there "
                                        "or remove its options")
                check_analyses([name])
                options = analysis_options(name, protocol.analysis_options[name])
                # an analysis' own ``datasets`` option (the data sets it runs on) names data sets of the protocol
                data_names = [d.name for d in protocol.datasets]
                known = set(data_names)
                unknown = [d for d in getattr(options, "datasets", None) or [] if d not in known]
                if unknown:
                    raise ProtocolError(f"analysis_options.{name}.datasets names {unknown[0]!r}, which is not in "
                                        f"'datasets'; use one of {', '.join(data_names)}")
    except HeadstatsError as exc:
        if type(exc) is not HeadstatsError:  # already of a kind (UnknownNameError ...)
            raise
        raise ProtocolError(printable(exc)) from None
    repeated = repeated_names(protocol.scoring.roles)
    if repeated:
        raise ProtocolError(f"scoring.roles names {', '.join(repeated)} more than once; list each role once")
    for key, spec in (("statistics.tau", protocol.statistics.tau), ("scoring.scale", protocol.scoring.scale)):
        if isinstance(spec, dict):
            unknown = [r for r in spec if r != "default" and r not in protocol.scoring.roles]
            if unknown:
                raise ProtocolError(
                    f"{key} names {', '.join(map(repr, unknown))}, which is not in scoring.roles; use 'default' or "
                    f"one of {', '.join(protocol.scoring.roles)}")


#: YAML's safe loader, in C where PyYAML has libyaml (the same documents, several times faster: a protocol of
#: 100,000 data sets is read in seconds, not minutes).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Deepest nesting read; deeper YAML is refused before the (slow, recursive) parser sees it.
MAX_NESTING = 100


def _nesting_depth(text: str) -> int:
    """A cheap upper bound of a YAML text's nesting: flow brackets outside quotes and comments, and
    indentation levels of block collections."""
    depth = deepest = 0
    quote = None
    previous = "\n"
    for char in text:
        if quote is not None:
            if char == quote or (char == "\n" and quote == "#"):
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and previous in " \t\n":
            quote = "#"  # a comment runs to the end of the line
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
        previous = char
    indents: list[int] = []
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        while indents and indents[-1] >= indent:
            indents.pop()
        indents.append(indent)
        deepest = max(deepest, len(indents))
    return deepest


#: Largest protocol file read (a protocol of a few hundred data sets is under 100 kB): larger ones are refused
#: before parsing, so a runaway file (100,000 data sets, a number of millions of digits) answers at once.
MAX_PROTOCOL_BYTES = 1 << 20


def first_words(exc: BaseException, most: int = 120) -> str:
    """The first ``most`` characters of an exception's text, on one line."""
    return " ".join(str(exc).split())[:most]


def read_protocol_file(path: str | Path) -> dict:
    """The YAML mapping of a protocol file, read safely.

    Raises
    ------
    ProtocolError
        A path that is missing, a folder or unreadable; text that is not UTF-8; invalid or too deeply
        nested YAML; a document that is not a mapping. One line each, with the fix.
    """
    path = Path(path)
    shown = printable(path)
    if not path.exists():
        raise ProtocolError(f"protocol file {shown!r} does not exist; check the path")
    if path.is_dir():
        raise ProtocolError(f"protocol path {shown!r} is a folder; give the protocol's YAML file")
    try:
        size = path.stat().st_size
        if size > MAX_PROTOCOL_BYTES:
            raise ProtocolError(f"protocol {shown!r} is {size:,} bytes; a protocol is at most "
                                f"{MAX_PROTOCOL_BYTES:,} bytes (list many data files in a few data sets, or split "
                                "the study)")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(
            f"protocol {shown!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ProtocolError(
            f"protocol {shown!r} cannot be read ({exc.strerror or exc}); check its permissions"
        ) from None
    if _nesting_depth(text) > MAX_NESTING:
        raise ProtocolError(f"protocol {shown!r} is nested more than {MAX_NESTING} levels deep; "
                            "a protocol needs a few levels")
    try:
        raw = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ProtocolError(f"protocol {shown!r} is not valid YAML{where}; fix the syntax") from None
    except RecursionError:
        raise ProtocolError(f"protocol {shown!r} is nested too deeply to read; a protocol needs a few levels") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ProtocolError(f"protocol {shown!r} holds a value that cannot be read (a number of more than "
                            f"{sys.get_int_max_str_digits():,} digits?: {printable(first_words(exc, 60))}); give "
                            "numbers of a sensible size") from None
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else f"a YAML {type(raw).__name__}"
        raise ProtocolError(
            f"protocol {shown!r} is {kind}; it must be a YAML mapping with at least 'datasets'"
        )
    return raw


def validate_protocol(raw: dict) -> Protocol:
    """A :class:`Protocol` from a mapping, with every problem as one-line :class:`ProtocolError`."""
    try:
        protocol = Protocol.model_validate(raw)
    except ValidationError as exc:
        raise ProtocolError(validation_message(exc)) from None
    except RecursionError:
        raise ProtocolError("protocol is nested too deeply to read; a protocol needs a few levels") from None
    check_names(protocol)
    return protocol


def load_protocol(path: str | Path) -> Protocol:
    """Read, validate and resolve a YAML protocol (with ``--set`` and ``--limit``:
    :func:`headstats.config.overrides.load_overridden`).

    Relative data paths, model folders, ``data_root`` and GLUE roots are resolved against the current
    working directory first and the protocol's folder second, whichever exists. ``output`` and
    ``cache_dir`` are taken as written (relative to the working directory).

    Raises
    ------
    ProtocolError
        Missing, unreadable or non-UTF-8 file, invalid YAML, unknown keys (with their path), bad values.
    UnknownNameError
        Unknown role, test or correction names (listing the valid ones).
    """
    return resolve_paths(validate_protocol(read_protocol_file(path)), path)


def resolve_paths(protocol: Protocol, path: str | Path) -> Protocol:
    """``protocol``, read from the file ``path``, with its relative paths resolved (see :func:`load_protocol`),
    in place."""
    base = Path(path).resolve().parent
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
    if "\0" in value:  # refused by the preflight check, with the key's name
        return Path(value)
    try:
        candidate = Path(value).expanduser()
    except RuntimeError:  # "~someone" with no such user: left as written, refused where it is used
        return Path(value)
    if candidate.is_absolute() or candidate.exists():
        return candidate.resolve() if candidate.exists() else candidate
    other = base / candidate
    return other.resolve() if other.exists() else candidate


def dump_protocol(protocol: Protocol) -> str:
    """The resolved protocol as YAML (written to ``protocol.resolved.yaml``)."""
    return yaml.safe_dump(protocol.model_dump(mode="json"), sort_keys=False)
