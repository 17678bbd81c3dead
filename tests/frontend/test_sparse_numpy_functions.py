"""NumPy's functions (and the matrix methods NumPy hands them to) applied to a sparse matrix
read by traced code, for SciPy's ``*_matrix`` and ``*_array`` classes in CSR, CSC and COO:
closed over (concrete values) each gives SciPy's own answer, of SciPy's type and shape
(``np.sum(A, axis=0)`` an ``np.matrix`` for a ``csr_matrix``, a 1-D array for a
``csr_array``); as a traced argument the same values in the same shape (a sparse result of
the same class and pattern); every other NumPy function one SparseMethodError naming it."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dualgpu as dg
from dualgpu.core.trace import Tracer
from dualgpu.frontend.scipy.sparse import SparseValue

BASE = sp.random(4, 3, density=0.5, format="csr", random_state=3)
CLASSES = [sp.csr_matrix, sp.csr_array, sp.csc_matrix, sp.coo_matrix, sp.coo_array]
X3, X4 = np.linspace(0.5, 1.5, 3), np.linspace(-1.0, 1.0, 4)

# name -> (function of the matrix and a dense x of 3, reference or None: the function itself)
FUNCTIONS = {
    "np.sum": (lambda M, x: np.sum(M), None),
    "np.sum axis=0": (lambda M, x: np.sum(M, axis=0), None),
    "np.sum axis=-1": (lambda M, x: np.sum(M, axis=-1), None),
    "np.sum dtype": (lambda M, x: np.sum(M, dtype=np.float32), None),
    "np.mean": (lambda M, x: np.mean(M), None),
    "np.mean axis=1": (lambda M, x: np.mean(M, axis=1), None),
    "np.max": (lambda M, x: np.max(M), None),
    "np.min": (lambda M, x: np.min(M), None),
    "np.amax": (lambda M, x: np.amax(M), None),
    "np.transpose": (lambda M, x: np.transpose(M), None),
    "np.abs": (lambda M, x: np.abs(-M), None),
    "np.sin": (lambda M, x: np.sin(M), None),
    "np.sqrt": (lambda M, x: np.sqrt(M), None),
    "np.negative": (lambda M, x: np.negative(M), None),
    "np.dot": (lambda M, x: np.dot(M, x), lambda M, x: M @ x),  # NumPy's: an object array
    "np.dot x A": (lambda M, x: np.dot(X4, M) * x, lambda M, x: (X4 @ M) * x),
    "np.matmul": (lambda M, x: np.matmul(M, x), lambda M, x: M @ x),
    "np.shape": (lambda M, x: np.shape(M), None),
    "np.size": (lambda M, x: np.size(M), None),
    "np.ndim": (lambda M, x: np.ndim(M), None),
    "A.sum()": (lambda M, x: M.sum(), None),
    "A.sum(axis=0)": (lambda M, x: M.sum(axis=0), None),
    "A.sum(axis=1)": (lambda M, x: M.sum(axis=1), None),
    "A.mean(axis=0)": (lambda M, x: M.mean(axis=0), None),
    "A.max()": (lambda M, x: M.max(), None),
    "A.min()": (lambda M, x: (-M).min(), None),
    "A.T": (lambda M, x: M.T, None),
    "A.multiply": (lambda M, x: M.multiply(x), None),
    "A @ x": (lambda M, x: M @ x, None),
    "x @ A": (lambda M, x: (X4 * np.sum(x)) @ M, None),
    "A.toarray()": (lambda M, x: M.toarray(), None),
}


def _dense(r):
    """A result as a dense array (inside the trace: SparseValue's toarray)."""
    return r.toarray() if hasattr(r, "toarray") else np.asarray(r) if isinstance(
        r, np.matrix) else r


def _check(got, want, name):
    np.testing.assert_allclose(np.asarray(got, dtype=float),
                               np.asarray(_dense(want), dtype=float), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_numpy_functions_of_a_closed_over_matrix_are_scipys(cls):
    A = cls(BASE)
    for name, (fn, ref) in FUNCTIONS.items():
        want = (ref or fn)(A, X3)
        seen = []

        def f(x, fn=fn, seen=seen):
            r = fn(A, x)
            seen.append(r)
            return x[0] * 0 + _dense(r)

        got = dg.jit(f)(X3)
        inside = seen[0]
        traced = isinstance(inside, Tracer) or isinstance(inside, SparseValue) and not \
            inside.concrete
        if not traced:  # computed now: SciPy's own answer (a sparse one seen as closed over)
            if isinstance(inside, SparseValue):
                inside = inside.scipy()
            assert type(inside) is type(want), (name, type(inside), type(want))
            assert np.shape(inside) == np.shape(want), name
        _check(got, want, name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_numpy_functions_of_a_traced_matrix_have_scipys_values_and_shapes(cls):
    A = cls(BASE)
    for name, (fn, ref) in FUNCTIONS.items():
        want = (ref or fn)(A, X3)
        shapes = []

        def f(M, x, fn=fn, shapes=shapes):
            r = fn(M, x)
            shapes.append((np.shape(r), sp.issparse(r)))
            return x[0] * 0 + _dense(r)

        got = dg.jit(f)(A, X3)
        assert shapes[0] == (np.shape(want), sp.issparse(want)), (name, shapes[0])
        _check(got, want, name)


def test_gradient_through_numpy_functions_of_a_sparse_argument():
    """np.sum / np.max / np.sin of a sparse argument are differentiated in its values."""
    A = sp.csr_array(BASE)
    loss = lambda M: np.sum(np.sin(M)) + np.max(M) + np.sum(np.mean(M, axis=0) ** 2)  # noqa: E731
    g = dg.grad(loss)(A)
    eps = 1e-6
    for k in range(A.nnz):
        Ap, Am = A.copy(), A.copy()
        Ap.data[k] += eps
        Am.data[k] -= eps
        fd = (loss(Ap) - loss(Am)) / (2 * eps)
        np.testing.assert_allclose(g.data[k], fd, rtol=1e-5, atol=1e-7)


REFUSED = {
    "numpy.asarray": lambda M, x: np.asarray(M) * x,
    "numpy.array": lambda M, x: np.array(M) * x,
    "numpy.trace": lambda M, x: np.trace(M) * x,
    "numpy.count_nonzero": lambda M, x: np.count_nonzero(M) * x,
    "numpy.multiply": lambda M, x: np.multiply(M, 2.0) @ x,
    "numpy.cumsum": lambda M, x: np.cumsum(M) * x,
    "numpy.exp": lambda M, x: np.exp(M) @ x,   # exp(0) = 1: not a sparse result
    "numpy.sum": lambda M, x: np.sum(M, keepdims=True) * x,
}


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_other_numpy_functions_are_one_error_naming_them(label):
    A, fn = sp.csr_matrix(BASE), REFUSED[label]
    for call in (lambda: dg.jit(lambda x: fn(A, x))(X3),
                 lambda: dg.jit(lambda M, x: fn(M, x))(A, X3)):
        with pytest.raises(dg.SparseMethodError, match=rf"{label}\b.*sparse matrix.*"
                                                       r"test_sparse_numpy_functions\.py"):
            call()


def test_max_along_an_axis_of_traced_values_is_refused_by_name():
    A = sp.csr_matrix(BASE)
    with pytest.raises(dg.SparseMethodError, match=r"\.max\(axis=0\).*sparse matrix"):
        dg.jit(lambda M, x: np.max(M, axis=0) @ x)(A, X3)


def test_a_matrix_scipy_makes_in_the_trace_is_seen_as_a_closed_over_one():
    """SciPy's own matrices made inside the trace (and SciPy's sparse answers for constant
    ones) trace their products and methods with traced values, as a closed-over matrix does
    (SciPy's multiply given a tracer returned NotImplemented); a constant's attributes are
    SciPy's."""
    x = np.linspace(0.1, 1.0, 4)
    A = sp.csr_matrix(BASE)
    cases = {
        "made in the trace": lambda x: sp.eye(4, format="csr").multiply(x) @ x,
        "built in the trace": lambda x: sp.random(4, 4, density=0.5, format="coo",
                                                  random_state=0).multiply(x[:, None]) @ x,
        "A.T of a constant": lambda x: A.T.multiply(x) @ x,
        "np.transpose of a constant": lambda x: np.transpose(A).multiply(x) @ x,
        "attributes": lambda x: x * (A.indices.sum() + A.indptr[-1] + A.nnz),
    }
    for name, f in cases.items():
        np.testing.assert_allclose(dg.jit(f)(x), np.asarray(f(x)).ravel(), rtol=1e-12,
                                   err_msg=name)


def test_an_np_matrix_answer_is_an_array_in_the_program():
    """SciPy's axis sums of a *_matrix are np.matrix constants: the program computes with
    them as arrays (its * is NumPy's elementwise multiply), as np.multiply does eagerly."""
    A = sp.csr_matrix(BASE)
    for f in (lambda x: np.multiply(np.sum(A, axis=0), x),
              lambda x: np.add(A.mean(axis=1), x[:1]) * x[0],
              lambda x: np.power(np.multiply(A.sum(axis=1), x[None, :2]), 2)):
        want = f(X3)
        got = dg.jit(f)(X3)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12)


def test_an_np_matrix_times_a_traced_value_is_refused_not_multiplied_elementwise():
    """np.matrix's ``*`` is a matrix product (and stays one through +, -, /): SciPy's axis
    sums of a ``*_matrix``, closed over or traced, times a traced array is refused, where it
    was an elementwise product; by a scalar it scales; ``.A1``, ``.A``, ``np.asarray`` and
    indexing give NumPy's values and shapes."""
    A = sp.csr_matrix(BASE)
    x = np.linspace(0.5, 1.5, 3)[:, None]
    products = {"closed": lambda M, x: np.sum(A, axis=0) * x,
                "closed, right": lambda M, x: x.T * A.sum(axis=1).T,
                "traced": lambda M, x: M.sum(axis=0) * x,
                "traced, right": lambda M, x: x * M.mean(axis=0),
                "traced, after +": lambda M, x: (M.sum(axis=0) + 1.0) * x,
                "traced, constant left": lambda M, x: X4[:, None] * M.sum(axis=0)}
    for f in products.values():
        with pytest.raises(dg.DualgpuError, match="np.matrix"):
            dg.jit(f)(A, x)
    same = {"A1": lambda M, x: M.sum(axis=1).A1 * x[0],
            "A": lambda M, x: M.sum(axis=0).A * x.T,
            "asarray": lambda M, x: np.asarray(M.sum(axis=1)).ravel() * x[0],
            "scalar": lambda M, x: M.sum(axis=0) * 2.0 - x.T,
            "row": lambda M, x: M.sum(axis=0)[0] + x.T,
            "entry": lambda M, x: M.mean(axis=1)[1, 0] * x}
    for name, f in same.items():
        want = np.asarray(f(A, x))
        got = dg.jit(f)(A, x)
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
