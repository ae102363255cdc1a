"""Figures of the statistics: tau sensitivity, p-value histograms, power and effect views.

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

from headstats.plots import style

#: Series colours (Okabe-Ito); roles take their fixed colours from :func:`headstats.plots.style.role_colours`.
_COLOURS = style.SERIES


def _axes(ax: Axes | None, figsize: tuple[float, float], *, fit: bool = False) -> tuple[Figure, Axes]:
    """The axes to draw on: ``ax``, or the axes of a new figure (laid out by constrained layout, or by
    :func:`headstats.plots.style.fit` once drawn when ``fit``)."""
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout=None if fit else "constrained")
    return fig, fig.add_subplot()


def _fitted(fig: Figure, ax: Axes, own: bool) -> Figure:
    return style.fit(fig, ax) if own else fig


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
    fig, ax = _axes(ax, (6.5, 4.0), fit=True)
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
    ax.set_title(f"role counts vs tau ({where})")
    if len(table):
        # beside the axes: inside, the legend hides the lines at low tau, where the counts are largest
        ax.legend(fontsize="small", frameon=False, ncol=1 + len(pd.unique(table["role"])) // 12,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.grid(alpha=0.3)
    return _fitted(fig, ax, own)


@style.styled
def plot_pvalue_histogram(
    tests: pd.DataFrame,
    *,
    column: str = "p_unc",
    bins: int = 20,
    by_role: bool = True,
    alpha: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Histogram of the p-values of a tests table, stacked by role.

    Under H0 at the boundary (mean = tau) uncorrected p-values are uniform; a spike near 0 means heads with
    the role, a pile near 1 means heads far below tau (the null is composite).

    Parameters
    ----------
    tests : pandas.DataFrame
        The table of :func:`headstats.stats.onesample.test_roles`.
    column : {"p_unc", "p_corr"}
        Which p-values.
    bins : int
        Equal-width bins on [0, 1].
    by_role : bool
        Stack one colour per role.
    alpha : float, optional
        Mark alpha with a vertical line (default: the table's ``alpha`` when ``column="p_corr"``).
    """
    _require(tests, [column, "role"], "plot_pvalue_histogram")
    own = ax is None
    fig, ax = _axes(ax, (6.0, 3.8), fit=True)
    edges = np.linspace(0, 1, bins + 1)
    finite = tests.loc[np.isfinite(tests[column].to_numpy(float))]
    if by_role and len(finite):
        order = style.order_roles(finite["role"].astype(str))
        colours = style.role_colours(order)
        # stacked: one filled outline per role on top of the roles before it (what ax.hist(stacked=True) draws,
        # as 1 shape per role instead of 1 bar per role and bin)
        below = np.zeros(bins)
        for role in order:
            counts = np.histogram(finite.loc[finite["role"].astype(str) == role, column].to_numpy(float), edges)[0]
            ax.stairs(below + counts, edges, baseline=below.copy(), fill=True, color=colours[role], label=role)
            below = below + counts
        # beside the axes: loc="best" over hundreds of bars is slow (seconds) and still covers some of them
        ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.stairs(np.histogram(finite[column].to_numpy(float), edges)[0], edges, fill=True, color=_COLOURS[0])
    if alpha is None and column == "p_corr" and "alpha" in tests.columns and len(tests):
        alpha = float(tests["alpha"].iloc[0])
    if alpha is not None:
        ax.axvline(alpha, color=style.OKABE_ITO["vermillion"], ls="--", lw=0.8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("corrected p-value" if column == "p_corr" else "uncorrected p-value")
    ax.set_ylabel("hypotheses (heads x roles)")
    n_nan = len(tests) - len(finite)
    ax.set_title(f"p-values ({len(finite)} tested" + (f", {n_nan} without a p-value)" if n_nan else ")"))
    return _fitted(fig, ax, own)


@style.styled
def plot_power(
    tests: pd.DataFrame,
    *,
    role: str | None = None,
    power_target: float = 0.8,
    ax: Axes | None = None,
) -> Figure:
    """Power at the observed effect against the standardised effect, coloured by assignment.

    The points are the heads of a tests table (optionally one role); x is ``(mean - tau) / sd``, y the
    ``power`` column. Heads not assigned with power below ``power_target`` (hollow) are the ones whose
    non-assignment may just mean too few inputs.
    """
    _require(tests, ["mean", "sd", "tau", "power", "reject", "role"], "plot_power")
    table = tests if role is None else tests.loc[tests["role"] == role]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = ((table["mean"] - table["tau"]) / table["sd"]).to_numpy(float)
    power = table["power"].to_numpy(float)
    rej = table["reject"].to_numpy(bool)
    ok = np.isfinite(d) & np.isfinite(power)
    fig, ax = _axes(ax, (6.0, 4.0))
    ax.scatter(d[ok & rej], power[ok & rej], s=14, color=style.OKABE_ITO["bluish_green"], label="assigned")
    low = ok & ~rej & (power < power_target)
    ax.scatter(d[low], power[low], s=14, facecolors="none", edgecolors=style.OKABE_ITO["vermillion"],
               label=f"not assigned, power < {power_target:g}")
    rest = ok & ~rej & ~low
    ax.scatter(d[rest], power[rest], s=14, color=style.DARK_GREY, label="not assigned")
    ax.axhline(power_target, color="#444", ls="--", lw=0.8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("effect (mean - tau) / sd")
    ax.set_ylabel("power at the observed effect")
    ax.set_title("power per head" + (f" ({role})" if role else ""))
    ax.legend(fontsize="small", frameon=False, loc="lower right")  # power rises with the effect: empty there
    ax.grid(alpha=0.3)
    return fig


@style.styled
def plot_n_for_power(
    tests: pd.DataFrame,
    *,
    power_target: float = 0.8,
    ax: Axes | None = None,
) -> Figure:
    """Inputs needed for ``power_target`` (``n_for_power``) per role, for heads not assigned, log scale.

    Each point is a head not assigned with its mean above tau; the dashed marks are the inputs the study
    had (median ``n`` per role).
    """
    _require(tests, ["role", "n", "n_for_power", "reject", "mean", "tau"], "plot_n_for_power")
    fig, ax = _axes(ax, (6.5, 4.0))
    roles = style.order_roles(map(str, pd.unique(tests["role"])))
    colours = style.role_colours(roles)
    for i, role in enumerate(roles):
        rows = tests.loc[tests["role"].astype(str) == role]
        sel = rows.loc[~rows["reject"].astype(bool) & (rows["mean"] > rows["tau"]) & rows["n_for_power"].notna()]
        jitter = (np.arange(len(sel)) % 7 - 3) * 0.04
        ax.scatter(i + jitter, sel["n_for_power"], s=12, color=colours[role])
        if len(rows):
            ax.hlines(float(rows["n"].median()), i - 0.35, i + 0.35, color="#444", ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xticks(range(len(roles)), roles, rotation=30, ha="right")
    ax.set_ylabel(f"inputs needed for power {power_target:g}")
    ax.set_title("not assigned, mean above tau: inputs needed (dashes: inputs used)")
    ax.grid(alpha=0.3, axis="y")
    return fig


@style.styled
def plot_effect_grid(
    tests: pd.DataFrame,
    *,
    role: str,
    value: str = "effect_size",
    model: str | None = None,
    dataset: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Layer x head heat map of one column (default ``effect_size``) for one role; assigned heads dotted."""
    _require(tests, ["role", "layer", "head", value, "reject", "model", "dataset"], "plot_effect_grid")
    table = tests.loc[tests["role"] == role]
    table, model = _one(table, "model", model, "plot_effect_grid")
    table, dataset = _one(table, "dataset", dataset, "plot_effect_grid")
    fig, ax = _axes(ax, (6.5, 4.0))
    if len(table) == 0:
        ax.set_title(f"no heads for role {role!r}")
        return fig
    n_layers = int(table["layer"].max()) + 1
    n_heads = int(table["head"].max()) + 1
    grid = np.full((n_layers, n_heads), np.nan)
    grid[table["layer"].to_numpy(int), table["head"].to_numpy(int)] = table[value].to_numpy(float)
    finite = grid[np.isfinite(grid)]
    lim = float(np.max(np.abs(finite))) if finite.size else 1.0
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    assigned = table.loc[table["reject"].astype(bool)]
    ax.scatter(assigned["head"], assigned["layer"], s=10, color="k", label="assigned")
    ax.set_xticks(range(n_heads))
    ax.set_yticks(range(n_layers))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    kind = ""
    if value == "effect_size" and "effect_size_type" in table.columns and len(table):
        kind = f" ({table['effect_size_type'].iloc[0]})"
    ax.set_title(f"{value}{kind}: {role}")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig
