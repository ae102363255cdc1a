"""The figure of ``peak``: each head's mean peak by layer. Drawing only."""

from matplotlib.figure import Figure

from headstats.plots import style


@style.styled
def peak_by_layer(peak, *, title: str = "") -> Figure:
    fig = Figure(figsize=(3.5, 2.4))
    ax = fig.add_subplot()
    ax.scatter(peak["layer"], peak["peak"], s=12, color=style.SERIES[0])
    ax.set_xlabel("layer")
    ax.set_ylabel("mean row maximum")
    ax.set_title(title)
    return fig
