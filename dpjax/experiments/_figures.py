"""The finishing touches every figure of :mod:`dpjax.experiments` gives its panels, written once."""
from __future__ import annotations


def label_axes(ax, xlabel: str, ylabel: str, title: str, *, log: str = "", title_size: float = 10, grid: bool = True,
               legend_size: float = 0) -> None:
    """Label a panel: log scale on the axes named in ``log`` ("x", "y", "xy"), the labels, the
    title at ``title_size`` points, a light grid on major and minor ticks, and a legend at
    ``legend_size`` points (0: none)."""
    if "x" in log:
        ax.set_xscale("log")
    if "y" in log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=title_size)
    if grid:
        ax.grid(True, which="both", alpha=0.3)
    if legend_size:
        ax.legend(fontsize=legend_size)


def finish_figure(fig, title: str):
    """The figure's title (10 points) and a tight layout; returns the figure."""
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
