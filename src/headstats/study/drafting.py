"""What ``headstats init`` learns from the data before it writes a protocol: which roles apply, and a tau per
role that the data's ceilings allow.

A role's score on an input cannot exceed its *ceiling*, the score of a perfect head (METHODS 1.6): ``n / |S|``
for a sieve of ``|S|`` of the input's ``n`` pieces. On short inputs the ceiling of ``local`` (a window of 5
pieces) is low, and that of ``block`` on a pair of a and b pieces is ``2 + 2/a + 1/b``: the paper's tau = 3 is
then out of reach and no head can be assigned the role, whatever its attention. :func:`survey` reads the
first inputs of each data file, scores them with the model (the ceilings come out of the same computation as
``run``'s, on the same pieces) and chooses, per role:

- left out when no input takes part in it (``block`` on single sentences; a relation with no arc; arc roles
  on raw text when no spaCy parser is installed);
- tau = 3 (the paper's) when the lowest mean ceiling over the data sets is at least 1.5 x 3, else the largest
  half-step tau at most two thirds of that ceiling, when that is still at least :data:`LOWEST_BIAS_TAU`;
- otherwise ``scale: mass`` (the share of the head's attention inside the sieve, whose ceiling is 1) with
  tau = :data:`MASS_TAU`: more than half of the attention.

The margin of 1.5 keeps the chosen tau reachable when the whole data set's ceilings are a little lower than
those of its first inputs. No data file is changed, no output is written.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from headstats.config.protocol import DEFAULT_RELATIONS, DEFAULT_ROLES, ScoreSettings

#: Inputs read from each data file (its first ones).
SAMPLE = 200
#: The paper's tau, kept where the data allow it with the margin :data:`MARGIN`.
PAPER_TAU = 3.0
MARGIN = 1.5
#: Below this, a bias tau says little (1 is attention spread evenly): the role is scored as mass instead.
LOWEST_BIAS_TAU = 2.0
MASS_TAU = 0.5


@dataclass
class DataFacts:
    """One data file as :func:`survey` read it."""

    name: str
    path: Path
    format: str | None
    n_read: int
    pairs: int
    parsed: int

    @property
    def kind(self) -> str:
        """``single sentences``, ``sentence pairs`` or ``singles and pairs``; with ``parsed`` or ``raw``."""
        shape = ("sentence pairs" if self.pairs == self.n_read else "single sentences" if not self.pairs
                 else "singles and pairs")
        return f"{shape}, {'parsed' if self.parsed == self.n_read else 'raw text'}"


@dataclass
class Survey:
    """What :func:`survey` chose: roles, relations, tau and scale per role, and why."""

    datasets: list[DataFacts]
    roles: list[str]
    relations: list[str]
    tau: dict[str, float]
    scale: dict[str, str]
    #: Per role: the lowest mean ceiling over the data sets (bias scale).
    ceilings: dict[str, float]
    #: Roles left out, with the reason.
    left_out: dict[str, str] = field(default_factory=dict)

    def tau_spec(self) -> float | dict[str, float]:
        """``statistics.tau`` as a protocol writes it: one number, or ``{default: 3, local: 2, ...}``."""
        values = set(self.tau.values())
        if len(values) <= 1:
            return values.pop() if values else PAPER_TAU
        common = max(values, key=lambda v: (list(self.tau.values()).count(v), v))
        return {"default": common, **{r: t for r, t in self.tau.items() if t != common}}

    def scale_spec(self) -> str | dict[str, str]:
        """``scoring.scale`` as a protocol writes it: ``bias``, or ``{default: bias, block: mass}``."""
        mass = [r for r, s in self.scale.items() if s == "mass"]
        if not mass:
            return "bias"
        if len(mass) == len(self.scale):
            return "mass"
        return {"default": "bias", **{r: "mass" for r in mass}}

    def why(self, role: str) -> str:
        """One comment for a role's tau: its ceiling and what was chosen."""
        c = self.ceilings[role]
        if self.scale[role] == "mass":
            return (f"{role}: mean ceiling {c:.2f} here, so tau >= {c / MARGIN:.2f} is (nearly) out of reach; "
                    f"scored as attention mass, tau {MASS_TAU:g}")
        return f"{role}: mean ceiling {c:.2f} here, tau {self.tau[role]:g}"


def choose_tau(ceiling: float) -> tuple[str, float]:
    """``(scale, tau)`` for a role whose lowest mean ceiling is ``ceiling`` (see the module docstring)."""
    if ceiling >= MARGIN * PAPER_TAU:
        return "bias", PAPER_TAU
    tau = math.floor(2 * ceiling / MARGIN) / 2
    if tau >= LOWEST_BIAS_TAU:
        return "bias", tau
    return "mass", MASS_TAU


def parser_installed(name: str) -> bool:
    """Whether the spaCy pipeline ``name`` can be loaded (a package or a folder), without loading it."""
    try:
        return Path(name).is_dir() or importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def survey(model: str, paths: Sequence[str | Path], *, formats: Sequence[str | None] | None = None,
           names: Sequence[str] | None = None, sample: int = SAMPLE,
           scoring: ScoreSettings | None = None) -> Survey:
    """Read the first ``sample`` inputs of each data file, score them with ``model``, and choose the roles
    that apply and a tau per role that their ceilings allow.

    Parameters
    ----------
    model : str
        ``"default"``, a model folder or a hub id (loaded as ``run`` loads it).
    paths : sequence of path
        The data files.
    formats, names : sequence, optional
        Each file's format (None: from its extension) and data-set name (default: the file's stem).
    sample : int
        Inputs read from the start of each file.
    scoring : ScoreSettings, optional
        The scoring options the protocol will have (default: the schema's).

    Returns
    -------
    Survey
    """
    from headstats.analyses.roles import SYNTACTIC_PREFIX, get_role
    from headstats.inputs.parsing import parse_records
    from headstats.inputs.readers import read_records
    from headstats.model.loading import load_model
    from headstats.study.scoring import score_records

    scoring = scoring or ScoreSettings()
    formats = list(formats or [None] * len(paths))
    names = list(names or [Path(p).stem for p in paths])
    facts, data = [], []
    for path, fmt, name in zip(paths, formats, names):
        records = read_records(path, format=fmt, limit=sample)
        facts.append(DataFacts(name, Path(path), fmt, len(records), sum(r.is_pair for r in records),
                               sum(r.is_parsed for r in records)))
        data.append(records)
    left_out: dict[str, str] = {}
    roles = list(DEFAULT_ROLES)
    if not any(f.pairs for f in facts):
        for role in [r for r in roles if get_role(r).pairs_only]:
            left_out[role] = "the data hold no sentence pairs"
    raw = [i for i, f in enumerate(facts) if f.parsed < f.n_read]
    can_parse = parser_installed(scoring.parser)
    if raw and not can_parse:
        for role in [r for r in roles if get_role(r).kind == "arc" and r not in left_out]:
            left_out[role] = (f"raw text needs the spaCy parser {scoring.parser}, which is not installed "
                              f"(pip install {scoring.parser.replace('_', '-')}, or give CoNLL-U)")
    roles = [r for r in roles if r not in left_out]
    if raw and can_parse and any(get_role(r).kind == "arc" for r in roles):
        for i in raw:
            data[i] = parse_records(data[i], parser=scoring.parser)
    loaded = load_model(model)
    settings = scoring.model_copy(update={"roles": roles})
    lowest: dict[str, float] = {}
    for fact, records in zip(facts, data):
        run = score_records(loaded, records, dataset=fact.name, roles=roles, settings=settings,
                            max_length=scoring.max_length, too_long=scoring.too_long)
        array = run.array
        if array.ceilings is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a role no input of this file takes part in
            means = np.nanmean(array.ceilings, axis=0)
        for role, mean in zip(array.measures, means):
            if np.isfinite(mean):
                lowest[role] = min(lowest.get(role, math.inf), float(mean))
    for role in roles:
        if role not in lowest:
            what = (f"no input has an arc of {role[len(SYNTACTIC_PREFIX):]}" if role.startswith(SYNTACTIC_PREFIX)
                    else "no input takes part in it")
            left_out[role] = what
    roles = [r for r in roles if r in lowest]
    relations = [rel for rel in DEFAULT_RELATIONS if f"{SYNTACTIC_PREFIX}{rel}" in roles]
    if "syntactic" in roles and not relations:
        roles.remove("syntactic")
        left_out["syntactic"] = "none of its relations has an arc in the data"
    tau, scale = {}, {}
    for role in roles:
        scale[role], tau[role] = choose_tau(lowest[role])
    return Survey(facts, roles, relations, tau, scale, {r: lowest[r] for r in roles}, left_out)
