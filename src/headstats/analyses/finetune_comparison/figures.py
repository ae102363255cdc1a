"""Figures of a pretrained-vs-fine-tuned comparison.

Tables of the comparison's finish step (:mod:`headstats.analyses.finetune_comparison.finish`) in,
``matplotlib.figure.Figure`` out (object-oriented API, headless, no ``plt.show``): the change map (layer x head),
heads per role per layer before and after (the paper's figure), the per-head cosine similarity of the two models'
attention maps, and the attention mass on [CLS] and [SEP] per layer before and after. Every function that draws
one panel takes ``ax=``; nothing here computes a statistic.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from collections.abc import Sequence  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from headstats.plots import style  # noqa: E402

CHANGE_VALUES = ("median_diff", "estimate", "effect_size", "neglog10p")


def _select(frame: pd.DataFrame, **conditions: object) -> pd.DataFrame:
    for col, value in conditions.items():
        if value is not None and col in frame.columns:
            frame = frame[frame[col] == value]
    return frame


def _only(frame: pd.DataFrame, col: str, what: str) -> object:
    values = list(dict.fromkeys(frame[col]))
    if len(values) != 1:
        raise ValueError(f"the table holds {len(values)} values of {col} ({values[:4]}); choose one with {what}=")
    return values[0]


def _grid(frame: pd.DataFrame, value: str) -> np.ndarray:
    n_layers, n_heads = int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1
    grid = np.full((n_layers, n_heads), np.nan)
    grid[frame["layer"].to_numpy(int), frame["head"].to_numpy(int)] = frame[value].to_numpy(float)
    return grid


def _heat_axes(ax: Axes, grid: np.ndarray) -> None:
    n_layers, n_heads = grid.shape
    ax.set_xticks(np.arange(n_heads), [str(h) for h in range(n_heads)])
    ax.set_yticks(np.arange(n_layers), [str(layer) for layer in range(n_layers)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")


def _estimate_label(part: pd.DataFrame) -> str:
    """The colour bar's name of the tested estimate, after the test when the table says which."""
    tests = set(part["test"].astype(str)) if "test" in part else set()
    name = {"wilcoxon": "Hodges-Lehmann estimate of the change", "t": "mean change (after - before)"}
    return name[next(iter(tests))] if len(tests) == 1 and next(iter(tests)) in name else "estimate of the change"


@style.styled
def change_map(
    paired: pd.DataFrame,
    *,
    role: str,
    dataset: str | None = None,
    model_after: str | None = None,
    value: str = "estimate",
    ax: Axes | None = None,
) -> Figure:
    """Layer x head heat map of one role's change, with significant heads marked.

    Parameters
    ----------
    paired : DataFrame
        :func:`headstats.stats.paired.paired_tests` output (``layer, head, role, reject`` and ``value``).
    role, dataset, model_after : str
        Which hypotheses to draw (``dataset``/``model_after`` may be omitted when the table holds one).
    value : {"median_diff", "estimate", "effect_size", "neglog10p"}
        The colour: the tested estimate (default: the quantity the stars are a test of -- the
        Hodges-Lehmann estimate for ``wilcoxon``, the mean difference for ``t``; diverging around 0), the
        median of ``after - before``, the effect size, or ``-log10 p_corr`` (signed by the estimate).
    ax : Axes, optional
        Draw into this axes; otherwise a new Figure.

    Markers: ``*`` where ``reject`` (``p_corr <= alpha``, the package's decision); cells without a test are blank.
    """
    if value not in CHANGE_VALUES:
        raise ValueError(f"value must be one of {', '.join(CHANGE_VALUES)}, not {value!r}")
    part = _select(paired, role=role, dataset=dataset, model_after=model_after)
    if part.empty:
        raise ValueError(f"no paired tests for role {role!r} (dataset {dataset!r}, model {model_after!r})")
    dataset = dataset or str(_only(part, "dataset", "dataset"))
    model_after = model_after or str(_only(part, "model_after", "model_after"))
    if value == "neglog10p":
        with np.errstate(divide="ignore", invalid="ignore"):
            p = part["p_corr"].to_numpy(float)
            part = part.assign(neglog10p=-np.log10(np.clip(p, 1e-300, 1)) * np.sign(part["estimate"]))
    grid = _grid(part, value)
    fig, ax = style.axes_for(ax, (max(5.0, 0.45 * grid.shape[1] + 2.5), max(3.0, 0.4 * grid.shape[0] + 1.5)))
    finite = grid[np.isfinite(grid)]
    lim = float(np.max(np.abs(finite))) if finite.size and np.max(np.abs(finite)) > 0 else 1.0
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
    sig = part[part["reject"].astype(bool)]
    ax.scatter(sig["head"], sig["layer"], marker="*", s=60, c="k", label="p_corr <= alpha")
    _heat_axes(ax, grid)
    label = {"median_diff": "median change (after - before)", "estimate": _estimate_label(part),
             "effect_size": "effect size", "neglog10p": "signed -log10 p_corr"}[value]
    fig.colorbar(image, ax=ax, label=label)
    ax.set_title(f"{role}: {model_after} vs {part['model_before'].iloc[0]} on {dataset}", fontsize=10)
    if len(sig):
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.12), fontsize=8, frameon=False)
    return fig


@style.styled
def heads_per_layer_before_after(
    heads_per_layer: pd.DataFrame,
    *,
    dataset: str | None = None,
    model_after: str | None = None,
    roles: Sequence[str] | None = None,
    ncols: int = 3,
) -> Figure:
    """Heads per role per layer, before and after fine-tuning: one panel per role (the paper's figure).

    Parameters
    ----------
    heads_per_layer : DataFrame
        :func:`.finish.changes.heads_per_role_per_layer_by_stage` output (``model, stage, dataset, layer, role,
        n_heads``); ``stage`` is ``before`` or ``after``.
    dataset, model_after : str, optional
        Which data set and fine-tuned model (may be omitted when the table holds one).
    roles : sequence of str, optional
        Roles to draw (default all).
    """
    part = _select(heads_per_layer, dataset=dataset)
    if part.empty:
        raise ValueError(f"no rows for dataset {dataset!r}")
    after = part[part["stage"] == "after"]
    if model_after is None and len(after):
        model_after = str(_only(after, "model", "model_after"))
    part = part[(part["stage"] == "before") | (part["model"] == model_after)]
    roles = list(roles) if roles is not None else list(dict.fromkeys(part["role"]))
    ncols = max(1, min(ncols, len(roles)))
    nrows = int(np.ceil(len(roles) / ncols))
    fig = Figure(figsize=(3.4 * ncols, 2.6 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True)
    for k, role in enumerate(roles):
        ax = axes[k // ncols][k % ncols]
        for stage, look in (("before", dict(color=style.DARK_GREY, marker="o", ls="-")),
                            ("after", dict(color=style.OKABE_ITO["vermillion"], marker="s", ls="--"))):
            line = part[(part["role"] == role) & (part["stage"] == stage)].sort_values("layer")
            if len(line):
                ax.plot(line["layer"], line["n_heads"], label=f"{stage} ({line['model'].iloc[0]})", **look)
        ax.set_title(role, fontsize=9)
        top = part.loc[part["role"] == role, "n_heads"].max()
        ax.set_ylim(0, max(1.0, float(top) * 1.05 if pd.notna(top) else 1.0))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if k % ncols == 0:
            ax.set_ylabel("heads")
        if k // ncols == nrows - 1:
            ax.set_xlabel("layer")
    for k in range(len(roles), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


@style.styled
def similarity_map(
    similarity: pd.DataFrame, *, dataset: str | None = None, model_b: str | None = None, ax: Axes | None = None
) -> Figure:
    """Layer x head heat map of the mean cosine similarity of the two models' attention maps (Kovaleva et al.).

    Parameters
    ----------
    similarity : DataFrame
        the ``similarity`` table of :class:`..collect.AttentionSimilarity` (``layer, head, cosine_mean``).
    """
    part = _select(similarity, dataset=dataset, model_b=model_b)
    if part.empty:
        raise ValueError(f"no similarity rows for dataset {dataset!r}, model {model_b!r}")
    dataset = dataset or str(_only(part, "dataset", "dataset"))
    model_b = model_b or str(_only(part, "model_b", "model_b"))
    grid = _grid(part, "cosine_mean")
    fig, ax = style.axes_for(ax, (max(5.0, 0.45 * grid.shape[1] + 2.5), max(3.0, 0.4 * grid.shape[0] + 1.5)))
    low = float(np.nanmin(grid)) if np.isfinite(grid).any() else 0.0
    image = ax.imshow(grid, cmap="viridis", vmin=min(low, 0.99), vmax=1.0, aspect="auto")
    for (layer, head), v in np.ndenumerate(grid):
        if np.isfinite(v) and grid.size <= 400:
            ax.text(head, layer, f"{v:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if v < (low + 1) / 2 else "black")
    _heat_axes(ax, grid)
    fig.colorbar(image, ax=ax, label="mean cosine similarity")
    ax.set_title(f"attention maps: {model_b} vs {part['model_a'].iloc[0]} on {dataset}", fontsize=10)
    return fig


@style.styled
def special_mass_plot(
    per_layer: pd.DataFrame,
    *,
    dataset: str | None = None,
    models: Sequence[str] | None = None,
    targets: Sequence[str] = ("cls", "sep"),
    ax: Axes | None = None,
) -> Figure:
    """Attention mass on [CLS] and [SEP] per layer, one line per model and target.

    Parameters
    ----------
    per_layer : DataFrame
        :func:`.finish.changes.special_mass_per_layer` output (``model, dataset, layer, target, mass``).
    models : sequence of str, optional
        Models in drawing order (first solid grey = before); default: all, in table order.
    """
    part = _select(per_layer, dataset=dataset)
    if part.empty:
        raise ValueError(f"no special-mass rows for dataset {dataset!r}")
    dataset = dataset or str(_only(part, "dataset", "dataset"))
    models = list(models) if models is not None else list(dict.fromkeys(part["model"]))
    fig, ax = style.axes_for(ax, (6.5, 3.8))
    colours = {"cls": style.OKABE_ITO["blue"], "sep": style.OKABE_ITO["vermillion"],
               "other": style.OKABE_ITO["bluish_green"]}
    names = {"cls": "[CLS]", "sep": "[SEP]", "other": "other tokens"}
    styles = ["-", "--", ":", "-."]
    for m, model in enumerate(models):
        for target in targets:
            line = part[(part["model"] == model) & (part["target"] == target)].sort_values("layer")
            if len(line):
                ax.plot(line["layer"], line["mass"], ls=styles[m % len(styles)], marker="o", ms=3,
                        color=colours.get(target, "k"), label=f"{names.get(target, target)}: {model}")
    ax.set_xlabel("layer")
    ax.set_ylabel("mean attention mass")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(f"attention to special tokens per layer on {dataset}", fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="best")
    return fig
