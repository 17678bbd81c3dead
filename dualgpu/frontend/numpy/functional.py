"""NumPy's functions that call the user's functions on traced values: ``piecewise``,
``apply_along_axis`` and ``vectorize`` (NumPy's "functional programming" routines). Each
calls the functions given while the program is traced, so their results are ops of the
program and every transform differentiates them."""
from __future__ import annotations

import numpy as np

from ...core.axes import check_axis as _check_axis
from ...core.flags import Flag
from ...core.interpret import walk
from ...core.ir import Graph
from ...errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ShapeMismatchError,
    TracerControlFlowError,
    UnsupportedOpError,
    user_location,
)
from ...lax import (
    astype,
    broadcast_to,
    getitem,
    logical_not,
    logical_or,
    moveaxis,
    ravel,
    reshape,
    stack,
    stop_gradient,
    transpose,
    where,
    zeros_like,
)
from ...lax import dtype_of as _dtype
from ...lax import is_tracer as _is_tracer
from ...lax import shape_of as _shape
from .arguments import as_array, holds_tracer, host_value
from .indexing import take
from .random import recorded_draws


def _one_condition(condlist, x) -> bool:
    """NumPy's test of whether ``condlist`` is a single condition rather than a list of
    them: a scalar, or (for an ``x`` that is not 0-d) a sequence whose first element is
    not an array (a traced value counts as one)."""
    if np.isscalar(condlist):
        return True
    if _is_tracer(condlist) or isinstance(condlist, np.ndarray):
        return len(_shape(condlist)) < 2 and len(_shape(x)) != 0
    first = condlist[0] if len(condlist) else None
    return not (isinstance(first, (list, np.ndarray)) or _is_tracer(first)) \
        and len(_shape(x)) != 0


def _conditions(condlist, x, nfunc):
    if _one_condition(condlist, x):
        condlist = [condlist]
    conds = []
    for c in condlist:
        c = as_array(c)
        c = c if _dtype(c).kind == "b" else astype(c, bool)
        if _shape(c) != _shape(x):
            raise ShapeMismatchError(f"np.piecewise: a condition of shape {_shape(c)} for x of "
                                     f"shape {_shape(x)}: each must have x's shape "
                                     f"(at {user_location()})")
        conds.append(c)
    if len(conds) == nfunc - 1:  # the last function takes where no condition holds
        anywhere = conds[0]
        for c in conds[1:]:
            anywhere = logical_or(anywhere, c)
        conds.append(logical_not(anywhere))
    elif len(conds) != nfunc:
        raise InvalidArgumentError(f"np.piecewise: with {len(conds)} condition(s), either "
                                   f"{len(conds)} or {len(conds) + 1} functions are expected, "
                                   f"got {nfunc} in funclist (at {user_location()})")
    return conds


def _scattered(values, cond, x, dtype):
    """The values of ``y[cond] = values`` (``cond`` a constant mask of ``x``'s shape):
    an array of ``x``'s shape holding them at the masked places (elsewhere the first)."""
    flat = host_value(cond).ravel()
    k = int(flat.sum())
    values = as_array(values)
    try:
        values = broadcast_to(values, (k,))
    except (ValueError, ShapeMismatchError):
        raise ShapeMismatchError(f"np.piecewise: a function's result of shape "
                                 f"{_shape(values)} cannot be assigned to the {k} element(s) "
                                 f"of its condition (at {user_location()})") from None
    position = np.maximum(np.cumsum(flat) - 1, 0)
    return reshape(take(astype(values, dtype), position), _shape(x))


def piecewise(x, condlist, funclist, *args, **kw):
    """``np.piecewise``: ``funclist[i]`` (a function, or a value) where ``condlist[i]``
    holds, later conditions over earlier ones, 0 where none holds (or the extra last
    function's value), in ``x``'s dtype.

    A constant condition calls its function on ``x[cond]``, exactly as NumPy does. A traced
    condition (``x > 0``) selects where the program runs, so its function is called on all
    of ``x`` and its results where the condition holds are kept: the functions must then be
    elementwise (as they nearly always are; a result not of ``x``'s shape that depends on
    ``x`` is refused). The derivative of a piece does not reach the places outside it, so
    a function undefined there (``np.sqrt`` of negatives) leaves no NaN in it.

    >>> dg.grad(lambda x: np.sum(np.piecewise(x, [x < 0], [lambda t: -t, np.sqrt])))(
    ...     np.array([-1.0, 4.0]))
    array([-1.  ,  0.25])
    """
    x = as_array(x)
    if not isinstance(funclist, (list, tuple)):
        raise ArgumentTypeError(f"np.piecewise: funclist must be a list of functions or "
                                f"values, got {type(funclist).__name__} (at {user_location()})")
    conds = _conditions(condlist, x, len(funclist))
    y = zeros_like(x)
    dtype = _dtype(x)
    for cond, func in zip(conds, funclist):
        if not _is_tracer(cond):
            if not np.any(host_value(cond)):
                continue  # NumPy calls no function on an empty piece
            if callable(func):
                func = func(take(ravel(x), np.flatnonzero(host_value(cond))), *args, **kw)
            y = where(cond, _scattered(func, cond, x, dtype), y)
            continue
        if callable(func):
            # the places outside the piece see x without its derivative: a function
            # undefined there (NaN) puts no NaN in the derivative of the result
            xin = where(cond, x, stop_gradient(x))
            start = len(xin._builder.eqns)
            func = func(xin, *args, **kw)
            _check_elementwise(xin, start, func)
        y = where(cond, astype(as_array(func), dtype), y)
    return y


def _check_elementwise(xin, start, result):
    """Refuses a piece's function that is not elementwise in its input: one whose result
    is not of the input's shape, or that applied to the input (or to what it made of it)
    an op other than an elementwise one or a reshape (``t - t.mean()``, ``t[::-1]``,
    ``np.cumsum(t)``): on all of x it would not give NumPy's values on ``x[cond]``."""
    why = None
    if _is_tracer(result) and _shape(result) != _shape(xin):
        why = f"it returned shape {_shape(result)} for x of shape {_shape(xin)}"
    else:
        refused = _first_non_elementwise([xin], start)
        if refused is not None:
            why = f"it applies {refused} to its argument"
    if why is not None:
        raise UnsupportedOpError(
            f"np.piecewise with a traced condition calls each function on all of x (the "
            f"condition is known only when the program runs), so the functions must be "
            f"elementwise; {why} (at {user_location()}). Make the condition a constant, or "
            f"write the pieces with np.where.")


def _first_non_elementwise(inputs, start: int) -> str | None:
    """The name of the first op other than an elementwise one or a reshape that the
    equations recorded since ``start`` applied to the traced ``inputs`` (or to what they
    made of them), or None: the one equation walk, its state "made from the inputs"."""
    traced = [x for x in inputs if _is_tracer(x)]
    if not traced:
        return None
    refused: list[str] = []

    def made_from_input(eqn, values, states):
        made = any(states)
        if made and not (eqn.prim.has(Flag.ELEMENTWISE) or eqn.prim.name == "reshape"):
            refused.append(eqn.prim.name)
        return None, [True if made else None] * len(eqn.outs)

    builder = traced[0]._builder
    recorded = Graph(inputs=[x._var for x in traced], outputs=[], eqns=builder.eqns[start:])
    walk(recorded, None, {x._var.id: True for x in traced}, made_from_input)
    return refused[0] if refused else None


piecewise.calls_functions = True  # type: ignore[attr-defined]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``np.apply_along_axis``: ``func1d`` called on each 1-D slice along ``axis`` (one
    call per slice, as NumPy's: the program grows with their number; ``dg.vmap`` of the
    function is the batched form), its results (in the first result's dtype and shape)
    put where the axis was.

    >>> dg.jit(lambda a: np.apply_along_axis(lambda r: r[::-1] * r[0], 1, a))(
    ...     np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 2.,  1.],
           [12.,  9.]])
    """
    arr = as_array(arr)
    nd = len(_shape(arr))
    axis = _check_axis(axis, nd, "apply_along_axis")
    moved = moveaxis(arr, axis, -1)
    indices = list(np.ndindex(*_shape(moved)[:-1]))
    if not indices or _shape(moved)[:-1] and 0 in _shape(moved)[:-1]:
        raise InvalidArgumentError(f"np.apply_along_axis: cannot apply_along_axis when any "
                                   f"iteration dimensions are 0 (at {user_location()})")
    results = [as_array(func1d(getitem(moved, ind + (Ellipsis,)), *args, **kwargs))
               for ind in indices]
    first = results[0]
    shape, dtype = _shape(first), _dtype(first)
    results = [astype(broadcast_to(r, shape), dtype) if _shape(r) != shape else astype(r, dtype)
               for r in results]
    buff = reshape(stack(results, 0), _shape(moved)[:-1] + shape)
    nb, nr = len(_shape(buff)), len(shape)
    dims = list(range(nb))
    return transpose(buff, tuple(dims[:axis] + dims[nb - nr:] + dims[axis:nb - nr]))


apply_along_axis.calls_functions = True  # type: ignore[attr-defined]


class vectorize(np.vectorize):
    """``np.vectorize`` in a traced function: called with traced arguments, ``pyfunc`` is
    called once, on the arguments broadcast together (``excluded`` ones as given), rather
    than once per element: so it must compute elementwise -- what a function written for
    scalars does with whole arrays, when its branches are ``np.where`` rather than ``if``.
    An op that is not elementwise (``x.sum()``, ``x[::-1]``) is refused, as is Python
    control flow on a value (``if x > 0``), which needs the elements one by one;
    ``signature=`` (a function of core dimensions) is refused too: map it with ``dg.vmap``.
    Results are broadcast to the common shape and take ``otypes``' dtypes where given.
    Without traced arguments, it is NumPy's ``vectorize``.

    >>> f = np.vectorize(lambda a, b: a * b + np.sin(a))
    >>> dg.grad(lambda x: np.sum(f(x, 2.0)))(np.zeros(2))
    array([3., 3.])
    """

    def __call__(self, *args, **kwargs):
        if not (any(holds_tracer(a) for a in args)
                or any(holds_tracer(v) for v in kwargs.values())):
            return super().__call__(*args, **kwargs)
        return _vectorized_call(self, args, kwargs)

    @classmethod
    def of(cls, numpy_vectorize, rebind=None):
        """The front end's ``vectorize`` for what a traced function holds: of NumPy's class,
        this class; of a ``np.vectorize`` made outside the trace, one calling its function
        as ``rebind`` makes it for the trace (when given)."""
        if numpy_vectorize is np.vectorize:
            return cls
        pyfunc = numpy_vectorize.pyfunc if rebind is None else rebind(numpy_vectorize.pyfunc)
        if isinstance(numpy_vectorize, cls) and pyfunc is numpy_vectorize.pyfunc:
            return numpy_vectorize
        ours = cls.__new__(cls)
        ours.__dict__.update(numpy_vectorize.__dict__)
        if pyfunc is not numpy_vectorize.pyfunc:
            ours.pyfunc = pyfunc
            ours.__dict__["_ufunc"] = None  # (NumPy's cached ufunc is of the other one)
        return ours


def _vectorized_call(vf: np.vectorize, args: tuple, kwargs: dict):
    if vf.signature is not None:
        raise UnsupportedOpError(
            f"np.vectorize(signature={vf.signature!r}) of traced values (at "
            f"{user_location()}) is not supported: map the function over the loop axes "
            "with dg.vmap instead")
    excluded = vf.excluded
    positions = [i for i in range(len(args)) if i not in excluded]
    names = [k for k in kwargs if k not in excluded]
    arrays = [as_array(args[i]) for i in positions] + [as_array(kwargs[k]) for k in names]
    try:
        shape = np.broadcast_shapes(*(_shape(a) for a in arrays))
    except ValueError:
        raise ShapeMismatchError(f"np.vectorize: arguments of shapes "
                                 f"{[_shape(a) for a in arrays]} do not broadcast together "
                                 f"(at {user_location()})") from None
    if 0 in shape and not vf.otypes:
        raise InvalidArgumentError(f"np.vectorize: cannot call vectorize on size 0 inputs "
                                   f"unless otypes is set (at {user_location()})")
    arrays = [broadcast_to(a, shape) if _shape(a) != shape else a for a in arrays]
    given = list(args)
    for i, a in zip(positions, arrays):
        given[i] = a
    kwargs = {**kwargs, **dict(zip(names, arrays[len(positions):]))}
    # the equations the function records (none to check when only excluded ones are traced)
    start = next((len(a._builder.eqns) for a in arrays if _is_tracer(a)), 0)
    draws = recorded_draws()
    first_draw = len(draws)
    try:
        out = vf.pyfunc(*given, **kwargs)
    except (TracerControlFlowError, InvalidArgumentError, ArgumentTypeError) as e:
        # if/while on a value, float(x), math.exp(x): unknown while tracing, or ambiguous
        # for several elements (core/conversions.py's messages)
        if not isinstance(e, TracerControlFlowError) and "truth value" not in str(e) \
                and "converted to Python scalars" not in str(e):
            raise
        raise TracerControlFlowError(
            f"np.vectorize in a traced function calls its function once on whole arrays "
            f"(shape {shape}), so the function can neither branch on a value nor make it a "
            f"Python number: {e} Write branches with np.where and use NumPy's functions "
            f"(np.exp, not math.exp).") from None
    shared = [(d.label, d.aval.shape) for d in draws[first_draw:]
              if d.aval is not None and d.aval.shape != shape]
    if shared and int(np.prod(shape)) > 1:
        raise UnsupportedOpError(
            f"np.vectorize in a traced function calls its function once on the arguments "
            f"broadcast to shape {shape}, so its draw {shared[0][0]} of shape "
            f"{shared[0][1]} would be one draw shared by every element, where "
            f"NumPy draws anew for each (at {user_location()}). Draw an array of the "
            f"arguments' shape (size=np.shape(t)), or draw outside the function.")
    refused = _first_non_elementwise(arrays, start)
    results = out if isinstance(out, tuple) else (out,)
    for r in results:
        if _is_tracer(r) and _shape(r) != shape and refused is None:
            refused = f"a result of shape {_shape(r)} for arguments of shape {shape}"
    if refused is not None:
        raise UnsupportedOpError(
            f"np.vectorize in a traced function calls its function once on the arguments "
            f"broadcast to shape {shape}, so it must compute elementwise; it applied "
            f"{refused} (at {user_location()}). Compute elementwise, or map the function "
            f"with dg.vmap.")
    otypes = vf.otypes or [None] * len(results)
    if len(otypes) != len(results):
        raise InvalidArgumentError(f"np.vectorize: {len(otypes)} otypes for a function of "
                                   f"{len(results)} outputs (at {user_location()})")
    shaped = []
    for r, ot in zip(results, otypes):
        r = as_array(r) if ot is None else astype(as_array(r), ot)
        shaped.append(broadcast_to(r, shape) if _shape(r) != shape else r)
    return tuple(shaped) if isinstance(out, tuple) else shaped[0]
