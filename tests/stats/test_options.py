"""One typed statistics-options object: the protocol's ``statistics``, test_roles, test_measures, tau_sensitivity
and robustness share its defaults and checks (the drift this catches: the protocol said ``min_n >= 2``, the
library ``>= 1``; the sensitivity table drew 9999 resamples where the tests drew ``auto``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.stats.hypotheses import test_measures
from headstats.stats.onesample import test_roles
from headstats.stats.options import FAMILY_KEYS, TestOptions, check_seed
from headstats.stats.sensitivity import robustness, tau_sensitivity
from simulations.planted import planted_scores

FIELDS = set(TestOptions.model_fields)


@pytest.mark.parametrize("function", [test_roles, test_measures, tau_sensitivity, robustness],
                         ids=lambda f: f.__name__)
def test_no_function_repeats_a_default(function):
    # every option a function takes is None by default: the value comes from TestOptions, nowhere else
    params = inspect.signature(function).parameters
    assert "options" in params
    repeated = {n: p.default for n, p in params.items() if n in FIELDS and p.default is not None}
    assert not repeated, f"{function.__name__} repeats the defaults {repeated}; leave them to TestOptions"


def test_the_protocol_composes_the_same_options():
    from headstats.config.protocol import StatisticsOptions

    assert issubclass(StatisticsOptions, TestOptions)
    # beyond the tests' options: the tau grid's, and the offset gate, which the assignment applies above the
    # statistics (it needs the offset control's arrays, which test_roles does not take)
    assert set(StatisticsOptions.model_fields) - FIELDS == {"sensitivity", "offset_gate"}
    assert StatisticsOptions().model_dump(include=FIELDS) == TestOptions().model_dump()


@pytest.mark.parametrize("bad, words", [
    ({"min_n": 1}, "min_n must be greater than or equal to 2"),
    ({"n_resamples": 50}, "n_resamples must be 'auto' or a whole number >= 99"),
    ({"alpha": 1.0}, "alpha must be less than 1"),
    ({"tau": -0.5}, "tau must be greater than or equal to 0"),
    ({"family": ["model", "head"]}, "family must be 'model', 'dataset', 'role' or 'layer'"),
])
def test_the_library_and_the_protocol_refuse_the_same_values(bad, words):
    from pydantic import ValidationError

    from headstats.config.protocol import StatisticsOptions

    with pytest.raises(HeadstatsError, match=words):
        test_roles(planted_scores(n_layers=1, n_heads=2, seed=0), **bad)
    with pytest.raises(ValidationError):
        StatisticsOptions(**bad)


def test_options_and_keywords_give_the_same_table():
    scores = planted_scores(n_layers=2, n_heads=3, effect=2.0, seed=4)
    opts = TestOptions(alpha=0.01, correction="bonferroni", family=["model", "dataset", "role"], tau=2.5)
    by_options = test_roles(scores, options=opts, seed=3)
    by_keywords = test_roles(scores, alpha=0.01, correction="bonferroni", family=("model", "dataset", "role"),
                             tau=2.5, seed=3)
    assert by_options.equals(by_keywords)
    # a keyword replaces the option's field; the others are kept
    looser = test_roles(scores, options=opts, alpha=0.1, seed=3)
    assert (looser["alpha"] == 0.1).all() and (looser["correction"] == "bonferroni").all()
    assert looser["reject"].sum() >= by_options["reject"].sum()
    # the sensitivity grid at the options' own tau and alpha gives test_roles' count of assigned heads
    grid = tau_sensitivity(scores, taus=[2.5], alphas=[0.01], options=opts, seed=3)
    counts = by_options.groupby(["model", "dataset", "role"])["reject"].sum()
    assert grid.set_index(["model", "dataset", "role"])["n_heads_assigned"].sort_index().tolist() == \
        counts.sort_index().astype(int).tolist()


def test_of_replaces_only_what_is_given_and_names_unknown_options():
    base = TestOptions(alpha=0.01)
    assert TestOptions.of(base, alpha=None, test="sign").model_dump() == {**base.model_dump(), "test": "sign"}
    assert TestOptions.of(None).model_dump() == TestOptions().model_dump()
    assert TestOptions.of(base, family=("model",)).family == ["model"]
    with pytest.raises(HeadstatsError, match="unknown test option.*alhpa"):
        TestOptions.of(alhpa=0.1)
    assert set(FAMILY_KEYS) == {"model", "dataset", "role", "layer"}


def test_tau_per_role_and_seed():
    opts = TestOptions(tau={"default": 3, "block": 1.5})
    assert opts.tau_of("block") == 1.5 and opts.tau_of("local") == 3.0
    assert opts.tau_by_role(["local", "block"]) == {"local": 3.0, "block": 1.5} and opts.tau_text() == "3 (block: 1.5)"
    assert TestOptions(tau=2).tau_by_role(["x"]) == 2.0 and TestOptions(tau=2).tau_text() == "2"
    assert check_seed(np.int64(3)) == 3
    with pytest.raises(HeadstatsError, match="seed must be an integer >= 0"):
        check_seed(True)


def test_statistics_kwargs_are_the_checked_options_and_the_seed():
    from headstats.config.protocol import StatisticsOptions
    from headstats.stats.options import statistics_kwargs

    kwargs = statistics_kwargs(StatisticsOptions(test="wilcoxon", tau=2.0, alpha=0.01, sensitivity=False), 7)
    assert kwargs["seed"] == 7 and type(kwargs["options"]) is TestOptions  # the protocol's own fields left out
    assert (kwargs["options"].test, kwargs["options"].tau, kwargs["options"].alpha) == ("wilcoxon", 2.0, 0.01)
