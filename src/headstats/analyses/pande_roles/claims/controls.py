"""Claims against random-init control models (METHODS 6.3): is a role learned, or would heads of an untrained model
of the same configuration hold it too?

Heads of two models are not aligned, so the comparison is of counts. For each role, model and data set with
controls (``controls: {random_init: {seeds: [...]}}``: the ``controls`` table names each trained model's control
models), the heads holding the role in the trained model (``k`` of ``n``) against those holding it in the control
of each seed (``k_s`` of ``n``), by Fisher's exact test on the 2x2 table of heads
(:func:`headstats.stats.exact.share_test`). The claim "the role is learned" needs every control beaten, so
``p_for = max_s p_greater(s)`` (an intersection-union test); the opposite, fewer heads than every control, has
``p_against = max_s p_less(s)``. Its estimate is the trained model's share of heads minus the largest control
share; no interval is stated (the verdict rests on the exact test; each seed's odds ratio and its interval are in
:class:`~headstats.stats.exact.ShareTest`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from headstats.analyses.sieves import DEFAULT_ROLES
from headstats.stats.claims import ClaimSettings, Evidence, as_run_tables, register_claim
from headstats.stats.exact import share_test
from headstats.analyses.pande_roles.claims.paper import RoleGroup, role_groups
from headstats.tables.study_tables import CONTROLS, ROLES

SOURCE = "random-init control (METHODS 6.3)"


def learned_evidence(tables: Mapping[str, pd.DataFrame], role: str) -> list[Evidence]:
    """One :class:`Evidence` per (trained model, data set) that has controls, for ``role`` (``tables``: the run's
    :class:`~headstats.tables.RunTables`, or a mapping of table names to frames)."""
    tables = as_run_tables(tables)
    controls = tables.get(CONTROLS)
    if controls is None or not len(controls):
        return []
    groups = {(g.model, g.dataset): g for g in role_groups(tables)}
    out = []
    for (model, dataset), g in groups.items():
        mine = controls[controls["model"].astype(str) == model]
        if not len(mine):
            continue
        if role not in g.tested:
            continue
        if not g.reachable(role):
            out.append(Evidence(model, dataset, reason="role out of reach: no head of the trained model can "
                                                     f"reach tau on {role}"))
            continue
        k, n = int(g.held(role).sum()), len(g.group)
        tests, counts = [], []
        for control in mine["control"].astype(str):
            c: RoleGroup | None = groups.get((control, dataset))
            if c is None or role not in c.tested:
                continue
            k_s, n_s = int(c.held(role).sum()), len(c.group)
            tests.append(share_test(k, n, k_s, n_s))
            counts.append(f"{control}: {k_s} of {n_s}")
        if not tests:
            out.append(Evidence(model, dataset, reason=f"role not tested: no control model was tested for {role}"))
            continue
        p_for = max(t.p_greater for t in tests)
        p_against = max(t.p_less for t in tests)
        largest = max(t.k_b / t.n_b for t in tests)
        floor = max(min(t.floor_greater, t.floor_less) for t in tests)
        out.append(Evidence(
            model, dataset, estimate=k / n - largest, p_for=p_for, p_against=p_against, floor=floor,
            detectable=f"with {n} heads per model, the smallest p either direction can reach is {floor:.3g}",
            detail=f"{model}: {k} of {n} heads hold {role}; controls: " + "; ".join(counts)))
    return out


def _register(role: str) -> None:
    @register_claim(
        f"learned:{role}", sentence=f"the {role} role is learned (more heads hold it than in any random-init control)",
        source=SOURCE,
        hypothesis=f"H0: for some control seed s, the trained model's share of {role} heads is at most the control's; "
                   f"H1: it is larger than every control's",
        unit="heads", test="Fisher's exact test on the 2x2 table of heads per control seed; intersection-union over "
                           "the seeds (p = max)",
        measure=f"share of heads holding {role} in the trained model minus the largest control share",
        tables=(ROLES, CONTROLS))
    def evaluate(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
        return learned_evidence(tables, role)


for _role in DEFAULT_ROLES:
    _register(_role)
