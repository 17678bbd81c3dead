"""The registry sweep of tests/gpu/test_gpu_backend.py, without CuPy (tests/
test_gpu_sweep_classification.py checks it on the CPU): the case that exercises each
registry op, and which ops the sweep skips, as data.

The sweep skips an op only for a reason written here: :data:`NO_GPU_CASE` (another test
covers the op, with the reason) or the registry's own flags (:func:`differentiated`: an op
that is not differentiable has no derivatives to compare). Anything else an op raises, on
the NumPy reference as on CuPy, fails the test: an op the NumPy backend refuses is not a
skip but a change to make here, with its reason.
"""
from __future__ import annotations

import numpy as np

import dualgpu as dg

NO_GPU_CASE = {
    **dict.fromkeys(["sddmm", "spmm"], "sparse products: covered by test_gpu_backend.py's "
                                       "test_scenario3_sparse_on_gpu"),
    "spsolve": "the sparse solve: covered by tests/gpu/test_sparse_solve_gpu.py",
    **dict.fromkeys(["jv", "iv", "ive"], "cupyx.scipy.special has no jv, iv or ive: refused "
                                         "on CuPy with a DualgpuError (ops/special_functions.py)"),
    "sqrtm": "cupyx.scipy.linalg has no sqrtm (CuPy has no Schur decomposition): refused on "
             "CuPy with a DualgpuError (ops/matrix_functions.py)",
    **dict.fromkeys(["argsort", "sort", "eig", "eigh", "pinv", "qr", "svd"],
                    "sort and linalg decompositions: covered by "
                    "tests/gpu/test_numpy_functions_gpu.py, in forms free of their order "
                    "and signs"),
}

# real/imag/conj take complex operands: a real input through a complex value and back
COMPLEX_PARTS = {"real", "imag", "conj"}


def unary_domain(name):
    return {"arccosh": (1.2, 2.0), "reciprocal": (0.5, 1.5), "digamma": (0.5, 2.0),
            "gammaln": (0.5, 2.0)}.get(name, (0.2, 0.8))


def elementwise_case(prim, rng, dtype):
    lo, hi = unary_domain(prim.name)
    if prim.name == "where":
        args = (rng.random((4, 5)) > 0.5, rng.uniform(lo, hi, (4, 5)).astype(dtype),
                rng.uniform(lo, hi, (5,)).astype(dtype))
        return (lambda c, x, y: prim.bind(c, x, y)), args
    if prim.name in COMPLEX_PARTS:
        imag = dg.REGISTRY["imag"]

        def through_complex(x):
            part = prim.bind(x * (1 + 2j) + 1j * x ** 2)
            return imag.bind(part) if prim.name == "conj" else part

        return through_complex, (rng.uniform(lo, hi, (4, 5)).astype(dtype),)
    if prim.name == "ldexp":  # an integer exponent: differentiable in x only
        return (lambda x, e: prim.bind(x, e)), (rng.uniform(lo, hi, (4, 5)).astype(dtype),
                                                rng.integers(-3, 4, (5,)).astype(np.int32))
    if prim.name == "betainc":  # differentiable in x only: a and b are constants
        a, b = rng.uniform(0.6, 3.0, (5,)).astype(dtype), rng.uniform(0.6, 3.0, (4, 1))
        return (lambda x: prim.bind(a, b.astype(dtype), x)), (
            rng.uniform(0.1, 0.9, (4, 5)).astype(dtype),)
    if prim.name in ("gammainc", "gammaincc", "yn"):
        # differentiable in x only: the first argument (a; yn's integer order) is a constant
        a = (rng.integers(-2, 4, (5,)) if prim.name == "yn"
             else rng.uniform(0.6, 3.0, (5,)).astype(dtype))
        return (lambda x: prim.bind(a, x)), (rng.uniform(0.2, 3.0, (4, 5)).astype(dtype),)
    if prim.c is None and prim.c_int is not None:  # on integers and bools only (bitwise)
        ints = np.int64 if dtype == np.float64 else np.int32
        shapes = [(4, 5), (5,)][:prim.arity]
        return (lambda *a: prim.bind(*a)), tuple(rng.integers(-70, 70, s).astype(ints)
                                                 for s in shapes)
    params = {"convert_element_type": {"dtype": np.dtype(np.float32)},
              "fill_like": {"value": 2.5}, "broadcast_to": {"shape": (3, 4, 5)},
              "polygamma": {"n": 1}}.get(
        prim.name, {})
    shapes = [(4, 5), (5,), (4, 1)][:prim.arity]
    args = tuple(rng.uniform(lo, hi, s).astype(dtype) for s in shapes)
    return (lambda *a: prim.bind(*a, **params)), args


def library_cases(rng, dtype):
    a = rng.uniform(0.2, 0.8, (4, 5)).astype(dtype)
    sq = (rng.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)).astype(dtype)
    return {
        "reduce_sum": (lambda x: np.sum(x, axis=0), (a,)),
        "reduce_max": (lambda x: np.max(x, axis=1), (a,)),
        "reduce_min": (lambda x: np.min(x), (a,)),
        "reduce_prod": (lambda x: np.prod(x, axis=0), (a,)),
        "cumsum": (lambda x: np.cumsum(x, axis=1), (a,)),
        "cumprod": (lambda x: np.cumprod(x, axis=1), (a,)),
        "reshape": (lambda x: np.sin(x).reshape(20), (a,)),
        "transpose": (lambda x: np.sin(x).T * 2, (a,)),
        "getitem": (lambda x: x[1:3, ::2] * x[0, ::2], (a,)),
        "scatter_add": (lambda x: np.sum(x[np.array([0, 2, 2])] ** 2), (a,)),
        "concatenate": (lambda x: np.concatenate([x, x * 2], axis=0), (a,)),
        "pad": (lambda x: np.pad(x, ((1, 0), (0, 2))), (a,)),
        "matmul": (lambda x: x @ x.T, (a,)),
        "einsum": (lambda x: np.einsum("ij,kj->ik", x, x), (a,)),
        # two feature groups, strides, padding and a dilated window
        "conv": (lambda x: dg.lax.conv_general_dilated(
            x.reshape(1, 2, 2, 5), x[:2, :3].reshape(2, 1, 1, 3), (1, 2), ((0, 1), (1, 1)),
            rhs_dilation=(1, 2), feature_group_count=2), (a,)),
        "solve": (lambda m: np.linalg.solve(m, np.ones(4, dtype)), (sq,)),
        "inv": (lambda m: np.linalg.inv(m), (sq,)),
        "det": (lambda m: np.linalg.det(m), (sq,)),
        "slogdet": (lambda m: np.linalg.slogdet(m)[1], (sq,)),
        "cholesky": (lambda m: np.linalg.cholesky(m @ m.T), (sq,)),
        "solve_triangular": (lambda m: dg.REGISTRY["solve_triangular"].bind(
            m, m[:, :2], lower=True, trans=1, unit_diagonal=False), (sq,)),
        "lu_factor": (lambda m: dg.REGISTRY["lu_factor"].bind(m)[0], (sq,)),
        # A and -B share no eigenvalue (sq's lie within 3 of 4)
        "solve_sylvester": (lambda m: dg.REGISTRY["solve_sylvester"].bind(
            m, m[:2, :2].T, m[:, 1:3]), (sq,)),
        # the permuted rows times the value: differentiable through the value only
        "lu_pivots_to_permutation": (lambda m: m * dg.REGISTRY["lu_pivots_to_permutation"].bind(
            dg.REGISTRY["lu_factor"].bind(m[::-1])[1]), (sq,)),
        # the index times the value: differentiable through the value only
        "searchsorted": (lambda x: x * np.searchsorted(np.sort(x[0]), x, side="right"), (a,)),
        "argmax": (lambda x: x[0] * np.argmax(x, axis=0), (a,)),
        "argmin": (lambda x: x[:, 0] * np.argmin(x, axis=1), (a,)),
        # cuFFT: a complex spectrum, back to real values
        "fft": (lambda x: np.real(np.fft.fft(x * (1.0 + 0.5j), axis=1)) * x, (a,)),
        "ifft": (lambda x: np.imag(np.fft.ifft(x * 1j + x[::-1], axis=0, norm="ortho")) * x,
                 (a,)),
        # the real transforms (ops the front end does not use yet), even and odd lengths
        "rfft": (lambda x: np.abs(dg.REGISTRY["rfft"].bind(x, axis=1, norm="backward")) ** 2,
                 (a,)),
        "irfft": (lambda x: dg.REGISTRY["irfft"].bind(x[:, :3] * (1.0 + 0.5j), axis=1,
                                                    norm="ortho", n=5) * x[:, :1]
                  + dg.REGISTRY["irfft"].bind(x[:, :3] * 1j + x[:, 1:4], axis=1,
                                              norm="backward", n=4)[:, :1], (a,)),
    }


def registry_case(name, dtype, rng):
    """``(fn, args)`` exercising registry op ``name`` on NumPy arrays; None for an op of
    :data:`NO_GPU_CASE`. An op with neither (a new op) is an error: give it a case."""
    prim = dg.REGISTRY[name]
    if name in NO_GPU_CASE:
        return None
    if prim.kind == "elementwise" and hasattr(prim, "arity"):
        return elementwise_case(prim, rng, dtype)
    cases = library_cases(rng, dtype)
    if name in cases:
        return cases[name]
    raise LookupError(f"registry op {name!r} has no case in the GPU sweep: add one to "
                      "tests/helpers/gpu_sweep.py's library_cases, or name it in NO_GPU_CASE with "
                      "the test that covers it")


def differentiated(name, args) -> list[int]:
    """The positions of the float arguments the sweep differentiates; empty when the op
    is not differentiable (the registry's flags) or takes no float argument."""
    prim = dg.REGISTRY[name]
    if not prim.differentiable or name in dg.core.primitives.NON_DIFFERENTIABLE:
        return []
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
