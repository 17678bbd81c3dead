"""The transpose of a slice (``scatter_add`` of a key of slices) read in the fused region
kernels straight from its input's memory, zero outside the slices (``padded_read``): the
plan, the emulated plan and the real CUDA text compiled for the host, against NumPy, over
fuzzed keys (starts, stops, negative and long steps, several axes, size-1 axes) and fuzzed
input layouts."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cupy_launcher import HOST_KERNELS, FakeBackend, HostProgram  # noqa: E402

import dualgpu as dg
from dualgpu.api.vectorize import vmap
from dualgpu.codegen.python import compile_python
from dualgpu.fusion import LibraryStep, emulate, padded_read, plan_graph


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _library_ops(plan) -> list:
    return [s.eqn.prim.name for s in plan.steps if isinstance(s, LibraryStep)]


def test_the_hvps_of_a_chained_rosenbrock_are_two_kernels():
    """Three directions at once (the compressed sparse Hessian): one kernel for the slices'
    values, one that reads the three transposed slices and sums them; no scatter left to
    the library (each was zeros and a copy there)."""
    x, seeds = np.linspace(-1, 1, 10), np.eye(3, 10)
    graph = dg.trace(lambda x, s: vmap(dg.hvp(rosenbrock), in_axes=(None, 0))(x, s), x, seeds)
    plan = plan_graph(graph)
    assert plan.kernel_count() == 2
    assert set(_library_ops(plan)) == {"getitem"}
    want = compile_python(graph, np)(x, seeds)[0]
    np.testing.assert_allclose(emulate(plan, (x, seeds))[0], want, rtol=1e-14)


def test_recomputed_inputs_make_a_stencil_hvp_one_kernel():
    """With recomputation (the default build), each padded read evaluates its input's
    elementwise cone at its shifted index: the three directions of the Rosenbrock HVP, and
    the five of a 2-D five-point energy's, are one kernel each (no intermediate written)."""
    def energy(x):
        u = x.reshape(6, 7)
        return (np.sum((u[1:, :] - u[:-1, :]) ** 2) + np.sum((u[:, 1:] - u[:, :-1]) ** 2)
                + np.sum(u ** 4))

    for f, n, k in ((rosenbrock, 10, 3), (energy, 42, 5)):
        x, seeds = np.linspace(-1, 1, n), np.random.default_rng(k).uniform(-1, 1, (k, n))
        graph = dg.trace(lambda x, s, f=f: vmap(dg.hvp(f), in_axes=(None, 0))(x, s),
                         x, seeds)
        plan = plan_graph(graph, recompute=True)
        assert plan.kernel_count() == 1, plan.describe()
        assert sum(len(r.cones) for r in plan.regions) >= 3
        _check(graph, (x, seeds))


def test_a_value_read_also_unshifted_stays_in_memory():
    """A value that the reading region needs at its own index too is not recomputed for the
    padded read (it is read from memory once, both ways)."""
    def f(x):
        y = np.sin(x)
        return np.sum(y[1:] * y[:-1]) + np.sum(y ** 2)

    x, v = np.linspace(-1, 1, 9), np.linspace(1, 2, 9)
    graph = dg.trace(dg.hvp(f), x, v)
    _check(graph, (x, v), host=())


def test_keys_the_kernel_cannot_read_stay_library_calls():
    x = np.arange(6.0)
    g = dg.trace(dg.grad(lambda x: np.sum(np.sin(x[[0, 2, 2]]))), x)      # index array
    assert [padded_read(e) for e in g.eqns if e.prim.name == "scatter_add"] == [None]
    g = dg.trace(dg.grad(lambda x: np.sum(np.sin(x[2]))), x)              # an int
    assert [padded_read(e) for e in g.eqns if e.prim.name == "scatter_add"] == [None]


def _check(graph, args, host: tuple = (True,)):
    """The plan emulated, with and without recomputation (which must leave a padded read's
    input in memory), equals the NumPy program; so do its kernels compiled and run on the
    host (g++, about a second a program) for each recompute setting in ``host``."""
    want = compile_python(graph, np)(*args)
    runs = []
    for recompute in (False, True):
        runs.append(emulate(plan_graph(graph, recompute=recompute), args))
        if recompute in host and HOST_KERNELS:
            runs.append(HostProgram(graph, FakeBackend(), recompute=recompute)(*args))
    for got in runs:
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-15)


def _slices(draw, shape) -> tuple:
    key = []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        start = draw(st.none() | st.integers(-n - 1, n + 1))
        stop = draw(st.none() | st.integers(-n - 1, n + 1))
        step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
        key.append(slice(start, stop, step))
    return tuple(key)


class Sliced:
    """``x[k0][k1]...``: a key of slices, or several applied in turn (a slice of a slice:
    the gradient is a padded read of a padded read)."""

    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, x):
        for k in self.keys:
            x = x[k]
        return x

    def __repr__(self):
        return "".join(f"[{k}]" for k in self.keys)


@st.composite
def sliced_programs(draw):
    """A shape, a key of slices on it (or two in turn), and how the cotangent is laid
    out."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    keys = [_slices(draw, shape)]
    inner = np.empty(shape)[keys[0]].shape
    if draw(st.booleans()) and 0 not in inner:
        keys.append(_slices(draw, inner))
    return shape, Sliced(tuple(keys)), draw(st.sampled_from(["c", "transposed", "strided"]))


def _programs(case):
    """The VJP of ``x[key]`` for a cotangent given as an input (C order, transposed, or a
    strided view: the kernel reads its memory as laid out), and the gradient of a loss whose
    slices feed a sum (the transposes fused with their readers)."""
    shape, sliced_by, layout = case
    x = np.random.default_rng(0).uniform(-1, 1, shape)
    sliced = sliced_by[x]
    if sliced.size == 0:
        return []
    ct = np.random.default_rng(1).uniform(-1, 1, sliced.shape)
    if layout == "transposed":
        ct = np.asfortranarray(ct)
    elif layout == "strided":
        ct = np.repeat(ct, 2, axis=-1)[..., ::2]
    vjp = dg.trace(lambda x, ct: dg.vjp(lambda x: sliced_by[x], x)[1](ct)[0], x, ct)
    grad = dg.trace(dg.grad(lambda x: np.sum(np.sin(sliced_by[x]) * sliced_by[x] ** 2)
                            + np.sum(x ** 3)), x)
    return [(vjp, (x, ct)), (grad, (x,))]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(sliced_programs())
def test_fuzzed_slice_transposes_emulate_like_numpy(case):
    for graph, args in _programs(case):
        _check(graph, args, host=())


# each example compiles its kernels with g++ (about a second): a few in CI, more with
# DUALGPU_HOST_KERNEL_EXAMPLES=100
HOST_EXAMPLES = int(os.environ.get("DUALGPU_HOST_KERNEL_EXAMPLES", 2))


@pytest.mark.skipif(not HOST_KERNELS, reason="no host C++ compiler (g++)")
@settings(max_examples=HOST_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(sliced_programs())
def test_fuzzed_slice_transposes_on_the_real_kernels(case):
    for graph, args in _programs(case):
        _check(graph, args)


def test_a_stencil_hvp():
    """A 2-D five-point energy: four transposed slices of two axes meet in one sum (its
    compressed HVPs run on the real kernels in the one-kernel test above)."""
    def energy(u):
        return (np.sum((u[1:, :] - u[:-1, :]) ** 2) + np.sum((u[:, 1:] - u[:, :-1]) ** 2)
                + np.sum(u ** 4))
    u = np.random.default_rng(2).uniform(-1, 1, (7, 9))
    v = np.random.default_rng(3).uniform(-1, 1, (7, 9))
    _check(dg.trace(dg.hvp(energy), u, v), (u, v), host=())


def test_a_slice_of_a_slice():
    """Found by DUALGPU_LAUNCHER_EXAMPLES (a piece of a flat parameter vector, sliced): the
    transpose of ``[::2]`` is read by the transpose of ``[1:-1]``, both padded reads. Each
    was moved to just before its first reader, the first to where the second had been:
    after the second, which then read a value its own region had not computed yet (a
    KeyError on CuPy, and on NumPy from 2**17 elements)."""
    p = np.random.default_rng(5).uniform(-1, 1, 11)
    _check(dg.trace(dg.grad(lambda p: np.sum(np.sin(p[1:-1][::2]) * p[2])), p), (p,),
           host=())


def test_np_gradient_found_on_the_gpu():
    """np.gradient's HVP: its edge slices' transposes were recomputed into the region
    reading them, which then had no memory to read (a KeyError in the kernel text)."""
    x = np.random.default_rng(4).uniform(-1, 1, (5, 7)).astype(np.float32)

    def loss(x):
        return np.sum(np.gradient(x, 0.5, axis=1) ** 2)
    _check(dg.trace(dg.grad_and_hvp(loss), x, x), (x, x), host=(True,))
