"""The checks a transform makes of its function's graph and of a call's arguments: one
real scalar output (grad, hvp), JAX's rules for complex values and ``holomorphic``,
directions shaped like their primals, ``argnums`` and ``batch_axes`` normalised.

Example::

    >>> normalize_argnums((1, 0))
    ((1, 0), True)
    >>> check_bool(1, "has_aux", "dg.grad")
    Traceback (most recent call last):
    ...
    dualgpu.errors.ArgumentTypeError: dg.grad: has_aux must be True or False, got 1
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import lax
from ..backends import array_backend
from ..base.tree import TreeDef
from ..core.interpret import eval_graph
from ..core.ir import Graph
from ..core.trace import Tracer, trace_to_graph
from ..errors import (
    ArgumentTypeError,
    BackendMismatchError,
    DualgpuError,
    EscapedTracerError,
    NonScalarOutputError,
    ShapeMismatchError,
    user_location,
)
from .signature import FLOAT0, Signature, check_plain_values


def check_scalar_output(graph: Graph, tree: TreeDef | None, what: str,
                        holomorphic: bool | None = None) -> None:
    """One scalar output, real -- or complex with ``holomorphic=True`` (``None``: the
    transform has no holomorphic mode)."""
    if tree is None or not tree.is_leaf:
        raise NonScalarOutputError(
            f"{what} returns {tree}; grad and hvp need one scalar output (use has_aux=True "
            "to return more, or dg.vjp / dg.jacobian-style transforms)")
    out = graph.outputs[0]
    if tuple(out.shape) != ():
        raise NonScalarOutputError(
            f"{what} returns an array of shape {tuple(out.shape)}; grad and hvp need one "
            "scalar output. Reduce it (e.g. np.sum), or use dg.vjp or hvp(batch_axes=...)")
    if holomorphic is None and out.dtype.kind != "f":
        kind = "complex" if out.dtype.kind == "c" else "non-floating"
        raise NonScalarOutputError(
            f"{what} returns a {kind} scalar ({out.dtype}); grad and hvp need a real "
            "floating-point output (take np.real or np.abs of a complex value first)")
    if holomorphic is not None:
        check_complex_outputs(graph, what, holomorphic, "rev", NonScalarOutputError)


def size_one_as_scalar(graph: Graph, tree: TreeDef | None) -> tuple[Graph, tuple | None]:
    """``graph`` with its one output of size 1 but not of shape () (``np.dot(w, x)`` of
    shape ``(1,)``) made a scalar, and the shape it had (None when it was left alone):
    autograd's ``grad`` takes such an output (its gradient is that of its one element).

    Example::

        >>> g = dg.jit(lambda x: x[:1] * 2.0).graph(np.ones(3))
        >>> scalar, shape = size_one_as_scalar(g, None)
        >>> scalar.outputs[0].shape, shape
        ((), (1,))
    """
    if (tree is not None and not tree.is_leaf) or len(graph.outputs) != 1:
        return graph, None
    shape = tuple(graph.outputs[0].shape)
    if shape == () or int(np.prod(shape)) != 1:
        return graph, None
    return output_reshaped(graph, ()), shape


def output_reshaped(graph: Graph, shape: tuple, k: int = 0) -> Graph:
    """``graph`` with its output ``k`` reshaped to ``shape`` (of the same size)."""
    def run(*args: Any) -> list:
        outs = eval_graph(graph, list(args))
        outs[k] = lax.reshape(outs[k], shape)
        return outs

    new, _ = trace_to_graph(run, [v.aval for v in graph.inputs], graph.xp, name=graph.name,
                            input_names=graph.input_names)
    return new


def check_holomorphic(value: Any, what: str) -> bool:
    """``holomorphic`` is a bool (it selects the program: part of the cache key)."""
    return check_bool(value, "holomorphic", what)


def check_bool(value: Any, name: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{what}: {name} must be True or False, got {value!r}")
    return value


def check_complex_outputs(graph: Graph, what: str, holomorphic: bool, mode: str,
                           error: type[DualgpuError] = ArgumentTypeError) -> None:
    """JAX's rules for the outputs: with ``holomorphic=True`` every output is complex;
    without, reverse mode (``mode == "rev"``) refuses complex outputs, whose imaginary
    part a real cotangent would drop."""
    outs = graph.outputs
    for j, o in enumerate(outs):
        name = "the output" if len(outs) == 1 else f"output {j}"
        kind = o.dtype.kind
        if kind not in "fc" and mode == "rev":
            raise error(f"{what}: {name} has dtype {o.dtype} and cannot be differentiated "
                        "(only floating-point and complex outputs)")
        if holomorphic and kind != "c":
            raise error(
                f"{what} has holomorphic=True, but {name} is real ({o.dtype}): holomorphic "
                "differentiation is of complex functions of complex inputs; drop "
                "holomorphic=True for a real output")
        if not holomorphic and kind == "c" and mode == "rev":
            value = "a complex scalar" if tuple(o.shape) == () else "a complex array"
            label = f"{what} returns {value}" if len(outs) == 1 else f"{what}: {name} is complex"
            raise error(
                f"{label} ({o.dtype}); reverse mode differentiates real outputs, or "
                "complex ones with holomorphic=True (JAX's rule). Pass holomorphic=True "
                "(with complex inputs) for the complex derivative f'(z) of a holomorphic "
                "function; for a real loss of complex values take np.real or np.abs first; "
                "for the pullback of a complex output use dg.vjp (or dg.jacfwd for its "
                "Jacobian in a real input)")


def check_complex_inputs(graph: Graph, sig: Signature, what: str, holomorphic: bool,
                         mode: str) -> None:
    """JAX's rules for the differentiated inputs: complex with ``holomorphic=True``; real
    for forward mode (``mode == "fwd"``) without it."""
    names = graph.input_names or []
    for k, (v, d) in enumerate(zip(graph.inputs, sig.diff)):
        if not d:
            continue
        arg = sig.arg_of_input[k]
        name = f"argument {arg}" + (f" ({names[k]})" if k < len(names) and names[k] else "")
        if holomorphic and v.dtype.kind != "c":
            raise ArgumentTypeError(
                f"{what} has holomorphic=True, but {name} is real ({v.dtype}): the complex "
                "derivative needs complex inputs. Pass it as a complex array "
                "(x.astype(np.complex128)), or drop holomorphic=True")
        if not holomorphic and v.dtype.kind == "c" and mode == "fwd":
            raise ArgumentTypeError(
                f"{what}: {name} is complex ({v.dtype}); forward-mode Jacobians take real "
                "inputs, or complex ones with holomorphic=True (JAX's rule). Pass "
                "holomorphic=True for the complex derivative of a holomorphic function, or "
                "differentiate in the real and imaginary parts as two real arguments")


def check_complex(graph: Graph, sig: Signature, what: str, holomorphic: bool,
                  mode: str) -> None:
    """JAX's dtype rules of ``holomorphic`` for the Jacobians (``mode`` "rev" or "fwd")."""
    check_complex_outputs(graph, what, holomorphic, mode)
    check_complex_inputs(graph, sig, what, holomorphic, mode)


def check_direction(sig: Signature, k: int, v: Any, arg: int, what: str) -> Any:
    x = sig.inputs[k]
    v = sig.sparse.direction(k, v)
    if isinstance(v, (int, float, complex, np.number)) and not isinstance(v, bool):
        # a scalar tangent, real or complex: a 0-d array (its shape checked below)
        v = sig.backend.xp.asarray(v)
    if isinstance(v, Tracer):
        b = None
    else:
        check_plain_values(v, f"{what} for argument {arg}")
        b = array_backend(v)
        if b is None:
            raise ShapeMismatchError(f"the {what} for argument {arg} must be an array, got "
                                     f"{type(v).__name__}")
        if b is not sig.backend:
            raise BackendMismatchError(
                f"the {what} for argument {arg} is a {b.name} array but the arguments are "
                f"{sig.backend.name} arrays")
    if tuple(v.shape) != tuple(x.shape):
        raise ShapeMismatchError(
            f"the {what} for argument {arg} has shape {tuple(v.shape)}, but the argument has "
            f"shape {tuple(x.shape)}")
    if np.dtype(v.dtype).kind == "c" and np.dtype(x.dtype).kind != "c":
        raise ShapeMismatchError(f"the {what} for argument {arg} is complex ({v.dtype}), but "
                                 f"the argument is real ({x.dtype})")
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    return v


def check_float0_direction(sig: Signature, k: int, v: Any, arg: int, what: str) -> None:
    """JAX's rule for an integer (or bool) input: its tangent is a ``float0`` array of its
    shape (an integer has no perturbation to carry)."""
    x = sig.inputs[k]
    dtype = getattr(v, "dtype", None)
    shape = tuple(getattr(v, "shape", np.shape(v)))
    if dtype is None or np.dtype(dtype) != FLOAT0 or shape != tuple(x.shape):
        got = (f"{type(v).__name__}" if dtype is None
               else f"{np.dtype(dtype) if np.dtype(dtype) != FLOAT0 else 'float0'}{list(shape)}")
        raise ArgumentTypeError(
            f"the {what} for argument {arg} goes with an integer primal ({x.dtype}"
            f"{list(x.shape)}), so it must be a float0 array of the primal's shape, as in JAX; "
            f"got {got}. Pass np.zeros({tuple(x.shape)}, dtype=dg.float0) (or make the "
            "primal floating point to perturb it)")


def normalize_argnums(argnums: Any) -> tuple[tuple[int, ...], bool]:
    """``(argnums as a tuple, whether it was one)``; negative entries count from the end
    of the positional arguments (resolved per call: :meth:`Transformed._resolved`)."""
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in nums):
        raise ArgumentTypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    return tuple(int(i) for i in nums), not single


def normalize_batch_axes(batch_axes: Any) -> tuple[int, ...] | None:
    if batch_axes is None:
        return None
    axes = (batch_axes,) if isinstance(batch_axes, (int, np.integer)) else batch_axes
    if not isinstance(axes, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise ArgumentTypeError(f"batch_axes must be an int or a tuple of ints, got "
                                f"{batch_axes!r}")
    return tuple(int(a) for a in axes)


def is_integer_like(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "iub"


def diff_flags(sig: Signature, graph: Graph) -> list[bool]:
    """The differentiated-input flags of ``graph`` (inputs captured from an enclosing
    trace come last and are not differentiated)."""
    return list(sig.diff) + [False] * (len(graph.inputs) - len(sig.diff))


def check_alive(values: Sequence[Any], what: str) -> None:
    """Refuse a traced value among ``values`` whose trace has finished (JAX's
    ``UnexpectedTracerError``): ``what`` (a transform) was called on an escaped tracer."""
    for v in values:
        if isinstance(v, Tracer) and not v._builder.alive:
            raise EscapedTracerError(
                f"{what} was called at {user_location()} on a traced value "
                f"({v.aval.str_short()}) whose trace has finished: a tracer escaped a traced "
                "function (stored in a global, a list or an attribute). Return the value from "
                "that function instead.")
