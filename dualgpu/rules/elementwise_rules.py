"""What an elementwise op's declaration row is made into: :func:`elementwise` declares the op
(its value, NumPy's dtype rule, Python form and C expression) and derives its JVP and VJP
from the partial derivatives the row gives (:func:`defpartials`: ``sum_i d_i f * x_dot_i``
and ``unbroadcast(d_i f * y_bar)``, ChainRules' ``@scalar_rule`` idea); the row's other
rules (``fold=``, ``taylor=``, ...) are attached as given. The fused kernels differentiate
nothing themselves: they run the graphs these rules record. ``1`` and ``-1`` partials are
recognised so that ``add``/``sub`` cost no multiplications.

The rows themselves are the op blocks of :mod:`dualgpu.ops.elementwise`,
:mod:`dualgpu.ops.logical` and :mod:`dualgpu.ops.special_functions`.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..backends import backend_for_xp
from ..core.axes import broadcast_shapes
from ..core.dtypes import float_dtype, promote, real_dtype
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import Primitive, defprim, defrules
from ..errors import ArgumentTypeError, user_location
from .common import unbroadcast, wants_cotangent

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True

ELEMENTWISE: dict[str, Primitive] = {}


def _loop_dtype(ufunc, name: str, avals) -> np.dtype | None:
    """The output dtype of the loop NumPy's ``ufunc`` picks for these operands (weak ones
    as Python scalars): exp of int8 is float16, of int16 float32, bool ** bool is int8;
    None where every operand is weak. A DualgpuError where NumPy has no loop (bool - bool,
    fabs of complex values), as NumPy raises."""
    if all(a.weak for a in avals):
        return None
    operands = tuple(type(_WEAK[a.dtype.kind]) if a.weak and a.dtype.kind in "iufc"
                     else a.dtype for a in avals)
    try:
        return ufunc.resolve_dtypes(operands + (None,) * ufunc.nout)[ufunc.nin]
    except TypeError as e:
        kinds = ", ".join(str(a.dtype) for a in avals)
        if any(a.dtype.kind == "V" for a in avals):  # JAX's float0: a gradient of no values
            raise ArgumentTypeError(f"numpy.{ufunc.__name__} of {kinds}: float0s do not support "
                                    "any operations by design (a float0 array is the gradient "
                                    "of an integer input, it holds no values) (at "
                                    f"{user_location()})") from None
        raise ArgumentTypeError(f"numpy.{ufunc.__name__} of {kinds}: NumPy has no loop for "
                                f"these types ({e}) (at {user_location()})") from None


_WEAK = {"i": 0, "u": 0, "f": 0.0, "c": 0j}


def shape_rule(name: str, result: str, ufunc=None):
    def rule(avals, **params):
        shape = broadcast_shapes(*[a.shape for a in avals], op=name)
        dtype = _loop_dtype(ufunc, name, avals) if ufunc is not None else None
        if dtype is None:
            dtype = promote(avals)
            if result == "float":
                dtype = float_dtype(dtype)
            elif result == "real":  # abs of complex values is real
                dtype = real_dtype(dtype)
            elif result == "bool":
                dtype = np.dtype(bool)
        weak = all(a.weak for a in avals)
        return Aval(shape, dtype, weak)

    return rule


def elementwise(name: str, numpy_name: str | None, arity: int, *, c: str | None,
                c_int: str | None = None, result: str = "same", py: str | None = None,
                impl=None, abstract_eval=None, differentiable: bool = True,
                partials=None, flags=(), doc: str = "", **rules) -> Primitive:
    """Declare an elementwise primitive: its value, Python form and C expression.

    ``result`` is the output dtype: ``"same"`` (promoted), ``"float"``, ``"real"`` or
    ``"bool"``. ``c_int`` is the C form used when the kernel computes in an integer or
    bool type (``{T}`` is that C type); an op on integers and bools only has ``c=None``
    and a ``c_int``. ``partials`` are its partial derivatives, one
    function of ``(*inputs, ans)`` per input, written with these ops so that they
    differentiate again: the JVP, VJP, HVP, the Laplacian's jets and the kernels' tangents
    all follow from them (:func:`defpartials`); ``rules`` are the op's other rules, by
    :data:`~dualgpu.core.primitives.RULE_KINDS` name (``fold=``, ``taylor=``...). Example::

        >>> my_exp2 = elementwise("my_exp2", "exp", 1, c="exp({0})", result="float")
        >>> my_exp2.c_for(np.float32), my_exp2.arity, float(my_exp2(0.0))
        ('exp({0})', 1, 1.0)
    """
    # the dtype rule of NumPy's own loops, where the op is a NumPy ufunc computed by it
    ufunc = getattr(np, numpy_name, None) if numpy_name and impl is None else None
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != arity:
        ufunc = None
    if impl is None:
        def impl(xp, *args, _f=numpy_name):
            return getattr(xp, _f)(*args)

    prim = defprim(name, impl, abstract_eval or shape_rule(name, result, ufunc),
                   kind=Flag.ELEMENTWISE, c=c, c_int=c_int, arity=arity, flags=flags,
                   py=py or (f"xp.{numpy_name}(" + ", ".join(
                       f"{{{i}}}" for i in range(arity)) + ")"),
                   differentiable=differentiable, doc=doc,
                   partials=list(partials) if partials is not None else None)
    ELEMENTWISE[name] = prim
    if partials is not None:
        defpartials(prim, *partials)
    if rules:
        defrules(prim, **rules)
    return prim


def special_function(name: str):
    """The value of a special function by the array library's SciPy (``scipy.special`` or
    ``cupyx.scipy.special``), in the op's dtype (:func:`in_declared_dtype`)."""
    def impl(xp, *args):
        return in_declared_dtype(getattr(backend_for_xp(xp).special, name)(*args), args)

    return impl


def in_declared_dtype(out, args):
    """A library call's result in the dtype a ``result="float"`` op declares for ``args``
    (their promoted float type, a Python number weak): SciPy's loops differ (y0 of float32
    is float64 by yn's ``ld->d``, gammainc of float32 and 2.0 float64, float16 has no
    loop), so the program held a value of another dtype than its graph says."""
    dt = float_dtype(np.result_type(*[a if isinstance(a, (int, float, complex)) else a.dtype
                                      for a in args]))
    return out if out.dtype == dt else out.astype(dt)


def _scale(partial, t):
    if isinstance(partial, (int, float)) and partial == 1:
        return t
    if isinstance(partial, (int, float)) and partial == -1:
        return lax.negative(t)
    return lax.multiply(partial, t)


def fit_shape(t, ans):
    if tuple(np.shape(t)) != tuple(ans.shape):
        t = lax.broadcast_to(t, ans.shape)
    if t.dtype != ans.dtype:
        t = lax.astype(t, ans.dtype)
    return t


def defpartials(prim, *partials):
    """Attach the JVP and VJP derived from ``prim``'s partial derivatives.

    Example (an op declared after this module was imported)::

        >>> my_exp = elementwise("my_exp", "exp", 1, c="exp({0})", result="float")
        >>> _ = defpartials(my_exp, lambda x, ans: ans)
        >>> dg.grad(lambda x: np.sum(my_exp(x)))(np.zeros(2))
        array([1., 1.])
    """
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_t = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            term = _scale(partials[i](*primals, ans), t)
            out_t = term if out_t is None else lax.add(out_t, term)
        return ans, None if out_t is None else fit_shape(out_t, ans)

    def vjp(g, primals, ans, **params):
        cts = []
        for i, x in enumerate(primals):
            aval = getattr(x, "aval", None)
            if aval is None or not wants_cotangent(x):
                cts.append(None)
                continue
            cts.append(unbroadcast(_scale(partials[i](*primals, ans), g), aval))
        return tuple(cts)

    return defrules(prim, jvp=jvp, vjp=vjp, partials=list(partials))
