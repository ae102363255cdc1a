"""Figures of the statistics: tau sensitivity, the p-values' ECDF, the smallest detectable effects.

Each function takes a table returned by :mod:`headstats.stats` (it computes no statistic) and either draws
on the ``ax`` it is given or creates a :class:`matplotlib.figure.Figure` of its own (object-oriented API, no
pyplot state, no ``plt.show``), so it works headless. The figure drawn on is returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from headstats.plots import style

#: Series colours (Okabe-Ito); roles take their fixed colours from :func:`headstats.plots.style.role_colours`.
_COLOURS = style.SERIES


def _axes(ax: Axes | None, figsize: tuple[float, float], *, fit: bool = False) -> tuple[Figure, Axes]:
    """The axes to draw on: ``ax``, or the axes of a new figure (laid out by constrained layout, or by
    :func:`headstats.plots.style.fit` once drawn when ``fit``)."""
    return style.axes_for(ax, figsize, layout=None if fit else "constrained")


def _fitted(fig: Figure, ax: Axes, own: bool) -> Figure:
    return style.fit(fig, ax, below=getattr(fig, "_headstats_key", None)) if own else fig


def _size(aspect: float = 0.62) -> tuple[float, float]:
    """A one-axes figure at the preset's printed width (at most 6.5 in wide: a wider line plot says no more)."""
    width = min(style.figure_width(), 6.5)
    return width, max(2.4, aspect * width)


def _legend(ax: Axes, n: int, **kwargs) -> None:
    """A legend beside the axes on a wide figure, under the figure on a narrow one (column width: the figure
    grows by its rows, and :func:`headstats.plots.style.fit` puts the axes above it), at the smallest font;
    ``kwargs`` go to ``ax.legend``."""
    fig = ax.figure
    width, height = fig.get_size_inches()
    if width >= 5.0:
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  ncol=1 + n // 12, fontsize=style.MIN_FONT, **kwargs)
        return
    ncol = min(3, max(n, 1))
    rows = -(-max(n, 1) // ncol)
    fig.set_size_inches(width, height + rows * style.text_size("lp", style.MIN_FONT)[1] * 1.25)
    handles, labels = ax.get_legend_handles_labels()
    fig._headstats_key = fig.legend(handles, labels, frameon=False, loc="lower center", borderaxespad=0.0,
                                    bbox_to_anchor=(0.5, style.PAD / fig.get_size_inches()[1]), ncol=ncol,
                                    fontsize=style.MIN_FONT, columnspacing=0.8, handlelength=1.2, **kwargs)


def _require(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{what} needs column(s) {', '.join(missing)}; got {', '.join(map(str, table.columns))}")


def _one(table: pd.DataFrame, column: str, value: object | None, what: str) -> tuple[pd.DataFrame, object]:
    """Rows with ``column == value``; when value is None the table must hold a single value."""
    values = pd.unique(table[column])
    if value is None:
        if len(values) > 1:
            held = ", ".join(map(str, values))
            raise ValueError(f"{what}: the table holds several {column}s ({held}); pass {column}=")
        value = values[0] if len(values) else None
    return table.loc[table[column] == value], value


@style.styled
def plot_tau_sensitivity(
    sensitivity: pd.DataFrame,
    *,
    alpha: float | None = None,
    model: str | None = None,
    dataset: str | None = None,
    share: bool = False,
    tau_used: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Heads assigned per role against tau, one line per role.

    Parameters
    ----------
    sensitivity : pandas.DataFrame
        The table of :func:`headstats.stats.sensitivity.tau_sensitivity`.
    alpha : float, optional
        Which alpha to draw (default 0.05 if present, else the middle one).
    model, dataset : str, optional
        Needed when the table holds several.
    share : bool
        Plot ``n_heads_assigned / n_heads_tested`` instead of the count.
    tau_used : float, optional
        Mark the tau of the study with a vertical line.
    ax : matplotlib.axes.Axes, optional
        Draw here; otherwise a new Figure is made.
    """
    _require(sensitivity, ["model", "dataset", "role", "tau", "alpha", "n_heads_assigned", "n_heads_tested"],
             "plot_tau_sensitivity")
    table, model = _one(sensitivity, "model", model, "plot_tau_sensitivity")
    table, dataset = _one(table, "dataset", dataset, "plot_tau_sensitivity")
    alphas = np.sort(pd.unique(table["alpha"]))
    if alpha is None and len(alphas):
        alpha = 0.05 if np.isclose(alphas, 0.05).any() else float(alphas[len(alphas) // 2])
    table = table.loc[np.isclose(table["alpha"], alpha)] if alpha is not None else table
    own = ax is None
    fig, ax = _axes(ax, _size(), fit=True)
    colours = style.role_colours(style.order_roles(table["role"]))
    for role in style.order_roles(table["role"]):
        rows = table.loc[table["role"] == role].sort_values("tau")
        y = rows["n_heads_assigned"].to_numpy(float)
        if share:
            y = y / np.maximum(rows["n_heads_tested"].to_numpy(float), 1)
        ax.plot(rows["tau"], y, marker="o", ms=3, color=colours[role], label=str(role))
    if tau_used is not None:
        ax.axvline(tau_used, color="#444", ls="--", lw=0.8)
    ax.set_xlabel("tau (threshold of the sieve bias score)")
    ax.set_ylabel("share of heads assigned" if share else "heads assigned")
    where = f"{model}, {dataset}" + (f", alpha={alpha:g}" if alpha is not None else "")
    ax.set_title(style.fitted_title(f"role counts vs tau ({where})", 8, fig.get_size_inches()[0] - 0.6))
    if len(table):
        # outside the axes: inside, the legend hides the lines at low tau, where the counts are largest
        _legend(ax, len(pd.unique(table["role"])))
    ax.grid(alpha=0.3)
    return _fitted(fig, ax, own)


#: Smallest p-value drawn on the log axis of :func:`plot_pvalue_ecdf`; smaller ones (and 0) are drawn there
#: (tail areas that small are beyond what the tests' approximations mean; the ECDF still counts them).
P_FLOOR = 1e-20


def rejection_threshold(tests: pd.DataFrame) -> float | None:
    """The uncorrected p-value below which the table's correction rejected: the largest ``p_unc`` of a
    rejected hypothesis (None when nothing was rejected). Read off the table, not recomputed."""
    if "reject" not in tests.columns:
        return None
    rejected = tests.loc[tests["reject"].fillna(False).astype(bool), "p_unc"].to_numpy(float)
    rejected = rejected[np.isfinite(rejected)]
    return float(rejected.max()) if rejected.size else None


@style.styled
def plot_pvalue_ecdf(
    tests: pd.DataFrame,
    *,
    column: str = "p_unc",
    alpha: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The whole distribution of a tests table's p-values: their empirical CDF per role on a log axis.

    A p-value histogram on [0, 1] shows one bar at 1 and one near 0 when heads are either far above or far
    below tau; on a log axis every p-value has its place. The y value at x is the share of a role's
    hypotheses with p <= x; uniform p-values (H0 at its boundary) follow the dotted line y = x. Vertical
    lines: alpha (dashed) and the uncorrected p below which the correction rejected (solid,
    :func:`rejection_threshold`). p-values below :data:`P_FLOOR` (0 included, underflow) are counted at it
    (the axis' left end is labelled ``<= 1e-20``).

    Parameters
    ----------
    tests : pandas.DataFrame
        The table of :func:`headstats.stats.onesample.test_roles` (``role``, the p-value ``column``, ``reject``).
    column : {"p_unc", "p_corr"}
        Which p-values.
    alpha : float, optional
        Mark alpha (default: the table's ``alpha``).
    """
    _require(tests, [column, "role"], "plot_pvalue_ecdf")
    own = ax is None
    fig, ax = _axes(ax, _size(), fit=True)
    values = tests[column].to_numpy(float)
    finite = tests.loc[np.isfinite(values)]
    roles = style.order_roles(finite["role"].astype(str))
    colours = style.role_colours(roles)
    p_all = np.clip(finite[column].to_numpy(float), P_FLOOR, 1.0)
    low = min(max(P_FLOOR, float(p_all.min()) / 2) if p_all.size else 1e-6, 1e-3)
    for role in roles:
        p = np.sort(np.clip(finite.loc[finite["role"].astype(str) == role, column].to_numpy(float), P_FLOOR, 1.0))
        y = np.arange(1, p.size + 1) / p.size
        ax.step(np.r_[low, p, 1.0], np.r_[0.0, y, 1.0], where="post", color=colours[role], lw=1.1, label=role)
    grid = np.logspace(np.log10(low), 0, 200)
    ax.plot(grid, grid, color=style.GRID, ls=":", lw=0.9, label="uniform")
    if alpha is None and "alpha" in tests.columns and len(tests):
        alpha = float(tests["alpha"].iloc[0])
    if alpha is not None:
        ax.axvline(alpha, color=style.OKABE_ITO["vermillion"], ls="--", lw=0.8, label=f"alpha = {alpha:g}")
    threshold = rejection_threshold(tests) if column == "p_unc" else None
    if threshold is not None:
        ax.axvline(max(threshold, low), color=style.OKABE_ITO["black"], lw=0.8, label="rejected below")
    ax.set_xscale("log")
    ax.set_xlim(low, 1.0)
    # plain labels (1e-06): mathtext's 10^-6 sets its exponent at 70 % of the font, below 7 pt in print
    ax.xaxis.set_major_locator(LogLocator(numticks=6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "1" if v == 1 else f"{v:.0e}".replace("e-0", "e-")))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if p_all.size and float(p_all.min()) <= P_FLOOR:
        ax.annotate(f"<= {P_FLOOR:.0e}", (0, 0), xycoords="axes fraction", xytext=(2, 3), textcoords="offset points",
                    fontsize=style.MIN_FONT, color="#444")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(("corrected" if column == "p_corr" else "uncorrected") + " p-value (log scale)")
    ax.set_ylabel("share with p <= x")
    n_nan = len(tests) - len(finite)
    ax.set_title(f"p-values ({len(finite)} tested" + (f", {n_nan} without a p-value)" if n_nan else ")"))
    ax.grid(alpha=0.3)
    _legend(ax, len(roles) + 2 + (threshold is not None))
    return _fitted(fig, ax, own)


@style.styled
def plot_mde(
    tests: pd.DataFrame,
    *,
    effect_of_interest: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Power: the smallest effect each head's test could detect (``mde``, standardised, at the test's power
    target and corrected level), one point per head, by role; the dashed line is the effect of interest.

    Heads whose point sits above the line had too little power to detect an effect of that size: not being
    assigned says little about them. Points of heads assigned are filled, the others hollow. With several data
    sets (or models), each has its own marker and place within the role's column, named in the legend: the
    smallest detectable effect falls with N, so each data set forms a band of its own.
    """
    _require(tests, ["role", "mde", "reject"], "plot_mde")
    own = ax is None
    fig, ax = _axes(ax, _size(0.55), fit=True)
    roles = style.order_roles(map(str, pd.unique(tests["role"])))
    colours = style.role_colours(roles)
    keys = [c for c in ("model", "dataset") if c in tests.columns and tests[c].nunique() > 1]
    label = tests[keys].astype(str).agg(" / ".join, axis=1) if keys else pd.Series("", index=tests.index)
    sets = list(pd.unique(label))
    markers = dict(zip(sets, "o^sDvP<>*X" * (len(sets) // 10 + 1)))
    width = 0.7 / len(sets)  # each set's share of the role's column
    for i, role in enumerate(roles):
        for j, name in enumerate(sets):
            rows = tests.loc[(tests["role"].astype(str) == role) & tests["mde"].notna() & (label == name)]
            x = i + (j - (len(sets) - 1) / 2) * width + (np.arange(len(rows)) % 9 - 4) * width / 10
            held = rows["reject"].fillna(False).astype(bool).to_numpy()
            y = rows["mde"].to_numpy(float)
            ax.scatter(x[held], y[held], s=9, color=colours[role], lw=0, marker=markers[name])
            ax.scatter(x[~held], y[~held], s=9, facecolors="none", edgecolors=colours[role], lw=0.6,
                       marker=markers[name])
    if len(sets) > 1:
        for name in sets:  # legend entries only: the markers in grey, as the roles' colours vary
            ax.plot([], [], ls="none", marker=markers[name], color="#444", markersize=4, label=name)
        title = " / ".join("data set" if key == "dataset" else key for key in keys)
        _legend(ax, len(sets), title=f"{title} (left to right)", title_fontsize=style.MIN_FONT)
    if effect_of_interest is None and "effect_of_interest" in tests.columns and tests["effect_of_interest"].notna().any():
        effect_of_interest = float(tests["effect_of_interest"].dropna().iloc[0])
    if effect_of_interest is not None:
        ax.axhline(effect_of_interest, color="#444", ls="--", lw=0.8)
    ax.set_xticks(range(len(roles)), roles, rotation=35, ha="right")
    ax.set_xlim(-0.6, len(roles) - 0.4)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("smallest detectable effect d")
    ax.set_title(style.fitted_title("power: smallest detectable effect per head" + (
        f" (dashed: d = {effect_of_interest:g})" if effect_of_interest is not None else ""), 8,
        fig.get_size_inches()[0] - 0.7))
    ax.grid(alpha=0.3, axis="y")
    return _fitted(fig, ax, own)
