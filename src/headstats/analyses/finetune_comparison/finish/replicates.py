"""Pretrained against fine-tuned with seeds as replicates: what fine-tuning changed beyond what any run changes.

The seed-level tables of a comparison whose fine-tuned side is a replicate group (a recipe run with several
seeds, ``seeds: [0, 1, 2]``), from the tables of the layers below (scores, role tables, the engine's
similarity and [CLS]/[SEP] mass):

- ``seed_metrics``: each seed's dev metric and its spread over seeds;
- ``seed_changes``: per (group, dataset, role, layer, head) the change of each seed (paired over the same
  inputs, averaged over them), the mean over seeds with its interval, the moderated t over seeds (limma's
  empirical Bayes, the default ``seed_test``) or the plain t, the exact sign-flip test with its floor, the
  seeds each test needs, seed-to-seed against seed-to-base change, and the margin tests
  (exceeds ``min_change``; TOST: stays within it) (:mod:`headstats.stats.seeds`);
- ``seed_distance``: per head, the cosine similarity of attention maps between seeds of the task beside that
  between each seed and the base (Kovaleva et al. 2019);
- ``seed_layer_change``, ``seed_special_mass``, ``seed_transitions``: the per-seed series behind the paper's
  three claims (Pande et al. 2021, section 6), and ``seed_claims``: the evidence of each claim over seeds (the
  exact sign-flip test, :mod:`.seed_evidence`), whose verdict the registry of claims gives
  (:mod:`headstats.stats.claims`).

What the report says of them is the report's (:mod:`headstats.report.sections.seeds_section`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from headstats.analyses.finetune_comparison.finish.seed_evidence import seed_claims
from headstats.analyses.finetune_comparison.tables import (SEED_CHANGES, SEED_CLAIMS, SEED_DISTANCE, SEED_LAYER_CHANGE,
                                                           SEED_METRICS, SEED_PER_SEED, SEED_SPECIAL_MASS,
                                                           SEED_TRANSITIONS, SIMILARITY, SPECIAL_MASS)
from headstats.stats.corrections import correct_within_families, family_labels, reject
from headstats.stats.existence import claims_correction
from headstats.stats.paired import pair_scores
from headstats.stats.seeds import (
    SEED_TESTS,
    margin_for,
    margin_tests,
    pairwise_mean_abs,
    seeds_needed,
    signflip_floor,
    signflip_over_seeds,
    signflip_test,
    slope_over_seeds,
    t_over_seeds,
)
from headstats.tables.study_tables import role_columns

CELL = ["dataset", "role", "layer", "head"]
METRIC_KEYS = ("accuracy", "f1", "mcc", "majority_baseline")


# ---------------------------------------------------------------------------------------------- metrics


def seed_metrics(metrics: Mapping[str, Mapping[str, Any] | None], groups: Mapping[str, Sequence[str]],
                 seeds: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Each seed's dev metrics and, per group, their mean, sd (ddof 1), min and max over seeds.

    Returns ``group, model, seed, metric, value`` rows for the seeds, then ``model = "(mean)"``,
    ``"(sd)"``, ``"(min)"``, ``"(max)"`` rows per group and metric.
    """
    rows = []
    for group, members in groups.items():
        for name in members:
            m = metrics.get(name) or {}
            for key in METRIC_KEYS:
                if key in m and m[key] is not None:
                    rows.append({"group": group, "model": name, "seed": (seeds or {}).get(name),
                                 "metric": key, "value": float(m[key])})
    out = pd.DataFrame(rows, columns=["group", "model", "seed", "metric", "value"])
    if out.empty:
        return out
    agg = out.groupby(["group", "metric"], sort=False)["value"].agg(["mean", "std", "min", "max"]).reset_index()
    extra = [{"group": r.group, "model": f"({stat.replace('std', 'sd')})", "seed": None, "metric": r.metric,
              "value": float(getattr(r, stat))} for r in agg.itertuples() for stat in ("mean", "std", "min", "max")]
    return pd.concat([out, pd.DataFrame(extra)], ignore_index=True)


# ---------------------------------------------------------------------------------------- head changes


def per_seed_changes(base: pd.DataFrame, seeds: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per seed model and (dataset, role, layer, head): the paired change averaged over the inputs.

    ``mean_change = mean_i [s_i(seed) - s_i(base)]`` over the inputs scored by both with a finite score on
    both sides (paired by ``sentence_id``). Returns ``model_after, dataset, role, layer, head, n,
    base_mean, after_mean, mean_change``.
    """
    frames = []
    for name, after in seeds.items():
        pairs, _ = pair_scores(base, after)
        ok = np.isfinite(pairs["score_before"]) & np.isfinite(pairs["score_after"])
        p = pairs[ok].assign(d=lambda f: f["score_after"] - f["score_before"])
        agg = p.groupby(CELL, sort=True, observed=True).agg(
            n=("d", "size"), base_mean=("score_before", "mean"), after_mean=("score_after", "mean"),
            mean_change=("d", "mean")).reset_index()
        agg.insert(0, "model_after", name)
        frames.append(agg)
    return pd.concat(frames, ignore_index=True)


SEED_CHANGE_COLUMNS = (
    "group", "dataset", "role", "layer", "head", "n_seeds", "n_inputs", "base_mean", "mean_change", "sd_seeds",
    "ci_low", "ci_high", "confidence", "seed_test", "statistic", "dof", "df_prior", "s2_prior", "alternative",
    "p_unc", "p_corr", "reject", "p_t", "p_signflip", "signflip_floor", "seeds_needed", "seeds_needed_t",
    "seeds_needed_moderated", "seed_seed_change", "seed_base_change", "noise_ratio",
    "min_change", "p_exceeds", "p_exceeds_corr", "exceeds", "p_equivalent", "p_equivalent_corr", "unchanged",
    "correction", "family", "alpha",
)


def seed_change_tests(
    changes: pd.DataFrame,
    group: str,
    *,
    alternative: str = "two-sided",
    correction: str = "holm",
    family: Sequence[str] = ("model", "dataset"),
    alpha: float = 0.05,
    confidence: float = 0.95,
    min_change: float | None = None,
    min_change_scale: str = "score",
    seed_test: str = "moderated_t",
) -> pd.DataFrame:
    """Tests of "fine-tuning on this task moves this head", seeds as replicates, per (dataset, role, layer, head).

    Parameters
    ----------
    changes : DataFrame
        :func:`per_seed_changes` of the seeds of one replicate group.
    group : str
        The group's name (the ``group`` column, and ``model`` in ``family``).
    alternative, correction, family, alpha, confidence
        As in the comparison (``compare:``); the family's ``model`` is the group.
    min_change, min_change_scale
        The margin (:func:`headstats.stats.seeds.margin_for`); None: no margin tests (NaN columns).
    seed_test : str
        A registered test over seeds (:data:`headstats.stats.seeds.SEED_TESTS`): ``moderated_t``, ``t`` or one
        added with :func:`headstats.stats.seeds.register_seed_test`: the per-cell test (and margin tests). The
        moderated t (:func:`headstats.stats.seeds.moderated_t_over_seeds`) fits its prior over all cells of the
        group (``df_prior``, ``s2_prior``).

    Returns
    -------
    DataFrame
        :data:`SEED_CHANGE_COLUMNS`. ``p_unc``, ``statistic``, ``dof``, the interval: ``seed_test``'s;
        ``p_t``: the plain t's p-value (NaN when all seeds are equal). ``seeds_needed``: the fewest seeds whose
        sign-flip floor is below the corrected level; ``seeds_needed_t``, ``seeds_needed_moderated``: the
        fewest seeds with which the t and the moderated t (with this group's ``df_prior``) have 80 % power
        at a mean change of one run-to-run sd, at the corrected level of the family's smallest p-value.
        ``reject``: the test over seeds rejects after correction (the change is beyond seed noise); ``exceeds``: its margin test rejects after correction (beyond noise and
        beyond the margin); ``unchanged``: the TOST rejects after correction (shown to stay within the
        margin). ``seed_seed_change`` is the mean over pairs of seeds of ``|m_s - m_t|``,
        ``seed_base_change`` the mean over seeds of ``|m_s|``, ``noise_ratio`` their ratio.
    """
    wide = changes.pivot_table(index=CELL, columns="model_after", values="mean_change", aggfunc="first",
                               observed=True, dropna=False).sort_index()
    values = wide.to_numpy(float).T  # (k, m)
    cells = wide.index.to_frame(index=False)
    n_inputs = changes.groupby(CELL, observed=True)["n"].min().reindex(wide.index).to_numpy()
    base_mean = changes.groupby(CELL, observed=True)["base_mean"].mean().reindex(wide.index).to_numpy()
    k = values.shape[0]
    t = SEED_TESTS.get(seed_test).fn(values, alternative=alternative, confidence=confidence)
    plain = t if seed_test == "t" else t_over_seeds(values, alternative=alternative)
    out = cells.copy()
    out.insert(0, "group", group)
    out["n_seeds"] = t["n_seeds"].astype(int)
    out["n_inputs"] = n_inputs
    out["base_mean"] = base_mean
    out["mean_change"] = t["mean"]
    out["sd_seeds"] = t["sd"]
    out["ci_low"], out["ci_high"], out["confidence"] = t["ci_low"], t["ci_high"], confidence
    out["seed_test"] = seed_test
    out["statistic"], out["dof"], out["alternative"] = t["statistic"], t["dof"], alternative
    out["df_prior"], out["s2_prior"] = t.get("df_prior", np.nan), t.get("s2_prior", np.nan)
    out["p_unc"] = t["p"]
    out["p_t"] = plain["p"]
    keys = out.rename(columns={"group": "model"})
    labels = family_labels(keys, list(family))
    out["p_corr"], _ = correct_within_families(out["p_unc"], labels, correction=correction, alpha=alpha)
    out["reject"] = reject(out["p_corr"], alpha)
    out["p_signflip"] = signflip_over_seeds(values, alternative=alternative)
    out["signflip_floor"] = signflip_floor(k, alternative)
    m_family = labels.map(labels.value_counts()).to_numpy()
    need = {}
    for m in np.unique(m_family):
        common = {"alpha": alpha, "m": int(m), "correction": correction, "alternative": alternative}
        need[m] = (seeds_needed(**common), seeds_needed(**common, test="t"),
                   seeds_needed(**common, test="moderated_t", df_prior=float(t["df_prior"]))
                   if seed_test == "moderated_t" else np.nan)
    out["seeds_needed"] = [need[m][0] for m in m_family]
    out["seeds_needed_t"] = [need[m][1] for m in m_family]
    out["seeds_needed_moderated"] = [need[m][2] for m in m_family]
    out["seed_seed_change"] = pairwise_mean_abs(values)
    out["seed_base_change"] = np.nanmean(np.abs(values), 0) if k else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        out["noise_ratio"] = out["seed_seed_change"] / out["seed_base_change"]
    if min_change is not None:
        delta = margin_for(base_mean, min_change=min_change, scale=min_change_scale)
        margin = margin_tests(values, delta, test=seed_test)
        out["min_change"] = delta
        out["p_exceeds"] = margin["p_exceeds"]
        out["p_exceeds_corr"], _ = correct_within_families(margin["p_exceeds"], labels, correction=correction,
                                                           alpha=alpha)
        out["p_equivalent"] = margin["p_equivalent"]
        out["p_equivalent_corr"], _ = correct_within_families(margin["p_equivalent"], labels,
                                                              correction=correction, alpha=alpha)
    else:
        for c in ("min_change", "p_exceeds", "p_exceeds_corr", "p_equivalent", "p_equivalent_corr"):
            out[c] = np.nan
    out["exceeds"] = out["reject"] & reject(out["p_exceeds_corr"], alpha)
    out["unchanged"] = reject(out["p_equivalent_corr"], alpha)
    out["correction"] = correction
    out["family"] = labels.to_numpy()
    out["alpha"] = alpha
    return out[list(SEED_CHANGE_COLUMNS)]


# ---------------------------------------------------------------------------------------------- distance


def seed_distance(similarity: pd.DataFrame, base: str, group: str, members: Sequence[str]) -> pd.DataFrame:
    """Per (dataset, layer, head): attention-map cosine between seeds beside that between seeds and the base.

    ``cos_seed_base``: mean over seeds of the (base, seed) cosine; ``cos_seed_seed``: mean over pairs of
    seeds; ``dist_seed_base = 1 - cos_seed_base``, ``dist_seed_seed = 1 - cos_seed_seed`` and
    ``distance_ratio = dist_seed_seed / dist_seed_base`` (near 1: the base is no farther from a seed than
    another seed is; near 0: every seed moved the head the same way).
    """
    members = list(members)
    to_base = similarity[(similarity["model_a"] == base) & similarity["model_b"].isin(members)]
    between = similarity[similarity["model_a"].isin(members) & similarity["model_b"].isin(members)]
    keys = ["dataset", "layer", "head"]
    a = to_base.groupby(keys)["cosine_mean"].agg(cos_seed_base="mean", cos_seed_base_sd="std").reset_index()
    if len(between):
        b = between.groupby(keys)["cosine_mean"].agg(cos_seed_seed="mean", cos_seed_seed_sd="std").reset_index()
        a = a.merge(b, on=keys, how="left")
    else:
        a["cos_seed_seed"], a["cos_seed_seed_sd"] = np.nan, np.nan
    a["dist_seed_base"] = 1 - a["cos_seed_base"]
    a["dist_seed_seed"] = 1 - a["cos_seed_seed"]
    with np.errstate(invalid="ignore", divide="ignore"):
        a["distance_ratio"] = a["dist_seed_seed"] / a["dist_seed_base"]
    a.insert(0, "group", group)
    return a


# ------------------------------------------------------------------------------------------------ claims


def _per_seed_layer(frame: pd.DataFrame, value: str, members: Sequence[str], model_col: str) -> np.ndarray:
    """(k, L): the mean over heads of ``value`` per seed (rows, in ``members`` order) and layer."""
    wide = frame.groupby([model_col, "layer"])[value].mean().unstack("layer")
    return wide.reindex(list(members)).to_numpy(float)


def layer_change(
    similarity: pd.DataFrame | None, changes: pd.DataFrame, base: str, group: str, members: Sequence[str],
    *, confidence: float = 0.95,
) -> tuple[pd.DataFrame, list[dict]]:
    """Per seed and layer, how much the layer changed, and the trend over depth (claim: later layers change most).

    Two measures per (seed, layer), each a mean over the layer's heads: ``attention``, ``1 - cosine`` of the
    seed's and the base's attention maps; ``score``, the mean over roles of the relative change
    ``|mean_change| / base_mean``. The claim's test: per seed the least-squares slope over layer index, and
    the one-sided t-test over seeds of H1: mean slope > 0 (:func:`headstats.stats.seeds.slope_over_seeds`).

    Returns the long table ``group, dataset, measure, model_after, layer, value`` and claim rows.
    """
    frames, claims = [], []
    members = list(members)
    datasets = list(dict.fromkeys(changes["dataset"]))
    for ds in datasets:
        sources = {}
        if similarity is not None and len(similarity):
            s = similarity[(similarity["dataset"] == ds) & (similarity["model_a"] == base)
                           & similarity["model_b"].isin(members)].assign(value=lambda f: 1 - f["cosine_mean"])
            if len(s):
                sources["attention"] = (s, "model_b")
        c = changes[(changes["dataset"] == ds)]
        with np.errstate(invalid="ignore", divide="ignore"):
            c = c.assign(value=np.abs(c["mean_change"]) / c["base_mean"].abs())
        c = c[np.isfinite(c["value"])]
        if len(c):
            sources["score"] = (c, "model_after")
        for measure, (frame, col) in sources.items():
            per = _per_seed_layer(frame, "value", members, col)
            layers = sorted(frame["layer"].unique())
            for i, name in enumerate(members):
                frames.append(pd.DataFrame({"group": group, "dataset": ds, "measure": measure, "model_after": name,
                                            "layer": layers, "value": per[i]}))
            res = slope_over_seeds(per, alternative="greater", confidence=confidence)
            top = [int(layers[j]) for j in np.nanargmax(per, axis=1)] if np.isfinite(per).any() else []
            what = ("1 - cosine of attention maps" if measure == "attention"
                    else "mean relative |change| of role scores")
            claims.append({
                "key": "later_layers_change_most", "values": res["slopes"], "alternative": "greater",
                "group": group, "dataset": ds, "claim": "later layers change most", "measure": measure,
                "test": f"per-seed OLS slope of ({what}) over layer index; exact one-sided sign-flip test over "
                        "seeds, H1 slope > 0 (interval: t over seeds)",
                "estimate": res["mean"], "ci_low": res["ci_low"], "ci_high": res["ci_high"],
                "statistic": res["statistic"], "dof": res["dof"], **_signflip_claim(res["slopes"], "greater", res["p"]),
                "detail": f"slopes per seed {', '.join(f'{s:.3g}' for s in res['slopes'])}; layer that changed "
                          f"most per seed: {', '.join(map(str, top))}",
            })
    long = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["group", "dataset", "measure", "model_after", "layer", "value"])
    return long, claims


def special_mass_change(
    special: pd.DataFrame, base: str, group: str, members: Sequence[str], *, correction: str = "holm",
    alpha: float = 0.05, confidence: float = 0.95,
) -> tuple[pd.DataFrame, list[dict]]:
    """Per layer, the change of attention mass on [SEP] and on other tokens over seeds (claim: attention to
    [SEP] falls and spreads to the other tokens).

    Per seed s and layer l, ``delta_sl = mean_h mass(seed s) - mean_h mass(base)`` (mean over heads of the
    per-head mass averaged over inputs). Per layer and target: the mean over seeds, its t interval and the
    one-sided t-test over seeds (``sep``: H1 < 0; ``other``: H1 > 0; ``cls``: two-sided), corrected with
    ``correction`` over the layers of one target; beside it the exact sign-flip test over seeds
    (``p_signflip``, corrected over the layers as ``p_signflip_corr``, decision ``reject_signflip``; its floor
    ``1/2^k`` reaches Holm's level over 6 layers from 8 seeds on); ``layer = -1`` is the mean over layers (the
    overall test).
    The claim holds overall when both the [SEP] fall and the rise on other tokens are significant at alpha.
    """
    members = list(members)
    rows, claims = [], []
    per_seed: dict[tuple[str, str], np.ndarray] = {}
    for ds, part in special.groupby("dataset", sort=False):
        base_layer = part[part["model"] == base].groupby(["target", "layer"])["mass_mean"].mean()
        for target, alt in (("sep", "less"), ("other", "greater"), ("cls", "two-sided")):
            seeds_part = part[(part["target"] == target) & part["model"].isin(members)]
            if seeds_part.empty or target not in base_layer.index.get_level_values(0):
                continue
            per = _per_seed_layer(seeds_part, "mass_mean", members, "model")
            layers = sorted(seeds_part["layer"].unique())
            delta = per - base_layer.loc[target].reindex(layers).to_numpy(float)[None, :]
            overall = np.nanmean(delta, axis=1)[:, None]
            per_seed[(ds, target)] = overall[:, 0]
            res = t_over_seeds(np.hstack([delta, overall]), alternative=alt, confidence=confidence)
            flip = signflip_test(np.hstack([delta, overall]), alternative=alt)
            p_layers = res["p"][:-1]
            p_corr, _ = correct_within_families(p_layers, np.zeros(len(layers)), correction=correction, alpha=alpha)
            flip_corr, _ = correct_within_families(flip["p"][:-1], np.zeros(len(layers)), correction=correction,
                                                   alpha=alpha)
            for j, layer in enumerate([*layers, -1]):
                rows.append({"group": group, "dataset": ds, "target": target, "layer": int(layer),
                             "base_mass": float(base_layer.loc[target].reindex(layers).mean() if layer == -1
                                                else base_layer.loc[(target, layer)]),
                             "mean_change": res["mean"][j], "sd_seeds": res["sd"][j], "ci_low": res["ci_low"][j],
                             "ci_high": res["ci_high"][j], "statistic": res["statistic"][j], "dof": res["dof"][j],
                             "alternative": alt, "p_unc": res["p"][j],
                             "p_corr": p_corr[j] if j < len(layers) else res["p"][j],
                             "p_signflip": flip["p"][j], "signflip_floor": flip["floor"][j],
                             "p_signflip_corr": flip_corr[j] if j < len(layers) else flip["p"][j],
                             "correction": correction if j < len(layers) else "none (one test)"})
    table = pd.DataFrame(rows)
    if table.empty:
        return table, claims
    table["reject"] = reject(table["p_corr"], alpha)
    table["reject_signflip"] = reject(table["p_signflip_corr"], alpha)  # the exact test, per layer
    for ds, part in table.groupby("dataset", sort=False):
        sep = part[(part["target"] == "sep")]
        other = part[(part["target"] == "other")]
        if sep.empty or other.empty:
            continue
        s_all, o_all = sep[sep["layer"] == -1].iloc[0], other[other["layer"] == -1].iloc[0]
        both = sorted(set(sep[(sep["layer"] >= 0) & sep["reject"]]["layer"])
                      & set(other[(other["layer"] >= 0) & other["reject"]]["layer"]))
        claims.append({
            "key": "sep_attention_falls", "values": (per_seed[(ds, "sep")], per_seed[(ds, "other")]),
            "alternative": ("less", "greater"),
            "group": group, "dataset": ds, "claim": "attention to [SEP] falls and spreads to the other tokens",
            "measure": "attention mass",
            "test": "per seed and layer, mean over heads of the mass on [SEP] (and on other tokens) minus the "
                    "base's; exact one-sided sign-flip tests over seeds (SEP < 0, other > 0) on the mean over "
                    f"layers, the larger p; per layer t-tests over seeds with {correction} over layers",
            "estimate": float(s_all["mean_change"]), "ci_low": float(s_all["ci_low"]), "ci_high": float(s_all["ci_high"]),
            "statistic": float(s_all["statistic"]), "dof": float(s_all["dof"]),
            **_signflip_claim(None, None, float(max(s_all["p_unc"], o_all["p_unc"])),
                              p=float(max(s_all["p_signflip"], o_all["p_signflip"])), floor=float(s_all["signflip_floor"])),
            "detail": f"[SEP] mass change {s_all['mean_change']:+.3f} (p {s_all['p_unc']:.3g}), other tokens "
                      f"{o_all['mean_change']:+.3f} (p {o_all['p_unc']:.3g}); both in layers: "
                      f"{', '.join(map(str, both)) if both else 'none'}",
        })
    return table, claims


DELIMITER, SYNTACTIC = "delimiter (any)", "syntactic (any)"


def _family_columns(cols: Sequence[str]) -> dict[str, list[str]]:
    out = {c: [c] for c in cols}
    delim = [c for c in cols if c.startswith("delimiter")]
    syn = [c for c in cols if c.startswith("syntactic")]
    if delim:
        out[DELIMITER] = delim
    if syn:
        out[SYNTACTIC] = syn
    return out


def seed_transitions(
    roles: Mapping[str, pd.DataFrame], base: str, group: str, members: Sequence[str], datasets: Sequence[str],
    *, alpha: float = 0.05, confidence: float = 0.95,
) -> tuple[pd.DataFrame, list[dict]]:
    """Role transitions per seed and their spread (claim: delimiter heads are lost, syntactic ones gained).

    Per seed and role, over the heads of the data set: ``before`` (heads holding the role in the base),
    ``after``, ``gained``, ``lost``, ``net = after - before``; ``delimiter (any)`` and ``syntactic (any)``
    count heads holding at least one role of that kind. Over seeds: mean and sd of each, the t interval of
    ``net`` and the one-sided t-test over seeds (delimiter kinds: H1 net < 0; syntactic kinds: H1 net > 0;
    others two-sided).
    """
    members = [m for m in members if m in roles]
    rows, claims = [], []
    if base not in roles or not members:
        return pd.DataFrame(rows), claims
    cols = [c for c in role_columns(roles[base]) if all(c in roles[m].columns for m in members)]
    keys = ["layer", "head"]
    for ds in datasets:
        rb = roles[base][roles[base]["dataset"] == ds].set_index(keys).sort_index()
        if rb.empty:
            continue
        for role, parts in _family_columns(cols).items():
            if rb[parts].isna().all().all():
                continue
            before = rb[parts].fillna(False).astype(bool).any(axis=1)
            stats = []
            for name in members:
                ra = roles[name][roles[name]["dataset"] == ds].set_index(keys).reindex(rb.index)
                after = ra[parts].fillna(False).astype(bool).any(axis=1)
                stats.append((int(after.sum()), int((after & ~before).sum()), int((before & ~after).sum())))
            arr = np.array(stats, dtype=float)  # (k, 3)
            net = arr[:, 0] - before.sum()
            alt = "less" if role.startswith("delimiter") else "greater" if role.startswith("syntactic") else "two-sided"
            res = t_over_seeds(net, alternative=alt, confidence=confidence)
            flip = signflip_test(net, alternative=alt)
            rows.append({"group": group, "dataset": ds, "role": role, "n_heads": len(rb), "before": int(before.sum()),
                         "after_mean": arr[:, 0].mean(), "gained_mean": arr[:, 1].mean(),
                         "lost_mean": arr[:, 2].mean(), "net_mean": float(res["mean"][0]),
                         "net_sd": float(res["sd"][0]), "net_per_seed": " ".join(f"{v:+.0f}" for v in net),
                         "ci_low": float(res["ci_low"][0]), "ci_high": float(res["ci_high"][0]),
                         "statistic": float(res["statistic"][0]), "dof": float(res["dof"][0]), "alternative": alt,
                         "p_t": float(res["p"][0]), "p": float(flip["p"][0]), "signflip_floor": float(flip["floor"][0]),
                         "_net": net})
    table = pd.DataFrame(rows).drop(columns="_net", errors="ignore")
    for row in rows:
        if row["role"] in (DELIMITER, SYNTACTIC):
            lost = row["role"] == DELIMITER
            claims.append({
                "key": "delimiter_heads_lost" if lost else "syntactic_heads_gained", "values": row.pop("_net"),
                "alternative": "less" if lost else "greater",
                "group": group, "dataset": row["dataset"],
                "claim": "delimiter heads are lost" if lost else "syntactic heads are gained",
                "measure": "role assignment",
                "test": f"per seed, heads holding any {row['role'].split()[0]} role after minus before; exact "
                        f"one-sided sign-flip test over seeds, H1 net {'< 0' if lost else '> 0'} (interval: t over seeds)",
                "estimate": row["net_mean"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
                "statistic": row["statistic"], "dof": row["dof"], "p": row["p"], "p_t": row["p_t"],
                "signflip_floor": row["signflip_floor"],
                "detail": f"{row['before']} heads before; net per seed {row['net_per_seed']} (gained "
                          f"{row['gained_mean']:.1f}, lost {row['lost_mean']:.1f} on average)",
            })
    return table, claims


def _signflip_claim(values, alternative: str | None, p_t: float, *, p: float | None = None,
                    floor: float | None = None) -> dict[str, float]:
    """The p-value of a claim over seeds: the exact sign-flip test of the per-seed values (its floor
    ``1/2^k`` one-sided: no claim over 3 seeds can reach 0.05), beside the t-test's ``p_t``."""
    if p is None:
        flip = signflip_test(np.asarray(values, dtype=float), alternative=alternative)
        p, floor = float(flip["p"][0]), float(flip["floor"][0])
    return {"p": p, "signflip_floor": floor, "p_t": p_t}


# -------------------------------------------------------------------------------------------- the whole


def replicate_comparison(
    base_scores: pd.DataFrame,
    seed_scores: Mapping[str, pd.DataFrame],
    *,
    spec: Any,
    base: str,
    group: str,
    roles: Mapping[str, pd.DataFrame] | None = None,
    attention: Mapping[str, pd.DataFrame] | None = None,
    metrics: Mapping[str, Mapping[str, Any] | None] | None = None,
    seeds: Mapping[str, int] | None = None,
    alpha: float = 0.05,
) -> dict[str, pd.DataFrame]:
    """Every seed-level table of one replicate group against its base (see the module docstring).

    ``spec`` is the :class:`..options.CompareSpec` (``alternative, correction, family,
    confidence, min_change, min_change_scale``); ``seed_scores`` the scores of each seed model on the
    compared data sets; ``attention`` the engine's ``similarity`` (base-seed and seed-seed pairs) and
    ``special_mass`` tables; ``metrics`` each seed model's ``metrics.json``.
    """
    members = list(seed_scores)
    changes = per_seed_changes(base_scores, seed_scores)
    tables = {SEED_CHANGES.key: seed_change_tests(
        changes, group, alternative=spec.alternative, correction=spec.correction, family=tuple(spec.family),
        alpha=alpha, confidence=spec.confidence, min_change=getattr(spec, "min_change", None),
        min_change_scale=getattr(spec, "min_change_scale", "score"), seed_test=getattr(spec, "seed_test", "moderated_t"))}
    tables[SEED_PER_SEED.key] = changes.assign(group=group)
    if metrics is not None:
        tables[SEED_METRICS.key] = seed_metrics(metrics, {group: members}, seeds)
    claims: list[dict] = []
    similarity = (attention or {}).get(SIMILARITY.key)
    if similarity is not None and len(similarity):
        tables[SEED_DISTANCE.key] = seed_distance(similarity, base, group, members)
    layer_long, c = layer_change(similarity, changes, base, group, members, confidence=spec.confidence)
    tables[SEED_LAYER_CHANGE.key] = layer_long
    claims += c
    special = (attention or {}).get(SPECIAL_MASS.key)
    if special is not None and len(special):
        mass, c = special_mass_change(special, base, group, members, correction=spec.correction, alpha=alpha,
                                      confidence=spec.confidence)
        tables[SEED_SPECIAL_MASS.key] = mass
        claims += c
    if roles:
        trans, c = seed_transitions(roles, base, group, members, list(dict.fromkeys(changes["dataset"])),
                                    alpha=alpha, confidence=spec.confidence)
        tables[SEED_TRANSITIONS.key] = trans
        claims += c
    tables[SEED_CLAIMS.key] = seed_claims(claims, alpha=alpha, confidence=spec.confidence,
                                        correction=claims_correction(spec.correction))
    return tables
