"""Spy plots of sparsity patterns with their coloring (issue 26, pictures):
``dualgpu.api.spy_plot.spy`` (``dg.spy``) and ``.spy(*args)`` on the sparse transforms."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg
from dualgpu.api import spy_plot as sd


def energy(u, side):
    grid = u.reshape(side, side)
    return (np.sum((grid[1:] - grid[:-1]) ** 2) + np.sum((grid[:, 1:] - grid[:, :-1]) ** 2)
            + np.sum(grid ** 4))


def _pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def test_hessian_spy_renders_the_pattern_in_its_colors(tmp_path):
    plt = _pyplot()
    u = np.ones(36)
    ax = dg.hessian_sparsity(energy).spy(u, 6)
    pattern = dg.hessian_sparsity(energy)(u, 6).tocoo()
    colors = dg.sparse_hessian(energy).coloring(u, 6)
    drawn = ax.collections[0]
    points = {tuple(p) for p in drawn.get_offsets().astype(int).tolist()}
    assert points == set(zip(pattern.col.tolist(), pattern.row.tolist()))
    np.testing.assert_array_equal(np.asarray(drawn.get_array()), colors[pattern.col])
    path = tmp_path / "poisson_hessian.png"
    ax.figure.savefig(path)   # draws: the colors are mapped now
    assert len({tuple(c) for c in drawn.get_facecolors().tolist()}) == colors.max() + 1 == 5
    assert "5 colors" in ax.get_title()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plt.close(ax.figure)


def test_jacobian_rev_spy_colors_rows(tmp_path):
    plt = _pyplot()
    f = lambda x: np.stack([np.sum(x), x[0] * x[1]])   # noqa: E731  (a dense first row)
    jac = dg.sparse_jacobian(f, mode="rev")
    x = np.ones(5)
    ax = jac.spy(x)
    drawn = ax.collections[0]
    rows = drawn.get_offsets()[:, 1].astype(int)
    np.testing.assert_array_equal(np.asarray(drawn.get_array()), jac.coloring(x)[rows])
    ax.figure.savefig(tmp_path / "rev.png")
    plt.close(ax.figure)


def test_large_patterns_are_drawn_as_an_image(tmp_path, monkeypatch):
    plt = _pyplot()
    monkeypatch.setattr(sd, "SPY_MARKERS", 10)
    monkeypatch.setattr(sd, "SPY_PIXELS", 16)
    n = 64
    pattern = sp.diags([1, 1, 1], [-1, 0, 1], shape=(n, n), format="csr", dtype=bool)
    colors = np.arange(n) % 3
    ax = sd.spy(pattern, colors)
    image = ax.images[0].get_array()
    assert image.shape == (16, 16)
    assert image.mask[0, -1] and not image.mask[0, 0]   # far from the band: empty
    assert set(np.unique(image.compressed()).tolist()) <= {0, 1, 2}
    ax.figure.savefig(tmp_path / "band.png")
    plt.close(ax.figure)


def test_spy_without_matplotlib_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(sd.PlottingUnavailableError, match="pip install matplotlib") as info:
        dg.hessian_sparsity(energy).spy(np.ones(16), 4)
    assert isinstance(info.value, dg.DualgpuError) and isinstance(info.value, ImportError)
    # the extra it names exists and brings matplotlib
    from pathlib import Path

    import tomllib

    assert "pip install '.[plot]'" in str(info.value)
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("matplotlib") for req in extras["plot"])


def test_spy_rejects_a_coloring_of_the_wrong_length():
    pattern = sp.identity(4, format="csr", dtype=bool)
    with pytest.raises(dg.DualgpuError, match="one int per column"):
        sd.spy(pattern, np.zeros(3, dtype=int))
    with pytest.raises(dg.DualgpuError, match="one int per row"):
        sd.spy(pattern, np.zeros(5, dtype=int), rows=True)
