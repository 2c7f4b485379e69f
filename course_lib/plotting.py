"""Loss curves, attention heatmaps and BLEU-by-length plots for the notebooks.

Each function draws on ``ax`` (a new figure when None) and returns the Axes; none calls
``plt.show()`` (Jupyter shows the figure at the end of the cell).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes

from course_lib.train import History


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    return ax if ax is not None else plt.subplots(figsize=figsize)[1]


def ema(values: Sequence[float], smooth: float) -> np.ndarray:
    """Exponential moving average with weight ``smooth`` on the past, bias-corrected so the
    curve starts at the first value rather than at 0 (as TensorBoard's smoothing does)."""
    out, avg = np.empty(len(values)), 0.0
    for i, v in enumerate(values):
        avg = smooth * avg + (1 - smooth) * v
        out[i] = avg / (1 - smooth ** (i + 1))
    return out


def plot_losses(histories: Mapping[str, History | Sequence[float]], ax: Axes | None = None,
                smooth: float = 0.6, log_y: bool = False, title: str | None = "training loss") -> Axes:
    """One training-loss curve per entry of ``histories`` (a ``History`` or a list of losses).

    ``smooth`` in [0, 1) is the EMA weight (0 = raw curve); ``log_y`` uses a log scale, which shows
    late progress better when the loss spans orders of magnitude.
    """
    if not 0 <= smooth < 1:
        raise ValueError(f"smooth must be in [0, 1), got {smooth}")
    ax = _axes(ax, (6, 4))
    for name, h in histories.items():
        steps, losses = (h.step, h.loss) if isinstance(h, History) else (range(1, len(h) + 1), list(h))
        ax.plot(list(steps), ema(losses, smooth), label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    if log_y:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def plot_heatmap(matrix: torch.Tensor | np.ndarray, row_labels: Sequence[str] | None = None,
                 col_labels: Sequence[str] | None = None, ax: Axes | None = None, title: str | None = None,
                 cmap: str = "viridis", colorbar: bool = True) -> Axes:
    """Draw a ``(rows, cols)`` matrix, e.g. attention weights ``(T_q, T_k)`` with the query tokens
    as ``row_labels`` and the key tokens as ``col_labels`` (written vertically)."""
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().float().cpu().numpy()
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"plot_heatmap needs a 2-D matrix, got shape {matrix.shape}")
    rows, cols = matrix.shape
    # Grow the figure with the sentence so that every token label stays readable.
    ax = _axes(ax, (max(4.0, 0.3 * cols + 2), max(3.0, 0.3 * rows + 1.5)))
    image = ax.imshow(matrix, cmap=cmap, aspect="auto")
    if col_labels is not None:
        ax.set_xticks(range(cols), labels=list(col_labels), rotation=90)
    if row_labels is not None:
        ax.set_yticks(range(rows), labels=list(row_labels))
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return ax


def plot_bleu_by_length(results: Mapping[str, Sequence[dict]], ax: Axes | None = None,
                        title: str | None = "BLEU by source length") -> Axes:
    """One line per model over length buckets, from ``course_lib.bleu.bleu_by_length`` rows
    (``{"bucket", "n", "bleu"}``); an empty bucket (``bleu`` None) leaves a gap."""
    ax = _axes(ax, (6, 4))
    labels: list[str] = []
    for name, rows in results.items():
        labels = labels or [r["bucket"] for r in rows]
        if [r["bucket"] for r in rows] != labels:
            raise ValueError(f"{name!r} uses other buckets than the first model")
        scores = [math.nan if r["bleu"] is None else r["bleu"] for r in rows]
        ax.plot(range(len(rows)), scores, marker="o", label=name)
    ax.set_xticks(range(len(labels)), labels=labels)
    ax.set_xlabel("source length (tokens)")
    ax.set_ylabel("BLEU")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax
