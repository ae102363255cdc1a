r"""One registry of claims: every sentence a report concludes is a test with a verdict (METHODS 5.1).

A claim is a :class:`Claim`: the sentence a reader takes away ("[CLS] heads sit in the early layers"), where it
comes from, its operational hypothesis (H0 and H1 in words and as a formula, with the thresholds), the unit of
replication (heads, inputs, sentences, seeds), the test, what its estimate measures, and a function from the
run's tables to one :class:`Evidence` per (model, data set): the estimate with its interval, the one-sided
p-value in the claimed direction (``p_for``) and, where the claim has an opposite, in the other direction
(``p_against``), the smallest p-value the design can attain (``floor``), what it could detect, and a reason
when the data cannot decide.

:func:`evaluate_claims` runs the registered claims on a run's tables (:mod:`headstats.stats.claim_catalog`
imports the built-in ones), corrects their p-values within each family (the claims of one family whose test can
reject; a claim declares its family up front: the Pande et al. claims of each model form one, the seed claims of
each comparison one, every other claim of the run one; the ``family`` column names it) and gives each a verdict:

- ``cannot tell``: the evidence names a reason (the role cannot reach tau: mean ceiling <= tau; the role was not
  tested; too few heads), or the design's smallest attainable p-value is above alpha (a sign-flip test over 3
  seeds: 2 / 2^3 = 0.25 with both directions), or the test gave no valid p-value;
- ``supported``: ``p <= alpha`` after correction, in the claimed direction;
- ``contradicted``: ``p <= alpha`` after correction, in the other direction;
- ``not shown``: tested and not significant; the reason says what the design could have detected.

A claim with an opposite is tested both ways, each one-sided, and its p-value is ``min(1, 2 min(p_for,
p_against))`` (Bonferroni over the two directions, so that the verdict's direction is part of the test). A claim
without an opposite (an existence claim: "some head attends mostly to the previous token") has ``p = p_for``.

Registering a claim (from an analysis' ``claims.py``, which its spec names; the tables it reads are the specs its
``tables.py`` declares)::

    from headstats.analyses.mine.tables import MINE_TESTS
    from headstats.stats.claims import Evidence, register_claim

    @register_claim("my_heads_exist", sentence="some head is a my-head", source="my analysis",
                    hypothesis="H0: no head's mean my-score exceeds 0.5; H1: some head's does "
                               "(max_h mean_h > 0.5)",
                    unit="heads", test="min Holm-corrected p over the per-head t-tests",
                    measure="largest mean my-score - 0.5", tables=(MINE_TESTS,))
    def my_heads_exist(tables, settings):
        tests = tables[MINE_TESTS]
        return [Evidence(model, dataset, estimate=..., p_for=...) for ...]

The evaluation is the statistics layer: tables in, one tidy table out; nothing here reads a protocol.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from headstats.registry import Registry
from headstats.stats.corrections import correct_pvalues, reject
from headstats.stats.seeds import corrected_level
from headstats.tables import RunTables, TableSpec

__all__ = [
    "CANNOT_TELL", "CLAIMS", "CLAIM_COLUMNS", "CONTRADICTED", "P_BOUND", "effect_note", "p_text", "NOT_SHOWN", "SUPPORTED", "VERDICTS", "Claim",
    "ClaimSettings", "Evidence", "claim_p", "evaluate_claims", "evidence_p", "list_claims", "register_claim", "verdict_of",
]

SUPPORTED, CONTRADICTED, NOT_SHOWN, CANNOT_TELL = "supported", "contradicted", "not shown", "cannot tell"
#: The verdicts, in the order a reader weighs them.
VERDICTS: tuple[str, ...] = (SUPPORTED, CONTRADICTED, NOT_SHOWN, CANNOT_TELL)

#: Columns of ``claims.csv``, one row per (claim, model, data set).
CLAIM_COLUMNS: list[str] = [
    "claim", "sentence", "source", "model", "dataset", "hypothesis", "unit", "test", "measure", "estimate",
    "ci_low", "ci_high", "smallest_effect", "p_for", "p_against", "p_unc", "p", "p_text", "correction", "family",
    "alpha", "floor", "detectable", "verdict", "reason", "detail",
]

#: p-values below this are printed as a bound, never as a number (a double holds nothing meaningful there).
P_BOUND = 1e-300


def p_text(p: float) -> str:
    """A p-value as a report prints it: ``p = 0.0047``, ``p = 3.1e-12``, ``p < 1e-300`` below
    :data:`P_BOUND` (an underflow included); ``""`` when missing."""
    if p is None or not np.isfinite(p):
        return ""
    if p < P_BOUND:
        return f"p < {P_BOUND:.0e}"
    return f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}"


def effect_note(estimate: float, smallest_effect: float) -> str:
    """``"effect below the stated size (|estimate| 0.18 < 1)"`` when the estimate is closer to 0 than the
    claim's smallest effect of interest, ``""`` otherwise or when none is declared."""
    if not (np.isfinite(smallest_effect) and np.isfinite(estimate)) or abs(estimate) >= smallest_effect:
        return ""
    return f"effect below the stated size (|estimate| {abs(estimate):.3g} < {smallest_effect:g})"


@dataclass(frozen=True)
class ClaimSettings:
    """What the evaluation of claims reads from the run's statistics options.

    Attributes
    ----------
    alpha : float
        The level of every verdict, after correction.
    correction : str
        A registered correction (:mod:`headstats.stats.corrections`) over the run's claims.
    confidence : float
        Two-sided confidence of the estimates' intervals.
    """

    alpha: float = 0.05
    correction: str = "holm"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), not {self.alpha!r}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must lie in (0, 1), not {self.confidence!r}")


@dataclass(frozen=True)
class Evidence:
    """What one claim's test found on one (model, data set).

    Attributes
    ----------
    model, dataset : str
        Where it was tested (``dataset`` may name a replicate group's data set).
    estimate, ci_low, ci_high : float
        The estimate (in the unit the claim's ``measure`` names) and its two-sided interval.
    p_for : float
        One-sided p-value of H0 against the claimed direction.
    p_against : float
        One-sided p-value in the other direction (NaN: the claim has no opposite).
    floor : float
        The smallest ``p_for`` the design can attain (NaN: not computed; 0 is never attained by these tests).
    floor_against : float
        The smallest ``p_against`` the design can attain (NaN: the same as ``floor``, as for a sign-flip test,
        whose law is symmetric). The claim's floor is the smaller of the two directions' (METHODS 5.4): a claim
        whose claimed direction cannot reach alpha may still be contradicted.
    detectable : str
        What the design can detect (the smallest detectable effect, the power at the effect of interest, or
        the p-value floor), in words with numbers.
    reason : str
        Why the data cannot decide (``""`` when they can): the verdict is then ``cannot tell``.
    detail : str
        The numbers behind the estimate, in a sentence.
    hypothesis : str
        The hypothesis with this run's thresholds, when it differs from the claim's (``""``: the claim's).
    measure : str
        What the estimate is, when it differs from the claim's (``""``: the claim's).
    underflow_only : bool
        The test gives p = 0 only by underflow (a count test: binomial, sign-flip, its normal approximation on
        finite data), so a p of 0 is a bound below the smallest double, never degenerate data.
    family : str
        The family of claims this one is corrected with (``""``: the claim's declared family,
        :attr:`Claim.family`, else :data:`RUN_FAMILY`); e.g. the seed claims of one comparison form their own
        family (METHODS 5.4).
    """

    model: str
    dataset: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    p_for: float = math.nan
    p_against: float = math.nan
    floor: float = math.nan
    floor_against: float = math.nan
    detectable: str = ""
    reason: str = ""
    detail: str = ""
    hypothesis: str = ""
    measure: str = ""
    family: str = ""
    underflow_only: bool = False


#: The family of a claim whose evidence names none: every claim of the run.
RUN_FAMILY = "the run's claims"

Evaluate = Callable[[Mapping[str, pd.DataFrame], ClaimSettings], Iterable[Evidence]]


@dataclass(frozen=True)
class Claim:
    """A registered claim: its sentence, its operational hypothesis and the function that tests it.

    Attributes
    ----------
    key : str
        Its name in the registry and in ``claims.csv``.
    sentence : str
        What a reader takes away, as the paper says it.
    source : str
        ``"Pande et al. 2021"``, ``"Clark et al. 2019"`` or who registered it.
    hypothesis : str
        H0 and H1 in words and as a formula, with the thresholds.
    unit : str
        The unit of replication: ``heads``, ``inputs``, ``sentences``, ``seeds``, ``layers``.
    test : str
        The test, named (e.g. ``Fisher's exact test on the 2x2 table of heads``).
    measure : str
        What the estimate is (e.g. ``conditional odds ratio, last two layers against the others``).
    evaluate : callable
        ``evaluate(tables, settings) -> iterable of Evidence``; ``tables`` is the run's
        :class:`~headstats.tables.RunTables`, indexed by a declared table (``tables[ROLES]``, ``tables[TESTS]``
        of :mod:`headstats.tables.study_tables`, ``tables[SURFACE_TESTS]`` of an analysis' ``tables.py``).
    tables : tuple of str
        The tables it reads (their file names, from the specs given to :func:`register_claim`): the claim is
        evaluated only when all are present and not empty.
    smallest_effect : float
        The smallest effect of interest, in the unit of ``measure`` as a distance of the estimate from 0 (NaN:
        none declared). A significant verdict on an estimate closer to 0 says so (METHODS 5.4).
    family : str
        The family its evidence is corrected in when the evidence names none, as a template of ``{model}`` and
        ``{dataset}`` (``"Pande claims of {model}"``: one family per model); ``""``: :data:`RUN_FAMILY`.
    """

    key: str
    sentence: str
    source: str
    hypothesis: str
    unit: str
    test: str
    measure: str
    evaluate: Evaluate = field(repr=False)
    tables: tuple[str, ...] = ()
    smallest_effect: float = math.nan
    family: str = ""

    def family_of(self, ev: Evidence) -> str:
        """The family ``ev`` is corrected in: its own, else this claim's template filled in, else the run's."""
        if ev.family:
            return ev.family
        return self.family.format(model=ev.model, dataset=ev.dataset) if self.family else RUN_FAMILY


#: Every claim the report may state. Built-in claims register when their module is imported (the catalog,
#: :mod:`headstats.stats.claim_catalog`, imports them all); a user registers one with :func:`register_claim`.
CLAIMS: Registry[Claim] = Registry("claim", hint="register one with headstats.stats.claims.register_claim")


def register_claim(key: str, *, sentence: str, source: str, hypothesis: str, unit: str, test: str, measure: str,
                   tables: Iterable[TableSpec | str] = (), smallest_effect: float = math.nan, family: str = "",
                   overwrite: bool = False) -> Callable[[Evaluate], Evaluate]:
    """Register the decorated ``evaluate(tables, settings)`` as claim ``key`` (see the module docstring).

    ``family`` declares, up front, the family its verdicts are corrected in (:attr:`Claim.family`: a template of
    ``{model}`` and ``{dataset}``; default every claim of the run).

    ``tables`` are the tables it reads: declared specs (:mod:`headstats.tables.study_tables`: ``ROLES``,
    ``TESTS`` ...; an analysis' own from its ``tables.py``), or table names.

    Returns the function, which takes the run's :class:`~headstats.tables.RunTables` (or a mapping of table names
    to frames, made one), so that it can be called and tested on its own.
    """
    for name, value in (("sentence", sentence), ("hypothesis", hypothesis), ("unit", unit), ("test", test)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"claim {key!r} needs a non-empty {name}")

    names = tuple(t.name if isinstance(t, TableSpec) else str(t) for t in tables)

    def wrap(evaluate: Evaluate) -> Evaluate:
        @functools.wraps(evaluate)
        def on_run_tables(run_tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> Iterable[Evidence]:
            return evaluate(as_run_tables(run_tables), settings)

        CLAIMS.register(key, Claim(key, sentence, source, hypothesis, unit, test, measure, on_run_tables,
                                   names, float(smallest_effect), str(family)), overwrite=overwrite)
        return on_run_tables
    return wrap


def as_run_tables(tables: Mapping[str, pd.DataFrame]) -> RunTables:
    """``tables`` as :class:`~headstats.tables.RunTables` (a mapping of file names to frames made one)."""
    return tables if isinstance(tables, RunTables) else RunTables(tables)


def claim_p(p_for: float, p_against: float) -> float:
    """The claim's p-value: ``p_for`` when it has no opposite, else ``min(1, 2 min(p_for, p_against))``."""
    if not np.isfinite(p_against):
        return float(p_for)
    if not np.isfinite(p_for):
        return math.nan
    return float(min(1.0, 2.0 * min(p_for, p_against)))


#: The p-value reported for a test whose p underflowed to 0 in float64: the smallest positive normal double.
UNDERFLOW_P = float(np.finfo(float).tiny)


def _underflowed(ev: Evidence) -> bool:
    """Whether a claim's p of exactly 0 is an underflow, not degenerate data: the data vary (its interval has
    positive width around a finite estimate), so the true p is below the float range, e.g. a t test over
    thousands of inputs with a large effect. Zero-width or missing intervals stay degenerate."""
    if ev.underflow_only:
        return True
    return bool(np.isfinite(ev.estimate) and np.isfinite(ev.ci_low) and ev.ci_high - ev.ci_low > 0
                and (ev.ci_low < ev.estimate or ev.ci_high > ev.estimate))


def evidence_p(ev: Evidence) -> float:
    """The claim's p-value (:func:`claim_p`), with an underflow to 0 (:func:`_underflowed`) reported as
    :data:`UNDERFLOW_P`, so that it counts in the family and prints as ``p < 1e-300`` (:func:`p_text`)."""
    p = claim_p(ev.p_for, ev.p_against)
    return UNDERFLOW_P if p == 0 and _underflowed(ev) else p


def _direction_floors(ev: Evidence) -> tuple[float, float]:
    """The smallest claim p-value each direction can attain, ``(for, against)``: doubled when the claim is tested
    both ways (its p is ``2 min``); ``against`` is NaN for a claim without an opposite."""
    if not np.isfinite(ev.floor):
        return math.nan, math.nan
    if not np.isfinite(ev.p_against):
        return float(ev.floor), math.nan
    against = ev.floor_against if np.isfinite(ev.floor_against) else ev.floor
    return float(min(1.0, 2.0 * ev.floor)), float(min(1.0, 2.0 * against))


def _claim_floor(ev: Evidence) -> float:
    """The smallest claim p-value the design can attain in *either* direction (METHODS 5.4): a two-way claim can be
    decided (supported or contradicted) whenever one of its directions can reach the level."""
    floors = [f for f in _direction_floors(ev) if np.isfinite(f)]
    return float(min(floors)) if floors else math.nan


def verdict_of(ev: Evidence, p_corr: float, alpha: float) -> tuple[str, str]:
    """The verdict and its reason, from one claim's evidence and its corrected p-value (METHODS 5.1, 5.4)."""
    if ev.reason:
        return CANNOT_TELL, ev.reason
    p = evidence_p(ev)
    if not np.isfinite(p) or p <= 0:
        return CANNOT_TELL, ("the test gave no valid p-value" if not np.isfinite(p) else
                             "the test gave p = 0, which no valid test of finite data gives (degenerate data)")
    floor = _claim_floor(ev)
    both = np.isfinite(ev.p_against)
    if np.isfinite(floor) and floor > alpha:
        return CANNOT_TELL, (f"design floor above alpha: the smallest p-value this design can give"
                             f"{' in either direction' if both else ''} is {floor:.3g} > alpha = {alpha:g}"
                             + (f" ({ev.detectable})" if ev.detectable else ""))
    if reject(p_corr, alpha):
        against = both and ev.p_against < ev.p_for
        return (CONTRADICTED, "significant in the other direction") if against else (SUPPORTED, "")
    floor_for, _ = _direction_floors(ev)
    one_way = (f"; the claimed direction cannot reach alpha (its smallest p is {floor_for:.3g}), only the other "
               "can" if both and np.isfinite(floor_for) and floor_for > alpha else "")
    return NOT_SHOWN, "not significant after correction" + one_way + (f"; {ev.detectable}" if ev.detectable else "")


def _family_floor_note(ev: Evidence, m: int, settings: ClaimSettings) -> str:
    """``"; its smallest p ... is above alpha / m ..."`` when the design's floor is above the level the first step
    of a family-wise correction over the m claims of its family needs (it can then reject only after others)."""
    floor = _claim_floor(ev)
    if m <= 1 or not np.isfinite(floor):
        return ""
    level = corrected_level(settings.alpha, m, settings.correction)
    if floor <= level:
        return ""
    return (f"; the design's smallest p ({floor:.3g}) is above {level:.3g}, the level the smallest p of a family of "
            f"{m} claims needs under {settings.correction}")


def _in_family(ev: Evidence, alpha: float) -> bool:
    """A claim counts in the family when its test can reject: a reason-free, valid p and a floor <= alpha."""
    p = evidence_p(ev)
    floor = _claim_floor(ev)
    return not ev.reason and np.isfinite(p) and p > 0 and not (np.isfinite(floor) and floor > alpha)


def evaluate_claims(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings | None = None, *,
                    claims: Iterable[str] | None = None) -> pd.DataFrame:
    """Test every registered claim (or ``claims``) on a run's tables and give each its verdict (the whole
    catalog, built-in claims included: :func:`headstats.stats.claim_catalog.evaluate_all_claims`).

    Parameters
    ----------
    tables : RunTables, or a mapping of str to DataFrame
        The run's tables (:class:`~headstats.tables.RunTables`; a mapping of file names to frames is made one).
    settings : ClaimSettings, optional
        alpha, the correction over the run's claims and the confidence of the intervals.
    claims : iterable of str, optional
        The claims to evaluate (default: every registered one whose tables are present).

    Returns
    -------
    DataFrame
        :data:`CLAIM_COLUMNS`, one row per (claim, model, data set). ``p_unc`` is the claim's p-value
        (:func:`claim_p`), ``p`` the same corrected with ``correction`` within ``family`` (the rows of that family
        whose test can reject; NaN outside it). ``floor`` is the smallest attainable ``p_unc``.
    """
    settings = settings or ClaimSettings()
    tables = as_run_tables(tables)
    keys = CLAIMS.names() if claims is None else list(claims)
    rows: list[tuple[Claim, Evidence]] = []
    for key in keys:
        claim = CLAIMS.get(key)
        if not all(name in tables and tables[name] is not None and len(tables[name]) for name in claim.tables):
            continue
        rows.extend((claim, ev) for ev in claim.evaluate(tables, settings))
    if not rows:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    p_unc = np.array([evidence_p(ev) for _, ev in rows], dtype=float)
    member = np.array([_in_family(ev, settings.alpha) for _, ev in rows])
    labels = np.array([claim.family_of(ev) for claim, ev in rows], dtype=object)
    p_corr = np.full(len(rows), np.nan)
    sizes: dict[str, int] = {}
    for label in dict.fromkeys(labels):
        inside = member & (labels == label)
        sizes[label] = int(inside.sum())
        if inside.any():
            p_corr[inside] = correct_pvalues(p_unc[inside], settings.correction, settings.alpha)
    out = []
    for (claim, ev), p, pc, inside, label in zip(rows, p_unc, p_corr, member, labels):
        verdict, reason = verdict_of(ev, float(pc), settings.alpha)
        if verdict == NOT_SHOWN:
            reason += _family_floor_note(ev, sizes[label], settings)
        if verdict in (SUPPORTED, CONTRADICTED) and effect_note(ev.estimate, claim.smallest_effect):
            reason = "; ".join(r for r in (reason, effect_note(ev.estimate, claim.smallest_effect)) if r)
        out.append({
            "claim": claim.key, "sentence": claim.sentence, "source": claim.source, "model": ev.model,
            "dataset": ev.dataset, "hypothesis": ev.hypothesis or claim.hypothesis, "unit": claim.unit,
            "test": claim.test, "measure": ev.measure or claim.measure, "estimate": ev.estimate, "ci_low": ev.ci_low,
            "ci_high": ev.ci_high, "smallest_effect": claim.smallest_effect, "p_for": ev.p_for,
            "p_against": ev.p_against, "p_unc": p, "p": pc, "p_text": p_text(pc),
            "correction": settings.correction,
            "family": (f"{label} ({sizes[label]} that can reject)" if inside else f"{label} (cannot reject: left out)"),
            "alpha": settings.alpha, "floor": _claim_floor(ev), "detectable": ev.detectable, "verdict": verdict,
            "reason": reason, "detail": ev.detail,
        })
    return pd.DataFrame(out, columns=CLAIM_COLUMNS)


def evidence_fields() -> list[str]:
    """The fields of :class:`Evidence`, in order (the columns of a table of precomputed evidence)."""
    return [f.name for f in fields(Evidence)]


def evidence_from_table(table: pd.DataFrame, key: str) -> list[Evidence]:
    """The evidence rows of claim ``key`` from a table of precomputed evidence (a ``claim`` column and the
    :class:`Evidence` fields), e.g. the seed claims a comparison computed."""
    part = table[table["claim"].astype(str) == key]
    names = [n for n in evidence_fields() if n in part.columns]
    out = []
    for record in part[names].to_dict("records"):
        clean = {k: ("" if isinstance(v, float) and math.isnan(v) and k in _TEXT_FIELDS else v)
                 for k, v in record.items()}
        if "underflow_only" in clean:
            clean["underflow_only"] = clean["underflow_only"] is True or clean["underflow_only"] == 1
        out.append(Evidence(**{**clean, "model": str(clean["model"]), "dataset": str(clean["dataset"])}))
    return out


_TEXT_FIELDS = {"detectable", "reason", "detail", "hypothesis", "measure", "family"}
