import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.plotting import ema, plot_bleu_by_length, plot_heatmap, plot_losses  # noqa: E402
from course_lib.train import History  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_ema():
    assert ema([1.0, 1.0, 1.0], 0.9) == pytest.approx([1.0, 1.0, 1.0])  # bias-corrected
    assert ema([1.0, 3.0], 0.0) == pytest.approx([1.0, 3.0])


def test_plot_losses():
    history = History(step=[10, 20, 30], loss=[3.0, 2.0, 1.5])
    ax = plot_losses({"rnn": history, "transformer": [4.0, 2.0, 1.0, 0.5]}, smooth=0.0, log_y=True)
    lines = ax.get_lines()
    assert len(lines) == 2
    assert list(lines[0].get_xdata()) == [10, 20, 30] and list(lines[1].get_ydata()) == [4.0, 2.0, 1.0, 0.5]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["rnn", "transformer"]
    assert ax.get_xlabel() == "step" and ax.get_yscale() == "log"
    with pytest.raises(ValueError):
        plot_losses({"x": [1.0]}, smooth=1.0)


def test_plot_heatmap():
    weights = torch.softmax(torch.randn(3, 5), dim=-1)
    ax = plot_heatmap(weights, row_labels=["le", "chat", "<eos>"], col_labels=list("abcde"),
                      title="attention")
    assert len(ax.get_images()) == 1
    assert ax.get_images()[0].get_array().shape == (3, 5)
    assert [t.get_text() for t in ax.get_xticklabels()] == list("abcde")
    assert ax.get_xticklabels()[0].get_rotation() == 90
    assert [t.get_text() for t in ax.get_yticklabels()] == ["le", "chat", "<eos>"]
    assert ax.get_title() == "attention"
    assert len(ax.figure.axes) == 2  # the heatmap and its colorbar


def test_plot_heatmap_on_given_axes_without_colorbar():
    fig, axes = plt.subplots(1, 2)
    ax = plot_heatmap(np.eye(4), ax=axes[1], colorbar=False)
    assert ax is axes[1] and len(fig.axes) == 2
    with pytest.raises(ValueError):
        plot_heatmap(np.zeros((2, 2, 2)))


def test_plot_bleu_by_length():
    rows = lambda scores: [{"bucket": b, "n": 5, "bleu": s} for b, s in zip(["1–10", "11–20", "31+"], scores)]
    ax = plot_bleu_by_length({"rnn": rows([30.0, 20.0, None]), "attention": rows([35.0, 33.0, 30.0])})
    lines = ax.get_lines()
    assert len(lines) == 2
    assert np.isnan(lines[0].get_ydata()[2])  # empty bucket leaves a gap
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1–10", "11–20", "31+"]
    assert ax.get_ylabel() == "BLEU"
    with pytest.raises(ValueError):
        plot_bleu_by_length({"a": rows([1.0, 2.0, 3.0]), "b": rows([1.0, 2.0])})
