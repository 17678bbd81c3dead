"""dg.sparse_hessian(coloring=...) and dg.sparse_jacobian(mode="bidirectional") (issue 39):
each coloring gives the dense derivative's values, with the colors it promises."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg

METHODS = ("auto", "distance2", "star", "acyclic")


def hub_and_chain(x):
    """An arrowhead plus a chain: a distance-2 coloring needs n colors, a star one 3 or 4,
    an acyclic one 3."""
    return np.sum(x ** 3) * np.cos(x[0]) + np.sum(x[1:] * np.sin(x[:-1]))


def grid_energy(u, side):
    """A 5-point stencil Hessian (5 colors direct, fewer by substitution)."""
    g = u.reshape(side, side)
    return np.sum((g[1:] - g[:-1]) ** 2) + np.sum(np.cosh(g[:, 1:] - g[:, :-1])) \
        + np.sum(u ** 4)


def reversed_product(x):
    """Zeros on the Hessian's diagonal (an anti-diagonal pattern): the distance-2 coloring
    gives adjacent columns one color, which only direct recovery allows ("acyclic" once
    refused its own best coloring)."""
    return np.sum(x * x[::-1])


PROGRAMS = [(hub_and_chain, lambda rng: (rng.standard_normal(16),)),
            (grid_energy, lambda rng: (rng.standard_normal(49), 7)),
            (reversed_product, lambda rng: (rng.standard_normal(8),))]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("program", range(len(PROGRAMS)))
def test_sparse_hessian_equals_the_dense_hessian_with_every_coloring(program, method):
    f, make = PROGRAMS[program]
    args = make(np.random.default_rng(program))
    dense = dg.hessian(f)(*args)
    hess = dg.sparse_hessian(f, coloring=method)
    np.testing.assert_allclose(hess(*args).toarray(), dense, rtol=1e-12, atol=1e-12)
    # inside a trace: decompression (a substitution for "acyclic") in the compiled program
    inside = dg.jit(lambda *a: hess(*a).toarray())(*args)
    np.testing.assert_allclose(inside, dense, rtol=1e-12, atol=1e-12)


def test_hessian_colorings_use_the_colors_they_promise():
    x = np.random.default_rng(0).standard_normal(16)
    counts = {m: int(dg.sparse_hessian(hub_and_chain, coloring=m).coloring(x).max()) + 1
              for m in METHODS}
    assert counts == {"distance2": 16, "auto": counts["star"], "star": counts["star"],
                      "acyclic": 3}
    assert counts["star"] <= 4


def test_coloring_is_part_of_the_cache_key_and_checked():
    x = np.ones(16)
    star = dg.sparse_hessian(hub_and_chain, coloring="star")
    acyclic = dg.sparse_hessian(hub_and_chain, coloring="acyclic")
    assert star.coloring(x).max() > acyclic.coloring(x).max()
    with pytest.raises(dg.DualgpuError, match="coloring must be one of .*got 'greedy'"):
        dg.sparse_hessian(hub_and_chain, coloring="greedy")
    with pytest.raises(dg.DualgpuError, match="coloring must be one of .*got array"):
        dg.sparse_hessian(hub_and_chain, coloring=np.arange(16))


# ------------------------------------------------------------------ bicoloring
def arrowhead(x):
    """One dense row (the first output), one dense column (x[0] in every output), the
    diagonal: n JVPs or n VJPs, or 2 JVPs and 1 VJP."""
    return np.concatenate([[np.sum(x ** 2)], x[1:] ** 3 + np.sin(x[0]) * x[1:]])


@pytest.mark.parametrize("mode", ["bidirectional", "auto"])
def test_arrowhead_jacobian_with_three_products(mode):
    x = np.random.default_rng(3).standard_normal(24)
    jac = dg.sparse_jacobian(arrowhead, mode=mode)
    dense = dg.jacobian(arrowhead)(x)
    np.testing.assert_allclose(jac(x).toarray(), dense, rtol=1e-13, atol=1e-13)
    columns, rows = jac.coloring(x)
    assert (columns.max() + 1, rows.max() + 1) == (2, 1)
    inside = dg.jit(lambda y: jac(y).toarray())(x)
    np.testing.assert_allclose(inside, dense, rtol=1e-13, atol=1e-13)
    assert dg.sparse_jacobian(arrowhead, mode="fwd").coloring(x).max() + 1 == 24
