"""The methods paragraph of a report, in words, generated from the resolved protocol and the manifest: what was scored,
how, and how it was tested (test and correction described from their registries).
"""

from __future__ import annotations

import pandas as pd

from headstats.report.blocks import Report
from headstats.report.sections import adjusted_bound_words, tau_words, tested_parameter
from headstats.stats.corrections import CORRECTIONS
from headstats.stats.onesample import ONE_SAMPLE_TESTS


def _resampling_sentence(st, tests: pd.DataFrame | None) -> str:
    from headstats.stats.onesample import ONE_SAMPLE_TESTS
    from headstats.stats.sensitivity import decides_near_level_by_importance

    if st.test not in ONE_SAMPLE_TESTS or not ONE_SAMPLE_TESTS.get(st.test).resampling:
        return ""
    drawn = None
    if tests is not None and "n_resamples" in tests and tests["n_resamples"].notna().any():
        drawn = int(pd.to_numeric(tests["n_resamples"], errors="coerce").max())
    how = ("chosen from the family size and alpha so that the smallest attainable corrected p-value is "
           "alpha / 10" if st.n_resamples == "auto" else "as set in the protocol")
    sentence = f"The test drew {drawn if drawn is not None else st.n_resamples} resamples ({how}). "
    if drawn is not None:
        per_head = pd.to_numeric(tests["n_resamples"], errors="coerce").dropna()
        stopped = int((per_head < drawn).sum())
        if stopped:
            sentence = (f"The test drew up to {drawn} resamples per head ({how}); {stopped} of {len(per_head)} "
                        f"heads stopped earlier, once their corrected decision was settled (sequential Monte "
                        f"Carlo: Clopper-Pearson boxes, resampling risk at most 0.001; the note of each gives "
                        f"its draws and the box of its p-value). ")
    if getattr(st, "sensitivity", False) and decides_near_level_by_importance(
            st.test, sequential=st.sequential, n_resamples=st.n_resamples, correction=st.correction):
        sentence += ("In the tau sensitivity table (`tau_sensitivity.csv`, counts of heads), the (head, tau) cells "
                     "still undecided after 2,000 resamples were decided by importance sampling, a defensive mixture "
                     "of tilted resampling laws, not by drawing every resample (headstats docs/statistics.md, "
                     "section 2). ")
    return sentence


def methods_paragraph(protocol, manifest: dict, tests: pd.DataFrame | None = None) -> str:
    """A methods paragraph, in words, from the resolved protocol and the manifest (and the tests table, for
    the number of resamples a resampling test drew)."""
    sc, st = protocol.scoring, protocol.statistics
    param = tested_parameter(st.test)
    models = ", ".join(
        f"{name} ({p.get('architecture', '?')}, {p.get('n_layers')} layers x {p.get('n_heads')} heads)"
        for name, p in manifest["models"].items()
    )
    datasets = []
    for name, info in manifest["datasets"].items():
        parses = info.get("parses", "none")
        parse_text = {"gold": "gold CoNLL-U parses", "spacy": f"parsed by spaCy {info.get('parser')}",
                      "gold+spacy": "gold CoNLL-U parses, the rest parsed by spaCy", "none": "no parse"}.get(
            parses, f"parses: {parses}")  # a manifest from elsewhere may say anything: shown as text
        datasets.append(f"{name} ({info['n_read']} inputs, {info.get('pairs', 0)} of them pairs; {parse_text})")
    family = " x ".join(st.family) if st.family else "all hypotheses of the study"
    special = "counted" if sc.count_special_queries else "not counted"
    return (
        f"We scored every attention head of {models} on {'; '.join(datasets)}. "
        f"For each input, layer and head we computed the sieve bias score of Pande et al. (2021) for the roles "
        f"{', '.join(f'`{r}`' for r in sc.roles)}: the mean attention inside the role's sieve over the mean "
        f"attention over all keys, averaged over queries (1 = uniform attention). The local window was "
        f"w = {sc.window}; [CLS]/[SEP] queries were {special}; syntactic arcs ran {sc.arc_direction.replace('_', ' ')} "
        f"over the relations {', '.join(sc.relations)}, words aligned to word pieces by character offsets. "
        f"Inputs longer than {sc.max_length} pieces were {'skipped' if sc.too_long == 'skip' else 'truncated'}. "
        f"{_scale_text(sc)}{_measure_text(sc)}{_variants_text(sc, st)}"
        f"For every model, data set, role, layer and head we tested H0: {param} score <= tau = {tau_words(st)} "
        f"against H1: {param} score > tau with a one-sided {ONE_SAMPLE_TESTS.describe(st.test)}, and controlled "
        f"multiple comparisons with {CORRECTIONS.describe(st.correction)} over families of "
        f"{family}. A head was assigned a role when its corrected p-value was at most alpha = {st.alpha:g} "
        f"(p_corr <= alpha, as statsmodels decides). {_gate_text(sc, st, family)}{_resampling_sentence(st, tests)}"
        f"Each result reports the {param} score, a one-sided {st.confidence:.0%} lower confidence bound of the "
        f"{param} (marginal, `ci_low`) and the same bound adjusted to the correction (`ci_low_adj`: "
        f"{adjusted_bound_words(st.correction)}), the effect size, the skewness of the scores, the number of inputs "
        f"that took part (N), and, at the head's N and corrected level, the minimum detectable standardised "
        f"effect with {st.power_target:.0%} power and the power and N needed at the declared effect of "
        f"interest d = {st.effect_of_interest:g} (design power, not power at the observed effect, which only "
        f"restates the p-value). {_ceiling_text(manifest)}Seed {protocol.seed}; protocol sha256 "
        f"`{manifest['protocol_sha256'][:16]}`. Definitions and defaults: `docs/methods.md` of headstats."
    )


def _gate_text(sc, st, family: str) -> str:
    """The offset gate of the syntactic roles (METHODS 6.2), when a syntactic role was scored: applied, or off."""
    from headstats.analyses.roles import get_role

    if not any(get_role(role).kind == "arc" for role in sc.roles):
        return ""
    if not getattr(st, "offset_gate", False):
        return ("Syntactic roles were assigned by that test alone, as Pande et al. (2021) did: the offset gate was "
                "off (`statistics.offset_gate: false`). ")
    return ("A syntactic role was assigned only when, in addition, the head beat its offset-matched control "
            "(the offset gate, METHODS 6.2): per arc, the head's bias toward the arc's other end minus its mean bias "
            "toward the words at the same word offset from the other words of the segment (Clark et al. 2019's "
            "fixed-offset baseline, per sentence), averaged over the input's arcs of the role; per head, H0: mean "
            f"excess <= 0 against H1: > 0 with the same one-sided test, corrected by {st.correction} over families "
            f"of {family} (every head and syntactic role), rejected at alpha = {st.alpha:g} (`offset_excess`, "
            "`offset_ci_low`, `offset_p_corr`, `offset_reject` and `gate_removed` in `tests.csv`). ")


#: What each attention measure is, in the Methods paragraph's words (METHODS 6.1).
MEASURE_WORDS = {
    "weights": "the attention weights the model returns (`{name}`)",
    "norm": ("norm-weighted attention (`{name}`, Kobayashi et al. 2020): the weight of key j in query i's row times "
             "the norm of what the head passes on from j, ||(x_j W_V + b_V) W_O||, renormalised over the row, so "
             "that every formula above applies with these maps in place of the weights"),
}


def _measure_text(sc) -> str:
    """The sentences that name the attention measure of every number: one measure, or each of several with the
    primary one that the analyses, the comparisons, the role sections and the paper's claims read."""
    measures = list(getattr(sc, "measures", None) or [getattr(sc, "measure", "weights")])
    if len(measures) == 1:
        return f"Every score is computed on {MEASURE_WORDS[measures[0]].format(name='measure: ' + measures[0])}. "
    listed = "; and on ".join(MEASURE_WORDS[m].format(name=m) for m in measures)
    return (f"Every role score is computed on each of {len(measures)} attention measures, in the same forward pass "
            f"(`measures: [{', '.join(measures)}]`): on {listed}. Each measure is tested as a run of its own "
            f"(`measure` column of `scores.parquet`, `tests.csv` and `roles.csv`); the role grids, maps, statistics "
            f"sections, the comparisons, the other analyses and Pande et al.'s claims are of the first, "
            f"`{measures[0]}`, and the section \"Across measures\" says which assignments hold under every measure. ")


def _scale_text(sc) -> str:
    scale = getattr(sc, "scale", "bias")
    if scale == "bias":
        return ""
    words = {"bias": "the sieve bias score", "mass": "the attention mass inside the sieve (0 to 1)",
             "ceiling": "the sieve bias score divided by its ceiling (0 to 1)"}
    if isinstance(scale, dict):
        roles = [r for r in sc.roles if sc.scale_of(r) != "bias"]
        return ("Scores on another scale, tau in the same unit: " + "; ".join(
            f"`{r}`: {words[sc.scale_of(r)]}" for r in roles) + ". ") if roles else ""
    return f"Every role was scored as {words[scale]}, tau in the same unit. "


def _variants_text(sc, st) -> str:
    """The published code's variants a protocol switched on (METHODS 1.6), in words."""
    on = []
    if getattr(sc, "block_entropy", False):
        on.append("block multiplies each query's ratio by the entropy (nats) of its attention row")
    if getattr(sc, "first_sep_segment", "A") == "B":
        on.append("the first [SEP] of a pair queries segment B")
    if getattr(sc, "local_edges", "exact") == "published":
        on.append(f"the last {sc.window} local queries divide their window sum by its size + 1")
    if getattr(sc, "alignment", "offsets") == "first_occurrence":
        on.append("words are parsed on a regex-cleaned copy of the text and found among the pieces by first "
                  "occurrence")
    if st.test == "t_ddof0":
        on.append("the t statistic uses the sd with ddof 0")
    if st.correction == "none":
        on.append("no multiple-comparison correction")
    return ("As in the published code of Pande et al. (2021): " + "; ".join(on) + ". ") if on else ""


def _ceiling_text(manifest: dict) -> str:
    """The ceilings in words, with the roles whose tau was out of reach (from the run's warnings)."""
    text = ("A sieve bias score cannot exceed n / |S_f(i)| per query, so each input has a ceiling (the score of a "
            "perfect head, averaged as the score is; METHODS 1.6): `tests.csv` gives each head's mean ceiling "
            "(`score_ceiling`) and the share of it reached (`ceiling_share`), `ceilings.csv` each role's. ")
    warnings = manifest.get("warnings") or []
    if warnings:
        text += (f"**tau was at or above the mean ceiling of {len(warnings)} role(s) on a data set, where no head "
                 "can be assigned the role**: " + "; ".join(w.split(": no head")[0] for w in warnings) + ". ")
    return text


def methods_section(report: Report, protocol, manifest: dict, tests: pd.DataFrame | None = None) -> None:
    """The report's "Methods" heading and :func:`methods_paragraph`."""
    report.heading("Methods")
    report.text(methods_paragraph(protocol, manifest, tests))
