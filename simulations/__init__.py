"""The simulations that check headstats' methods (docs/statistics.md), kept beside the package, not in it.

A test is shown to hold its level, or to have its power, by simulating data whose truth is known; these
modules are that evidence, not part of an analysis, so they live outside ``src/headstats`` and import it
like any user's code:

- :mod:`simulations.planted`: planted score tables (heads exactly at tau or clearly above it, ``plant``,
  ``planted_scores``; the fixtures of the statistics' tests) and the error rates of the one-sample tests and
  corrections (``simulate_error_rates``);
- :mod:`simulations.seed_tests`: the tests over seeds (``simulate_seed_type1``, ``simulate_moderated_level``);
- :mod:`simulations.clustered`: words clustered in sentences, for the dependency analysis' tests
  (``simulate_clustered_level``).

The scripts print the tables of the docs from them, from the repository's root (about 1-4 CPU-minutes each)::

    PYTHONPATH=src python -m simulations.claims_level
    PYTHONPATH=src python -m simulations.clustered_words
    PYTHONPATH=src python -m simulations.moderated_t
    PYTHONPATH=src python -m simulations.seeds_type1

``tests/simulations/`` runs each simulation at a small size against its known answer.
"""
