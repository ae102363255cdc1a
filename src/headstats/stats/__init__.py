"""Statistics: tables in, tables out. Never imports torch, matplotlib or rich.

The horizontal toolkit of the analyses: one-sample and paired tests, corrections, intervals of accuracies, power and
sensitivity, exact and permutation tests, seed replicates, and the claims registry (:mod:`headstats.stats.claims`).
No module here names an analysis: an analysis' finish step and claims live in its own package
(``headstats/analyses/<name>/finish.py``, ``claims.py``) and use these.
"""
