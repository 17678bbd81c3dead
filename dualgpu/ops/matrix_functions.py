"""Matrix equations and functions: SciPy's ``solve_sylvester`` (``A X + X B = Q``) and
``sqrtm`` (the principal square root), over the last two axes (leading axes are batch axes,
and broadcast), one block each. Library ops on plain arrays (SciPy's Bartels-Stewart and
Schur methods on NumPy); the rules are Sylvester equations again, so they differentiate to
any order: ``dX`` solves ``A dX + dX B = dQ - dA X - X dB``, and ``dS`` of ``S = sqrtm(A)``
solves ``S dS + dS S = dA``.

    >>> import scipy.linalg
    >>> a = np.array([[4.0, 1.0], [1.0, 9.0]])
    >>> s = dg.jit(lambda a: scipy.linalg.sqrtm(a))(a)
    >>> np.allclose(s @ s, a)
    True
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.dtypes import float_dtype, promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import defprim, defrules, defstandalone
from ..errors import DualgpuError, UnsupportedOpError
from ..rules import batching_rules as batching
from ..rules import sparsity_rules as sparsity
from ..rules.common import unbroadcast, wants_cotangent
from ..rules.linalg_rules import broadcast_batch, check_square, mm, mT, per_matrix, real_only


# --------------------------------------------------------------------------- solve_sylvester
def _sylvester_shape(avals):
    a, b, q = avals
    for x in (a, b):
        check_square(x, "solve_sylvester")
        real_only(x, "solve_sylvester")
    real_only(q, "solve_sylvester")
    if q.ndim < 2 or tuple(q.shape[-2:]) != (a.shape[-1], b.shape[-1]):
        raise DualgpuError(f"linalg.solve_sylvester: q must be of shape (..., {a.shape[-1]}, "
                           f"{b.shape[-1]}) for a {a.str_short()} and b {b.str_short()}, got "
                           f"{q.str_short()}")
    batch = broadcast_batch(avals, "solve_sylvester")
    return Aval(batch + tuple(q.shape[-2:]), float_dtype(promote(avals)))


def _kronecker_sylvester(xp, a, b, q):
    """X of A X + X B = Q by one dense solve of (A (x) I + I (x) B^T) vec(X) = vec(Q) (rows
    first): for CuPy, which has no Schur decomposition (n m unknowns, (n m)^2 entries)."""
    n, m = a.shape[-1], b.shape[-1]
    eye_n, eye_m = xp.eye(n, dtype=q.dtype), xp.eye(m, dtype=q.dtype)
    k = (xp.einsum("...ik,jl->...ijkl", a, eye_m)
         + xp.einsum("ik,...lj->...ijkl", eye_n, b))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    k = xp.broadcast_to(k, batch + k.shape[-4:]).reshape(batch + (n * m, n * m))
    rhs = xp.broadcast_to(q, batch + (n, m)).reshape(batch + (n * m, 1))
    return xp.linalg.solve(k, rhs).reshape(batch + (n, m))


def _sylvester_impl(xp, a, b, q):
    dt = float_dtype(np.result_type(a.dtype, b.dtype, q.dtype))
    a, b, q = (x.astype(dt, copy=False) for x in (a, b, q))
    solve = getattr(backend_for_xp(xp).linalg, "solve_sylvester", None)
    if solve is None:  # cupyx.scipy.linalg has none: one dense solve of the Kronecker form
        return _kronecker_sylvester(xp, a, b, q)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    (x,) = per_matrix(xp, lambda a, b, q: (solve(a, b, q),), [batch + q.shape[-2:]], [dt],
                      a, b, q)
    return x


solve_sylvester = defprim(
    "solve_sylvester", _sylvester_impl, _sylvester_shape, kind=Flag.LIBRARY, arity=3,
    py="ops.solve_sylvester({0}, {1}, {2})",
    doc="X with A X + X B = Q (scipy.linalg.solve_sylvester), over the last two axes.")


def _sylvester_jvp(primals, tangents):
    a, b, q = primals
    x = solve_sylvester.bind(a, b, q)
    a_dot, b_dot, q_dot = tangents
    rhs = q_dot
    for term in (None if a_dot is None else mm(a_dot, x),
                 None if b_dot is None else mm(x, b_dot)):
        if term is not None:
            rhs = lax.negative(term) if rhs is None else lax.subtract(rhs, term)
    if rhs is None:
        return x, None
    return x, solve_sylvester.bind(a, b, rhs)


def _sylvester_vjp(g, primals, ans):
    """The adjoint of Q -> X is G -> the solution of A^T Y + Y B^T = G; then A-bar = -Y X^T,
    B-bar = -X^T Y."""
    a, b, q = primals
    y = solve_sylvester.bind(mT(a), mT(b), g)
    a_bar = (unbroadcast(lax.negative(mm(y, mT(ans))), a.aval) if wants_cotangent(a)
             else None)
    b_bar = (unbroadcast(lax.negative(mm(mT(ans), y)), b.aval) if wants_cotangent(b)
             else None)
    q_bar = unbroadcast(y, q.aval) if wants_cotangent(q) else None
    return a_bar, b_bar, q_bar


def _sylvester_vmap(eqn, args, batched, size):
    """Each operand given the batch axis (length 1 where unbatched) and as many axes: the
    op's batch axes broadcast."""
    args = [x if bt else lax.expand_dims(x, 0) for x, bt in zip(args, batched)]
    rank = max(len(x.shape) for x in args)
    args = [lax.reshape(x, (x.shape[0],) + (1,) * (rank - len(x.shape)) + tuple(x.shape[1:]))
            for x in args]
    return batching.one(solve_sylvester.bind(*args))


defrules(solve_sylvester, jvp=_sylvester_jvp, vjp=_sylvester_vjp, vmap=_sylvester_vmap,
         sparsity=sparsity.dense_block)
defstandalone(solve_sylvester, (
        'def solve_sylvester(a, b, q):\n'
        '    import scipy.linalg\n'
        '    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])\n'
        '    a, b, q = (xp.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])\n'
        '               for x in (a, b, q))\n'
        '    out = [scipy.linalg.solve_sylvester(*m) for m in zip(a, b, q)]\n'
        '    if not out:  # an empty stack\n'
        '        return xp.zeros(batch + q.shape[-2:], q.dtype)\n'
        '    return xp.stack(out).reshape(batch + q.shape[-2:])\n'),
              cupy_refused="cupyx.scipy.linalg has no solve_sylvester")


# --------------------------------------------------------------------------- sqrtm
def _sqrtm_shape(avals):
    a = avals[0]
    check_square(a, "sqrtm")
    real_only(a, "sqrtm")
    return Aval(tuple(a.shape), float_dtype(a.dtype))


def _real_root(root, dt):
    """SciPy's root, real: a complex one (a negative eigenvalue) raises, as dualgpu's
    matrix functions are real."""
    if root.dtype.kind == "c":
        scale = max(float(np.max(np.abs(root), initial=0.0)), 1.0)
        if np.any(np.abs(root.imag) > np.sqrt(np.finfo(dt).eps) * scale):
            raise DualgpuError(
                "linalg.sqrtm: the matrix has a negative eigenvalue, so its square root is "
                "complex; dualgpu's matrix functions are real")
        root = root.real
    return (root.astype(dt, copy=False),)


def _sqrtm_impl(xp, a):
    sqrtm = getattr(backend_for_xp(xp).linalg, "sqrtm", None)
    if sqrtm is None:
        raise UnsupportedOpError("scipy.linalg.sqrtm: cupyx.scipy.linalg has no sqrtm (CuPy "
                                 "has no Schur decomposition): call it on NumPy arrays")
    dt = float_dtype(a.dtype)
    (root,) = per_matrix(xp, lambda m: _real_root(sqrtm(m), dt), [a.shape], [dt], a)
    return root


sqrtm = defprim(
    "sqrtm", _sqrtm_impl, _sqrtm_shape, kind=Flag.LIBRARY, py="ops.sqrtm({0})",
    doc="The principal square root S of A, S @ S = A (scipy.linalg.sqrtm), real: a "
        "negative eigenvalue raises; dS solves S dS + dS S = dA.")


def _sqrtm_jvp(primals, tangents):
    root = sqrtm.bind(primals[0])
    t = tangents[0]
    return root, None if t is None else solve_sylvester.bind(root, root, t)


def _sqrtm_vjp(g, primals, ans):
    root_t = mT(ans)
    return (solve_sylvester.bind(root_t, root_t, g),)


defrules(sqrtm, jvp=_sqrtm_jvp, vjp=_sqrtm_vjp, vmap=batching.leading_axes_rule,
         sparsity=sparsity.dense_block)
defstandalone(sqrtm, (
        'def sqrtm(a):\n'
        '    import scipy.linalg\n'
        '    out = [scipy.linalg.sqrtm(m) for m in a.reshape((-1,) + a.shape[-2:])]\n'
        '    if not out:  # an empty stack\n'
        '        return xp.zeros(a.shape, a.dtype)\n'
        '    root = xp.stack(out)\n'
        "    if root.dtype.kind == 'c':  # real roots only, as dualgpu's\n"
        '        scale = max(float(xp.max(abs(root), initial=0.0)), 1.0)\n'
        '        if xp.any(abs(root.imag) > xp.sqrt(xp.finfo(a.dtype).eps) * scale):\n'
        "            raise ValueError('linalg.sqrtm: the matrix has a negative eigenvalue, so '\n"
        "                             'its square root is complex')\n"
        '    return root.real.astype(a.dtype).reshape(a.shape)\n'),
              cupy_refused="cupyx.scipy.linalg has no sqrtm")
