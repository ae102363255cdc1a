"""The options of the per-head tests, one typed object with one set of defaults and checks (METHODS 1.4).

:class:`TestOptions` is what :func:`~headstats.stats.onesample.test_roles`,
:func:`~headstats.stats.hypotheses.test_measures`, :func:`~headstats.stats.sensitivity.tau_sensitivity` and
:func:`~headstats.stats.sensitivity.robustness` read, and what a protocol's ``statistics:`` is (the protocol's
``StatisticsOptions`` adds only whether to run the sensitivity tables). Each of those functions takes
``options=`` (a :class:`TestOptions`) and the same fields as keywords; a keyword given replaces the field, a
keyword left out (None) keeps it, and the result is validated here, so a value refused by a protocol is refused
by the library with the same words, and the defaults cannot drift apart.

The seed is not an option of the tests: it is the study's (recorded once in the manifest), passed beside them.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Field, ValidationError

from headstats.errors import HeadstatsError
from headstats.fields import Float, Int, StrictModel, per_role

__all__ = ["FAMILY_KEYS", "MIN_RESAMPLES", "TauSpec", "TestOptions", "check_seed", "statistics_kwargs"]

#: Columns whose values may define the families of the correction (``family``).
FAMILY_KEYS = ("model", "dataset", "role", "layer")
#: The fewest resamples a resampling test may draw (its smallest p-value is then 1 / 100).
MIN_RESAMPLES = 99


def _number(value: object, where: str) -> float:
    """A finite number >= 0, with a message that names ``where`` and the fix."""
    if isinstance(value, bool):
        raise ValueError(f"{where}expected a number, not {str(value).lower()}")
    if not isinstance(value, (int, float)):
        raise ValueError(f"{where}expected a number, not {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{where}must be a finite number (NaN and inf are refused); give a number")
    if value < 0:
        raise ValueError(f"{where}must be greater than or equal to 0 (the score is >= 0)")
    return float(value)


def _tau_spec(value: object) -> object:
    """``tau``: one number for every role, or ``{default: 3, block: 1.5, ...}`` per role."""
    if isinstance(value, dict):
        if not value:
            raise ValueError("the mapping is empty; give a number or e.g. {default: 3, block: 1.5}")
        return {str(role): _number(v, f"tau of {role!r} ") for role, v in value.items()}
    return _number(value, "")


def _n_resamples(value: object) -> object:
    """``auto`` or a whole number >= 99 (one message for both, not pydantic's two)."""
    if value == "auto" and isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_RESAMPLES:
        raise ValueError(f"must be 'auto' or a whole number >= {MIN_RESAMPLES}, got {value!r}")
    return int(value)


def _family(value: object) -> object:
    """A tuple is a list of keys; one key alone is a family of one key."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list) and len(set(value)) != len(value):
        raise ValueError(f"names a key twice: {value!r}; give each key once")
    return value


#: A number for every role or a mapping role -> number with an optional ``default``.
TauSpec = Annotated[Union[float, dict[str, float]], BeforeValidator(_tau_spec)]


class TestOptions(StrictModel):
    """Options of the per-head one-sided tests ``H0: location <= tau`` (METHODS 1.4).

    Attributes
    ----------
    test : str
        A registered one-sample test (:func:`headstats.stats.onesample.list_tests`).
    tau : float or dict
        The threshold, >= 0, one number or per role (``{default: 3, block: 1.5}``).
    alpha : float
        Level of ``reject = p_corr <= alpha``, 0 < alpha < 1.
    correction : str
        A registered correction (:func:`headstats.stats.corrections.list_corrections`).
    family : list of str
        Keys among :data:`FAMILY_KEYS` whose values make one family of the correction; ``[]``: one family.
    confidence : float
        Level of the one-sided lower bounds.
    min_n : int
        Hypotheses with fewer inputs taking part get no p-value (at least 2: a spread needs two values).
    n_resamples : int or "auto"
        Resamples of a resampling test, at least 99; ``auto``: enough that the smallest attainable corrected
        p-value is alpha / 10 (:func:`headstats.stats.onesample.auto_resamples`).
    sequential : bool
        With ``n_resamples: auto``, a resampling test stops drawing for a head once its corrected decision is
        settled, so that only heads near their level draw all of them
        (:mod:`headstats.stats.onesample.sequential`); false, or a number of resamples given: every head
        draws them all.
    power_target, effect_of_interest : float
        The power of ``mde``/``n_for_power``, and the standardised effect at which power is reported.
    """

    __test__ = False  # a class named Test* is not a pytest test class

    test: str = "t"
    #: H0: location <= tau (the mean, median or pseudo-median, as the test); scores are >= 0, so tau >= 0.
    #: One number, or per role ``{default: 3, block: 1.5}`` (in the unit of each role's scale).
    tau: TauSpec = 3.0
    alpha: Float = Field(0.05, gt=0, lt=1)
    correction: str = "holm"
    family: Annotated[list[Literal["model", "dataset", "role", "layer"]], BeforeValidator(_family)] = Field(
        default_factory=lambda: ["model", "dataset"])
    confidence: Float = Field(0.95, gt=0, lt=1)
    min_n: Int = Field(2, ge=2)
    #: ``auto``: enough resamples that the smallest attainable corrected p-value is alpha / 10
    #: (:func:`headstats.stats.onesample.auto_resamples`); a number too small to assign any head is refused.
    n_resamples: Annotated[int | str, BeforeValidator(_n_resamples)] = "auto"
    sequential: bool = Field(True, description="with n_resamples auto: a head stops resampling once its "
                                               "decision is settled (risk <= 0.001)")
    power_target: Float = Field(0.8, gt=0, lt=1)
    #: The standardised effect (location - tau) / sd at which power and the inputs needed are reported.
    effect_of_interest: Float = Field(0.5, gt=0, allow_inf_nan=False)

    @classmethod
    def of(cls, options: TestOptions | None = None, /, **given: Any) -> TestOptions:
        """``options`` (default: every default) with the ``given`` fields that are not None replaced, validated.

        Raises
        ------
        HeadstatsError
            One line per bad value, naming the option, what was given and what is allowed.
        """
        base = {} if options is None else options.model_dump(include=set(TestOptions.model_fields))
        unknown = sorted(set(given) - set(TestOptions.model_fields))
        if unknown:
            raise HeadstatsError(f"unknown test option(s) {', '.join(unknown)}; the options are "
                                 f"{', '.join(TestOptions.model_fields)}")
        base.update({k: v for k, v in given.items() if v is not None})
        try:
            return TestOptions.model_validate(base)
        except ValidationError as exc:
            lines = []
            for e in exc.errors():
                msg = e["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
                got = "" if "got" in msg else f" (got {e.get('input')!r})"
                lines.append(f"{e['loc'][0] if e['loc'] else 'options'} {msg}{got}")
            raise HeadstatsError("bad test option: " + "; ".join(lines)) from None

    def tau_of(self, role: str) -> float:
        """tau of ``role`` (``tau`` itself, its entry for the role, its ``default``, else 3)."""
        return float(per_role(self.tau, role, 3.0))

    def tau_by_role(self, roles) -> float | dict[str, float]:
        """``tau`` as :func:`headstats.stats.onesample.test_roles` takes it: one number, or one per role."""
        if not isinstance(self.tau, dict):
            return float(self.tau)
        return {role: self.tau_of(role) for role in roles}

    def tau_text(self) -> str:
        """tau as the methods say it: ``3`` or ``3 (block: 1.5)``."""
        if not isinstance(self.tau, dict):
            return f"{self.tau:g}"
        others = ", ".join(f"{r}: {v:g}" for r, v in self.tau.items() if r != "default")
        return f"{self.tau_of('default'):g}" + (f" ({others})" if others else "")


def check_seed(seed: object) -> int:
    """A seed is a whole number >= 0 (numpy's and torch's generators both take it)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        import numpy as np

        if not (isinstance(seed, np.integer) and seed >= 0):
            raise HeadstatsError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def statistics_kwargs(options, seed: int) -> dict:
    """Keyword arguments of :func:`headstats.stats.onesample.test_roles`, ``test_measures``, ``tau_sensitivity``
    and ``robustness``: the protocol's statistics as one :class:`~headstats.stats.options.TestOptions` (its
    defaults and checks) and the seed."""
    return {"options": TestOptions.of(options), "seed": seed}
