"""Out-of-range indices given at run time never give a value: every gather and scatter whose
indices are an argument of the program raises :class:`~dualgpu.errors.IndexOutOfBoundsError`
(a ``DualgpuError`` and an ``IndexError``, as NumPy raises) on every NumPy executor, for an
index ``>= n`` and one below ``-n``; in-range negative indices count from the end as NumPy's.

The host kernel (``config["host_kernel"]``) refuses programs with gathers (they run as the
generated Python: the ``host`` column checks it); the host fused plan runs gathers as library
steps between its compiled regions.

CuPy's gathers wrap out-of-range indices around: there a program that receives index arrays
also returns their bounds (``transforms/index_bounds.py``), checked after the call. Here that
runs on the CPU: CuPy's launcher over a fake CuPy whose region kernels are emulated with
NumPy (tests/codegen/test_cupy_launcher.py) and whose gathers wrap, as CuPy's; and the text of every
CuPy program (plan, generated Python, ``dg.export``) shows the check for index arrays given
at run time, and nothing for programs without them. tests/gpu/test_index_bounds_gpu.py runs
the same table on CuPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
import dualgpu.codegen.launcher
import dualgpu.runtime.executor
from dualgpu.backends.numpy import NumpyBackend
from dualgpu.codegen import host_regions
from dualgpu.core.indexing import key_array_axes
from dualgpu.errors import IndexOutOfBoundsError
from dualgpu.ops.shape import getitem, scatter_add
from dualgpu.runtime.executor import Executable

X = np.linspace(0.1, 1.2, 12).reshape(3, 4)
ROWS = np.arange(3)

# name -> (function of (x, idx), idx in range, axis length the indices address)
GATHERS = {
    "x[idx]": (lambda x, i: x[i], 3),
    "x[:, idx]": (lambda x, i: np.sin(x[:, i]) * 2 + 1, 4),
    "x[rows, idx]": (lambda x, i: x[ROWS, i], 4),
    "take axis=1": (lambda x, i: np.take(x, i, axis=1), 4),
    "take flat": (lambda x, i: np.take(x, i), 12),
    "take_along_axis": (lambda x, i: np.take_along_axis(x, i[:, None], axis=1), 4),
    "grad of x[idx] (scatter_add)": (dg.grad(lambda x, i: np.sum(np.sin(x[i]))), 3),
    "put_along_axis_add": (lambda x, i: dg.lax.put_along_axis_add(x[:, :1], i[:, None], 1,
                                                              (3, 4)), 4),
    "nn.cross_entropy": (lambda x, i: dg.nn.cross_entropy(x, i), 4),
}
# config switches, and which program runs: (host_fused, host kernel)
EXECUTORS = {
    "python": (dict(fuse=False), (False, False)),
    "host_fused": (dict(host_fused=True), None),
    "host_kernel": (dict(host_fused=False, host_kernel=True), (False, False)),
}


@pytest.fixture
def executor(request, monkeypatch):
    switches, runs = EXECUTORS[request.param]
    monkeypatch.setattr(host_regions, "HOST_FUSED_MIN", 0)
    before = dict(dg.config)
    dg.config.update(switches)
    yield runs
    dg.config.update(before)
    dg.clear_cache()


@pytest.mark.parametrize("executor", list(EXECUTORS), indirect=True)
@pytest.mark.parametrize("op", list(GATHERS))
def test_out_of_range_indices_given_as_arguments_raise(op, executor):
    fn, n = GATHERS[op]
    good = np.array([0, n - 1, 1])
    exe = Executable(dg.trace(fn, X, good), NumpyBackend())
    if executor is not None:
        assert (exe.host_fused is not None, exe.host is not None) == executor
    for bad in (np.array([0, n, 1]), np.array([0, -n - 1, 1])):
        with pytest.raises(IndexOutOfBoundsError, match="out of bounds") as info:
            exe(X, bad)
        assert isinstance(info.value, IndexError) and isinstance(info.value, dg.DualgpuError)
        assert "test_index_bounds.py" in str(info.value), "names the user's line"


@pytest.mark.parametrize("op", [op for op in GATHERS if op != "nn.cross_entropy"])
def test_in_range_negative_indices_count_from_the_end(op):
    fn, n = GATHERS[op]
    negative = np.array([-1, -n, 0])
    got = dg.jit(fn)(X, negative)
    want = fn(X, negative % n)  # concrete indices: NumPy's own indexing
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take_modes_are_numpys(mode, axis):
    idx = np.array([[0, 5], [-7, 3]])  # out of range both ways: the mode decides
    want = np.take(X, idx, axis=axis, mode=mode)
    np.testing.assert_array_equal(
        dg.jit(lambda x, i: np.take(x, i, axis=axis, mode=mode))(X, idx), want)
    np.testing.assert_array_equal(dg.jit(lambda x: x.take(idx, axis=axis, mode=mode))(X), want)
    dg.testing.check_grads(lambda x: np.sum(np.take(x, idx, axis=axis, mode=mode) ** 2), (X,))


def test_take_refuses_an_unknown_mode():
    with pytest.raises(dg.InvalidArgumentError, match="mode.*'bogus'"):
        dg.jit(lambda x: np.take(x, [0], mode="bogus"))(X)


# --------------------------------------------------------------------- a library that wraps
class WrappingBackend(NumpyBackend):
    """CuPy as the executor sees it, on the CPU: fused plans, run by the launcher over a
    fake CuPy (see the ``wrapping`` fixture), or the generated Python; its gathers do not
    check their indices."""

    name = "cupy"
    runs_fused_kernels = True
    runs_host_kernels = False
    checks_indices = False

    def __init__(self):
        from test_cupy_launcher import _fake_cupy

        self.xp = _fake_cupy()


def _wrapping(impl):
    """``impl`` of a gather or scatter with CuPy's indexing: indices taken modulo the size
    of the axis they index, so that an index out of range gives a value."""

    def run(xp, x, *arrays, key, **params):
        shape = params.get("shape", np.shape(x))
        axes = key_array_axes(key)
        arrays = [np.asarray(a) % shape[axes[k]] for k, a in enumerate(arrays)]
        return impl(np, x, *arrays, key=key, **params)

    return run


@pytest.fixture
def wrapping(monkeypatch):
    """The executor on :class:`WrappingBackend`, its plans run by the launcher with region
    kernels emulated (tests/codegen/test_cupy_launcher.py), its gathers and scatters wrapping."""
    from test_cupy_launcher import EmulatedProgram

    def compile_fused(graph, backend, *options):
        return EmulatedProgram(graph, backend, *options)

    monkeypatch.setattr(dualgpu.runtime.executor, "compile_fused", compile_fused)
    monkeypatch.setattr(dualgpu.codegen.launcher, "_address",
                        lambda a: a.__array_interface__["data"][0])
    for prim in (getitem, scatter_add):
        monkeypatch.setattr(prim, "impl", _wrapping(prim.impl))
    before = dict(dg.config)
    yield WrappingBackend()
    dg.config.update(before)


@pytest.mark.parametrize("op", list(GATHERS))
def test_the_launcher_raises_from_the_index_bounds_where_gathers_wrap(op, wrapping):
    """The fused plan on a library whose gathers wrap: an index out of range raises the
    error NumPy's programs raise, read from the bounds the program returns; in-range
    negative indices count from the end; without the check, the wrapped value comes back
    (so the check is what raises)."""
    fn, n = GATHERS[op]
    good = np.array([0, n - 1, 1])
    exe = Executable(dg.trace(fn, X, good), wrapping)
    assert exe.plan is not None and len(exe.index_sites) >= 1
    for bad in (np.array([0, n, 1]), np.array([0, -n - 1, 1])):
        with pytest.raises(IndexOutOfBoundsError, match=r"index -?\d+ is out of bounds for "
                           r"axis \d with size \d+ -- .*test_index_bounds.py"):
            exe(X, bad)
    if op != "nn.cross_entropy":
        negative = np.array([-1, -n, 0])
        got = exe(X, negative)[-1]   # a gradient program returns the value first
        np.testing.assert_allclose(got, fn(X, negative % n), rtol=1e-15)
    dg.config["check_indices"] = False
    unchecked = Executable(dg.trace(fn, X, good), wrapping)
    assert unchecked.index_sites == ()
    unchecked(X, np.array([0, n, 1]))   # CuPy's wrapped value, as before the check


def _sources(fn, args, backend) -> list:
    """The text of every program a CuPy call of ``fn`` may run: the fused plan (kernels and
    steps), the generated Python, and the module dg.export writes."""
    texts = []
    for fuse in (True, False):
        dg.config["fuse"] = fuse
        texts.append(Executable(dg.trace(fn, *args), backend).source)
    dg.config["fuse"] = True
    texts.append(dg.export(fn, *args, backend="cupy").split('"""', 2)[2])  # past the version
    return texts


CONSTANT = np.array([2, 0, 3])
UNCHECKED = {   # programs that receive no index array: their text must not change
    "no gather": (lambda x: np.sin(x) * 2, (X,)),
    "constant x[:, idx]": (dg.grad(lambda x: np.sum(np.sin(x[:, CONSTANT]))), (X,)),
    "constant take_along_axis": (lambda x: np.take_along_axis(x, CONSTANT[:, None], 1), (X,)),
    "constant labels": (lambda x: dg.nn.cross_entropy(x, CONSTANT), (X,)),
    # the gathers of np.sort's derivatives read argsort's permutation: in range by construction
    "hvp of a sort": (dg.hvp(lambda x: np.sum(np.sort(x, axis=1) ** 3 * x)), (X, X)),
    "argmax": (lambda x: x[np.arange(3), np.argmax(x, axis=1)], (X,)),
}


@pytest.mark.parametrize("program", list(UNCHECKED))
def test_programs_without_index_arrays_at_run_time_are_unchanged(program, wrapping):
    fn, args = UNCHECKED[program]
    checked = _sources(fn, args, wrapping)
    dg.config["check_indices"] = False
    assert checked == _sources(fn, args, wrapping)
    assert not any("_check_indices" in text for text in checked)


def test_every_cupy_program_text_checks_index_arrays_given_at_run_time(wrapping):
    fn, n = GATHERS["grad of x[idx] (scatter_add)"]
    args = (X, np.array([0, 2, 1]))
    checked = _sources(fn, args, wrapping)
    dg.config["check_indices"] = False
    unchecked = _sources(fn, args, wrapping)
    plan, python, module = checked
    assert "reduce_min i axes=(0,)   [grid" in plan and "reduce_max i axes=(0,)   [grid" in plan
    assert "xp.min(i, axis=(0,))" in python and "xp.max(i, axis=(0,))" in python
    assert "    _check_indices(outs[-1])\n" in module and "_INDEX_SITES = ((0, 3, '" in module
    for text, without in zip(checked, unchecked):
        assert text != without and "reduce_min" not in without and "xp.min" not in without


@pytest.mark.parametrize("fn", [
    lambda x, i: x[np.array([0, 3, 1]), i],
    lambda x, i: x[i] + dg.lax.put_along_axis_add(x[:, :1], np.array([[0], [4], [1]]), 1,
                                                      (3, 4)),
], ids=["x[constant, idx]", "put_along_axis_add"])
def test_constant_index_arrays_out_of_range_raise_when_the_program_is_built(fn, wrapping):
    """A closed-over index array that tracing did not check (beside a traced one, or
    scattered into) is checked when the CuPy program is built (NumPy's raises when run)."""
    g = dg.trace(fn, X, np.array([0, 1, 2]))
    with pytest.raises(IndexOutOfBoundsError, match=r"index [34] is out of bounds for axis "
                       r"\d with size [34] -- .*test_index_bounds.py"):
        Executable(g, wrapping)
