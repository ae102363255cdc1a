"""The summary of the roles of Pande et al. (2021): per (model, data set), how many heads hold each role and where in
depth (:func:`role_summary`, a description of the role table), what each head does (:func:`head_roles`) and the
role grid; the claims' verdicts are stated once, in the claims table above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.tables.study_tables import role_columns
from headstats.tables.study_tables import Analysis
from headstats.analyses.pande_roles import figures as roles_plots
from headstats.plots.style import order_roles, role_family
from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.sections import by_model_and_dataset, tau_words, tested_parameter
from headstats.stats.corrections import CORRECTIONS
from headstats.stats.onesample import ONE_SAMPLE_TESTS


def _tested(group: pd.DataFrame, role: str) -> bool:
    return bool(group[role].notna().any())


def _held(group: pd.DataFrame, role: str) -> np.ndarray:
    return group[role].fillna(False).to_numpy(dtype=bool)


def _layers_with_most(layers: pd.Series) -> str:
    """``"1, 2, 4 (12 each)"``: the layer(s) holding most of ``layers`` and how many each holds."""
    if layers.empty:
        return ""
    counts = layers.value_counts()
    most = sorted(int(layer) for layer in counts[counts == counts.max()].index)
    return f"{', '.join(map(str, most))} ({int(counts.max())} each)" if len(most) > 1 else \
        f"{most[0]} ({int(counts.max())})"


def role_summary(roles: pd.DataFrame) -> pd.DataFrame:
    """Where the heads of each role sit, per (model, dataset, role) tested.

    Parameters
    ----------
    roles : DataFrame
        the role table (``roles``; a boolean or NA column per role).

    Returns
    -------
    DataFrame
        ``model, dataset, role, n_heads`` (heads holding the role), ``n_tested`` (heads it was tested on),
        ``share`` (``n_heads / n_tested``), ``median_layer`` (median layer of the heads holding it; NaN when
        none does), ``layers_with_most`` (the layer(s) with most such heads, and how many) and ``n_layers``.
        Roles not tested on a data set (all NA) are left out.
    """
    rows = []
    for (model, dataset), group in roles.groupby(["model", "dataset"], sort=False):
        n_layers = int(group["layer"].max()) + 1
        for role in order_roles(role_columns(roles)):
            if not _tested(group, role):
                continue
            held = _held(group, role)
            layers = group.loc[held, "layer"].astype(int)
            rows.append(dict(
                model=model, dataset=dataset, role=role, n_heads=int(held.sum()),
                n_tested=int(group[role].notna().sum()), share=float(held.mean()),
                median_layer=float(np.median(layers)) if len(layers) else float("nan"),
                layers_with_most=_layers_with_most(layers), n_layers=n_layers,
            ))
    columns = ["model", "dataset", "role", "n_heads", "n_tested", "share", "median_layer", "layers_with_most",
               "n_layers"]
    return pd.DataFrame(rows, columns=columns)


def _family_held(group: pd.DataFrame, family: str) -> np.ndarray:
    cols = [c for c in role_columns(group) if role_family(c) == family and _tested(group, c)]
    if not cols:
        return np.zeros(len(group), dtype=bool)
    return np.logical_or.reduce([_held(group, c) for c in cols])


def _tested_families(group: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(role_family(c) for c in order_roles(role_columns(group)) if _tested(group, c)))


def multi_role_heads(group: pd.DataFrame) -> np.ndarray:
    """Per head of one (model, dataset): whether it holds roles of two or more kinds (:func:`role_family`:
    ``delimiter_cls`` and ``delimiter`` are one kind, ``syntactic:nsubj`` and ``syntactic`` another)."""
    families = _tested_families(group)
    if not families:
        return np.zeros(len(group), dtype=bool)
    return np.sum([_family_held(group, f) for f in families], axis=0) >= 2


def _ceiling_notes(ceilings: pd.DataFrame | None, model: str, dataset: str) -> dict[str, str]:
    """Per role of one (model, dataset): its mean ceiling, marked when tau is out of reach."""
    if ceilings is None or ceilings.empty:
        return {}
    part = ceilings[(ceilings["model"].astype(str) == str(model)) & (ceilings["dataset"].astype(str) == str(dataset))]
    return {str(r.role): f"{r.mean_ceiling:.3g}" + ("" if bool(r.tau_reachable) else f" (tau = {r.tau:g} out of reach)")
            for r in part.itertuples()}


def _n_scored(manifest: dict, model: str, dataset: str) -> int | None:
    for key, counts in manifest.get("inputs", {}).items():
        m, d = counts.get("model"), counts.get("dataset")
        if m is None or d is None:
            m, _, d = key.rpartition("/")
        if m == model and d == dataset:
            return counts.get("n_scored")
    return None


def _dataset_sentence(group: pd.DataFrame, summary: pd.DataFrame, n_inputs: int | None) -> str:
    n_layers, n_heads = int(group["layer"].max()) + 1, int(group["head"].max()) + 1
    any_role = group[[c for c in role_columns(group) if _tested(group, c)]].fillna(False).astype(bool).any(axis=1)
    multi = multi_role_heads(group)
    inputs = f", {n_inputs} inputs" if n_inputs is not None else ""
    held = summary[summary["n_heads"] > 0].sort_values("n_heads", ascending=False, kind="stable")
    largest = "; ".join(f"{r.role} {r.n_heads} (median layer {r.median_layer:g})" for r in held.head(3).itertuples())
    untested = [c for c in role_columns(group) if not _tested(group, c)]
    parts = [f"{n_layers} layers x {n_heads} heads{inputs}. **{int(any_role.sum())} of {len(group)} heads** hold at "
             f"least one role; {int(multi.sum())} hold roles of two or more kinds."]
    parts.append(f"Most held: {largest}." if largest else "No head holds any role.")
    if untested:
        parts.append(f"Not tested on this data set: {', '.join(untested)}.")
    return " ".join(parts)


def head_roles(group: pd.DataFrame) -> pd.DataFrame:
    """Head -> roles of one (model, data set): ``head`` (``layer-head``), ``roles`` (the roles it holds, in the
    roles' order, a relation's role as ``syntactic:nsubj``) and ``n_roles``, for every head that holds one."""
    columns = [c for c in order_roles(role_columns(group)) if _tested(group, c)]
    rows = []
    for _, r in group.sort_values(["layer", "head"]).iterrows():
        held = [c for c in columns if r[c] is True or (not pd.isna(r[c]) and bool(r[c]))]
        if held:
            rows.append({"head": f"{int(r['layer'])}-{int(r['head'])}", "roles": ", ".join(held),
                         "n_roles": len(held)})
    return pd.DataFrame(rows, columns=["head", "roles", "n_roles"])


def heads_by_role_set(each: pd.DataFrame) -> pd.DataFrame:
    """:func:`head_roles` grouped by what the heads do: ``roles`` (one set of roles), ``heads`` (every head that
    holds exactly that set, ``layer-head`` in layer order) and ``n_heads``, the most common set first: the head ->
    roles answer in a few rows, however many heads a model has."""
    if each.empty:
        return pd.DataFrame(columns=["roles", "heads", "n_heads"])
    groups = each.groupby("roles", sort=False)["head"]
    out = pd.DataFrame({"roles": list(groups.groups), "heads": [", ".join(h) for _, h in groups],
                        "n_heads": [len(h) for _, h in groups]})
    return out.sort_values("n_heads", ascending=False, kind="stable").reset_index(drop=True)


def _summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "role": summary["role"], "heads": summary["n_heads"],
        "share of heads (fraction)": summary["share"].astype(float),
        "median layer": ["" if np.isnan(m) else f"{m:g}" for m in summary["median_layer"]],
        "layer(s) with most": summary["layers_with_most"],
    })


def with_controls(table: pd.DataFrame, summary: pd.DataFrame, controls: Sequence[str], dataset: str) -> pd.DataFrame:
    """``table`` (:func:`_summary_table` of a trained model) with a column ``heads in <control>`` per random-init
    control of that model (METHODS 6.3): how many of the control's heads hold each role on the same data set,
    beside the trained model's count (the ``learned:<role>`` claims test the difference); empty where the control
    was not tested for the role."""
    out = table.copy()
    for control in controls:
        part = summary[(summary["model"] == control) & (summary["dataset"] == dataset)]
        counts = dict(zip(part["role"], part["n_heads"].astype(int)))
        out[f"heads in {control}"] = [counts.get(role, "") for role in out["role"]]
    return out


def summary_section(report: Report, root: Path, analysis: Analysis, protocol, manifest: dict, *,
                    formats: Sequence[str] | None = None, figures: FigureRenderer | None = None,
                    heading: str = "Summary") -> None:
    """What was found, per (model, dataset): heads per role, where in depth, what each head does and the role grid
    (drawn by ``figures``, default: here, now)."""
    figures = figures or FigureRenderer(root, formats=formats, workers=1)
    roles = analysis.roles
    st = protocol.statistics
    report.heading(heading)
    n_roles = len(role_columns(roles))
    report.text(
        f"Every head was tested for {n_roles} roles: H0 {tested_parameter(st.test)} sieve bias score <= "
        f"tau = {tau_words(st)}, one-sided "
        f"{ONE_SAMPLE_TESTS.describe(st.test)}, {CORRECTIONS.describe(st.correction, 'short')} correction per "
        f"{' x '.join(st.family) or 'study'}, "
        f"alpha = {st.alpha:g}. Below, per data set: how many heads hold each role and where in depth they sit, "
        "(the claims' verdicts: the claims table above, stated once)."
    )
    summary = role_summary(roles)
    for (model, dataset), group in by_model_and_dataset(roles, protocol):
        report.heading(f"{model} on {dataset}", level=3)
        part = summary[(summary["model"] == model) & (summary["dataset"] == dataset)]
        notes = _ceiling_notes(analysis.tables.get("ceilings"), model, dataset)
        out_of_reach = [f"{r} (mean ceiling {v.split(' ')[0]})" for r, v in notes.items() if "out of reach" in v]
        reach = (f" **tau is out of reach** for {', '.join(out_of_reach)}: not even a perfect head could be "
                 f"assigned {'this role' if len(out_of_reach) == 1 else 'these roles'} here." if out_of_reach else "")
        report.text(_dataset_sentence(group, part, _n_scored(manifest, model, dataset)) + reach)
        report.figure(figures.add(f"roles_grid_{figure_tag(model, dataset)}", roles_plots.role_grid, group,
                                  title=f"roles held per head: {model} on {dataset}"),
                      "Role grid: each cell is a head (layer x head); each role has a fixed slot in every cell "
                      "(key below the grid), filled when the head holds the role, grey when it was tested but not "
                      "assigned. Look for roles that fill whole layers and for heads with several filled slots.",
                      alt=f"role grid of {model} on {dataset}")
        each = head_roles(group)
        sets = heads_by_role_set(each)
        report.table(sets, f"What each head does ({model} on {dataset}): the heads that hold each set of roles "
                     f"({len(group) - len(each)} of the {len(group)} heads hold none); heads are layer-head, "
                     "0-based. All heads, one column per role: `roles.csv`.", max_rows=200, csv="roles.csv",
                     fold=len(sets) > 24)
        if len(sets) < len(each):  # the same, one row per head, for a reader looking up a head
            report.table(each, f"The same, one row per head ({model} on {dataset}).", max_rows=200,
                         csv="roles.csv", fold=len(each) > 24)
        table = _summary_table(part)
        controls = [m.name for m in getattr(protocol, "models", []) if getattr(m, "control_of", None) == model]
        if controls:
            table = with_controls(table, summary, controls, dataset)
        if notes:
            table["mean ceiling"] = [notes.get(str(r), "") for r in table["role"]]
        report.table(table, "Heads holding each role, the median layer of those heads and the "
                     "layer(s) with most of them (share: of the heads the role was tested on); mean ceiling: the "
                     "mean score a perfect head would get on these inputs (tau must be below it)"
                     + ("; heads in a control: the same count in a model of this configuration with random weights "
                        "(the learned: claims test the difference)" if controls else "") + ".", fold=False)
