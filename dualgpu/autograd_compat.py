"""autograd's spellings, for code and habits brought over from autograd (docs/coming_from.md).

``elementwise_grad`` (and its alias ``deriv``), ``hessian_vector_product`` and ``make_hvp``
are dualgpu transforms under autograd's names, and :func:`accepts_argnum` lets the
transforms that take ``argnums=`` also take autograd's ``argnum=`` (``dualgpu/__init__.py``
applies it to the public ones). Names of autograd, JAX and torch.func that dualgpu spells
differently are in :data:`FOREIGN_NAMES`: ``dg.<name>`` raises an ``AttributeError`` that
gives dualgpu's spelling.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from . import lax
from .api.custom_derivatives import custom_vjp
from .api.custom_op import is_value
from .api.differentiation import grad, hvp
from .base import tree as pytree
from .base.cache import PROGRAMS, identity_key
from .errors import (
    AxisError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedOpError,
    user_location,
)
from .frontend.namespace import rebind_function
from .runtime.tracing import check_call, name_of, rebindable


def accepts_argnum(transform: Callable) -> Callable:
    """``transform`` (a function taking ``argnums=``) that also takes autograd's
    ``argnum=`` for it, as an alias.

    Example::

        >>> f = lambda x, y: np.sum(x * y ** 2)
        >>> dg.grad(f, argnum=1)(np.ones(2), np.array([1.0, 2.0]))
        array([2., 4.])
    """
    @functools.wraps(transform)
    def with_argnum(*args, argnum=None, **kwargs):
        if argnum is not None:
            if "argnums" in kwargs or len(args) > 1:
                raise InvalidArgumentError(
                    f"{transform.__name__}: give argnums= (dualgpu's and JAX's name) or "
                    "autograd's argnum=, not both")
            kwargs["argnums"] = argnum
        return transform(*args, **kwargs)

    return with_argnum


class _SummedOutput:
    """``sum(fn(*args, **kwargs))``: what :func:`elementwise_grad` differentiates."""

    _dualgpu_transform = True  # guards and names look through to fn

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = f"sum_of_{name_of(fn)}"

    def __call__(self, *args, **kwargs):
        check_call(self.fn, args, kwargs)
        return lax.sum(rebind_function(rebindable(self.fn))(*args, **kwargs))


# one wrapper per function (an entry of the one cache), so that elementwise_grad(f) made
# anew reuses its program
SUMMED = "autograd elementwise_grad wrapper"


def elementwise_grad(fn: Callable, argnum: int = 0) -> Callable:
    """autograd's ``elementwise_grad``: the gradient of ``sum(fn(*args))`` with respect to
    argument ``argnum`` -- for an elementwise ``fn``, its derivative at every element (the
    diagonal of the Jacobian). ``dg.grad(lambda *a: np.sum(fn(*a)), argnums)`` in dualgpu's
    terms; a function of other shapes gives the vector-Jacobian product with ones, as in
    autograd.

    Example::

        >>> dg.elementwise_grad(np.tanh)(np.array([0.0, 1.0]))
        array([1.        , 0.41997434])
    """
    if not callable(fn):
        raise InvalidArgumentError(f"elementwise_grad expects a function, got "
                                   f"{type(fn).__name__}")
    summed = PROGRAMS.get_or_build((SUMMED, identity_key(fn)), lambda: _SummedOutput(fn))
    return grad(summed, argnums=argnum)


deriv = elementwise_grad  # autograd's other name for it


def hessian_vector_product(fn: Callable, argnum: int = 0) -> Callable:
    """autograd's ``hessian_vector_product``: ``(*args, v) -> H·v``, the Hessian of ``fn``
    with respect to argument ``argnum``; ``dg.hvp(fn, argnums=argnum)``.

    Example::

        >>> hvp = dg.hessian_vector_product(lambda x: np.sum(x ** 3))
        >>> hvp(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
        array([ 6., 12.])
    """
    return hvp(fn, argnums=argnum)


def make_hvp(fn: Callable, argnum: int = 0) -> Callable:
    """autograd's ``make_hvp``: ``make_hvp(fn)(*args) -> (v -> H·v, gradient)`` at the point
    ``args``; the products are ``dg.hvp(fn, argnums=argnum)`` at that point.

    Example::

        >>> hvp_at, g = dg.make_hvp(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        >>> g, hvp_at(np.array([1.0, 0.0]))
        (array([ 3., 12.]), array([6., 0.]))
    """
    product = hvp(fn, argnums=argnum)
    gradient = grad(fn, argnums=argnum)

    def at(*args, **kwargs):
        def hvp_at(v):
            return product(*args, v, **kwargs)

        return hvp_at, gradient(*args, **kwargs)

    return at


def _static(arg) -> bool:
    """An argument that autograd never boxes: one that is not a (pytree of) number(s) or
    array(s) -- a function, a string, None -- or an integer (a size, a count: autograd
    differentiates floats; an integer has no derivative)."""
    if isinstance(arg, (int, np.integer)):
        return True
    leaves, _ = pytree.flatten(arg)
    return not leaves or not all(is_value(leaf) for leaf in leaves)


class _Primitive(custom_vjp):
    """autograd's primitive: arguments that are not arrays (functions, strings...) are
    static, as if in ``nondiff_argnums``, decided per call (autograd boxes only values).
    It runs without rules (differentiating it then raises); :func:`defvjp` gives its
    reverse rule, :func:`defjvp` its forward rule (either one is enough, as for
    ``dg.custom_op``: the other is its transpose)."""

    def __init__(self, fn: Callable):
        super().__init__(fn)
        self.jvp_makers: dict[int, Callable] = {}

    def _nondiff_positions(self, args: tuple) -> tuple:
        return tuple(i for i, a in enumerate(args) if _static(a))

    def defjvp_makers(self, makers: dict[int, Callable]) -> None:
        """Set the forward rule: autograd's jvp makers by argument position."""
        self.jvp_makers = makers
        self._new_rules()

    def _rules_given(self) -> bool:
        return True

    def _rules(self, nondiff, merge) -> dict:
        rules = super()._rules(nondiff, merge) if self.fwd is not None else {}
        if self.jvp_makers:
            rules["jvp"] = _JvpMakers(self, merge)
        return rules


class _JvpMakers:
    """custom_op's ``jvp(primals, tangents, ans)`` from autograd's jvp makers: the sum of
    ``maker_i(tangent_i, ans, *args)`` over the differentiable arguments with a maker."""

    def __init__(self, owner: _Primitive, merge):
        self.owner, self.merge = owner, merge

    def __call__(self, primals, tangents, ans, out_tree=None):
        args = self.merge.args(primals)
        positions = [i for i in range(len(args)) if i not in self.merge.nums]
        out = ans if out_tree is None else pytree.unflatten(out_tree, list(ans))
        makers = self.owner.jvp_makers
        parts = [rebind_function(rebindable(makers[i]))(t, out, *args)
                 for i, t in zip(positions, self.merge.diff_args(tangents)) if i in makers]
        total = functools.reduce(lambda a, b: pytree.tree_map(lambda x, y: x + y, a, b),
                                 parts) if parts else pytree.tree_map(lax.zeros_like, out)
        return total if out_tree is None else tuple(pytree.leaves(total))


def primitive(fn: Callable) -> custom_vjp:
    """autograd's ``@primitive``: ``fn``, whose derivatives :func:`defvjp` (reverse) and
    :func:`defjvp` (forward) give, as ``dg.custom_vjp(fn)`` (import them from here:
    ``dg.primitive`` is not dualgpu's name). Its arguments that are not arrays or numbers
    (a function, a string) and its integers (a size) are static, as with
    ``nondiff_argnums``. Without rules it runs, and differentiating it raises. Its body runs
    on the values, as autograd's (it may write into NumPy arrays or call C functions).

    Example::

        >>> from dualgpu.autograd_compat import primitive, defvjp
        >>> @primitive
        ... def cube(x):
        ...     return x ** 3
        >>> defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
        >>> dg.grad(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0]))
        array([ 3., 12.])
    """
    if not callable(fn):
        raise InvalidArgumentError(f"primitive expects a function, got {type(fn).__name__}")
    return _Primitive(fn)


def _makers(what: str, fn: Callable, makers: tuple, argnums) -> dict:
    """``{argument position: maker}`` of ``defvjp``/``defjvp``'s makers (None: none)."""
    nums = tuple(range(len(makers))) if argnums is None else tuple(argnums)
    if len(nums) != len(makers):
        raise InvalidArgumentError(f"{what} of {name_of(fn)}: {len(makers)} {what[3:]} makers "
                                   f"for {len(nums)} argnums {nums}")
    for m in makers:
        if m is not None and not callable(m):
            raise InvalidArgumentError(f"{what} of {name_of(fn)}: a maker must be a function "
                                       f"or None, got {m!r:.40}")
    return {i: m for i, m in zip(nums, makers) if m is not None}


def _numpy_function(fn) -> bool:
    """A function of NumPy or SciPy (dualgpu differentiates those by its own rules)."""
    module = getattr(fn, "__module__", None) or ""
    return isinstance(fn, np.ufunc) or module.split(".")[0] in ("numpy", "scipy")


def defvjp(fn: custom_vjp, *vjpmakers: Callable | None, argnums=None) -> None:
    """autograd's ``defvjp(fn, maker_0, maker_1, ...)``: ``maker_i(ans, *args)`` returns
    ``g -> `` the cotangent of argument ``argnums[i]`` (``i`` by default) for the output's
    cotangent ``g``; an argument without a maker (or with ``None``) gets zero. The makers'
    NumPy calls are traced as the function's are."""
    if not isinstance(fn, custom_vjp):
        raise InvalidArgumentError(
            f"defvjp expects a function decorated with primitive, got {name_of(fn)} "
            "(decorate it with dualgpu.autograd_compat.primitive first)")
    # rebound at each use (as a trace does its function): one made now would keep the
    # globals it replaced (an array, a function) as they were at defvjp
    makers = {i: rebindable(m)
              for i, m in _makers("defvjp", fn, vjpmakers, argnums).items()}

    def fwd(*args):  # the op again (not its body: that may branch on values)
        ans = fn(*args)
        return ans, (ans, args)

    def bwd(*static_residuals_g):  # static arguments first (those of _Primitive's call)
        (ans, args), g = static_residuals_g[-2:]
        return tuple(rebind_function(makers[i])(ans, *args)(g) if i in makers else None
                     for i in range(len(args)) if not _static(args[i]))

    fn.defvjp(fwd, bwd)


def defjvp(fn: custom_vjp, *jvpmakers: Callable | None, argnums=None) -> None:
    """autograd's ``defjvp(fn, maker_0, maker_1, ...)``: ``maker_i(g, ans, *args)`` is the
    output's tangent from the tangent ``g`` of argument ``argnums[i]`` (``i`` by default);
    the output's tangent is their sum (an argument without a maker contributes zero). With
    no :func:`defvjp`, reverse mode transposes it. Of a NumPy or SciPy function (autograd
    programs add forward rules to autograd's own primitives) it does nothing: dualgpu
    differentiates those by its own rules, in both modes.

    Example::

        >>> from dualgpu.autograd_compat import primitive, defjvp
        >>> @primitive
        ... def cube(x):
        ...     return x ** 3
        >>> defjvp(cube, lambda g, ans, x: 3 * g * x ** 2)
        >>> dg.jvp(cube, (np.array([1.0, 2.0]),), (np.ones(2),))[1]
        array([ 3., 12.])
    """
    if _numpy_function(fn) and not isinstance(fn, _Primitive):
        return
    if not isinstance(fn, _Primitive):
        raise InvalidArgumentError(
            f"defjvp expects a function decorated with primitive, got {name_of(fn)} "
            "(decorate it with dualgpu.autograd_compat.primitive first)")
    fn.defjvp_makers(_makers("defjvp", fn, jvpmakers, argnums))


# name elsewhere -> how dualgpu spells it
FOREIGN_NAMES = {
    "make_vjp": "dg.vjp(f, *primals) -> (out, pullback) (autograd's make_vjp(f)(x) is "
                "(pullback, out))",
    "make_jvp": "dg.jvp(f, primals, tangents) -> (out, tangent_out)",
    "vector_jacobian_product": "dg.vjp(f, *primals)[1](v)",
    "tensor_jacobian_product": "dg.vjp(f, *primals)[1](v)",
    "grad_and_aux": "dg.grad(f, has_aux=True) -> (gradient, aux)",
    "holomorphic_grad": "dg.grad(f, holomorphic=True)",
    "make_ggnvp": "dg.jvp and dg.vjp (a Gauss-Newton product is J^T (H_out (J v)))",
    "multigrad_dict": "dg.grad(f, argnums=(0, 1, ...)) or a dict argument (a pytree)",
    "primitive": "dualgpu.autograd_compat.primitive (autograd's @primitive, with its "
                 "defvjp), or dg.custom_vjp / dg.custom_op (docs/custom_rules.md)",
    "defvjp": "dualgpu.autograd_compat.defvjp (autograd's, after its primitive), or "
              "dg.custom_vjp / dg.custom_op (docs/custom_rules.md)",
    "functional_call": "a plain function of a parameter pytree: dg.grad(loss)(params, x)",
    "grad_and_value": "dg.value_and_grad(f) -> (value, grad) (the reverse of torch.func's "
                      "order)",
    "checkpoint": "nothing: a program is planned whole (dg.config['recompute'] recomputes "
                  "cheap values inside kernels)",
}


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's ``autograd.numpy.make_diagonal`` (NumPy has no such function): the
    array whose last two axes hold ``D``'s last axis on their diagonal, zeros elsewhere
    (shape ``D.shape + D.shape[-1:]``). As autograd, only ``offset=0, axis1=-1,
    axis2=-2``.

    Example::

        >>> make_diagonal(np.array([1.0, 2.0]), axis1=-1, axis2=-2)
        array([[1., 0.],
               [0., 2.]])
    """
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise UnsupportedOpError(
            f"make_diagonal: offset={offset!r}, axis1={axis1!r}, axis2={axis2!r}; as "
            f"autograd's, only offset=0, axis1=-1, axis2=-2 (at {user_location()})")
    d = D if lax.is_tracer(D) else np.asarray(D)
    if not lax.shape_of(d):
        raise InvalidArgumentError(f"make_diagonal: D must have at least one axis, got a "
                                   f"0-d array (at {user_location()})")
    dt = np.result_type(lax.dtype_of(d), np.float64)  # autograd's float64, or complex
    d = d if lax.dtype_of(d) == dt else lax.astype(d, dt)
    n = lax.shape_of(d)[-1]
    return lax.where(lax.eye(n, dtype=bool), lax.expand_dims(d, -1), 0.0)


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """autograd's ``autograd.scipy.signal.convolve``: the convolution (the window flipped) of
    ``A`` and ``B`` along the axis pairs ``axes`` (all axes by default), contracted along the
    pairs ``dot_axes`` and outer along the others; the result's axes are ``A``'s others, then
    ``B``'s, then the convolved ones. ``mode`` is ``"full"``, ``"valid"`` or ``"same"``
    (``A``'s length, the middle of the full result, as autograd's). One ``conv`` op
    (:func:`dualgpu.lax.conv_general_dilated`, the larger operand as the signal), so
    derivatives of every order are convolutions.

    Example (a batch of two 1-channel images, three 2x2 filters)::

        >>> x, w = np.ones((2, 1, 4, 4)), np.ones((1, 3, 2, 2))
        >>> convolve(x, w, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid").shape
        (2, 3, 3, 3)
    """
    if mode not in ("full", "valid", "same"):
        raise UnsupportedOpError(f"convolve: mode={mode!r} is not supported: 'full', "
                                 f"'valid' or 'same' (at {user_location()})")
    a, b = (x if lax.is_tracer(x) or hasattr(x, "shape") else np.asarray(x) for x in (A, B))
    if mode == "same":  # the full convolution's middle, A's length along each convolved axis
        full = convolve(a, b, axes, dot_axes, "full")
        conv = list(zip(*axes)) if axes is not None else [(i, i) for i in range(np.ndim(a))]
        sa, sb = lax.shape_of(a), lax.shape_of(b)
        middle = tuple(slice((sb[j] - 1) // 2, (sb[j] - 1) // 2 + sa[i]) for i, j in conv)
        return full[(Ellipsis,) + middle]
    if axes is None:
        axes = (list(range(len(lax.shape_of(a)))),) * 2
    conv_a, conv_b = [list(axes[0]), list(axes[1])]
    dot_a, dot_b = [list(dot_axes[0]), list(dot_axes[1])]
    if len(conv_a) != len(conv_b) or len(dot_a) != len(dot_b):
        raise ShapeMismatchError(f"convolve: axes {axes} and dot_axes {dot_axes} must pair "
                                 f"the axes of A and B (at {user_location()})")
    sa, sb = lax.shape_of(a), lax.shape_of(b)
    (conv_a, dot_a), (conv_b, dot_b) = (_own_axes(conv, dot, len(shape), name)
                                        for conv, dot, shape, name in
                                        ((conv_a, dot_a, sa, "A"), (conv_b, dot_b, sb, "B")))
    for i, j in zip(dot_a, dot_b):
        if sa[i] != sb[j]:
            raise ShapeMismatchError(f"convolve: dot_axes pair axis {i} of A ({sa[i]}) with "
                                     f"axis {j} of B ({sb[j]}) (at {user_location()})")
    a_larger = all(sa[i] >= sb[j] for i, j in zip(conv_a, conv_b))
    if mode == "valid" and not a_larger and not all(
            sb[j] >= sa[i] for i, j in zip(conv_a, conv_b)):
        raise ShapeMismatchError("convolve: one array must be larger than the other along "
                                 f"all convolved axes in 'valid' mode (at {user_location()})")

    def as_nc(x, shape, conv, dot):   # (others, contracted, *convolved)
        other = [i for i in range(len(shape)) if i not in conv + dot]
        x = lax.transpose(x, tuple(other + dot + conv))
        flat = (math.prod(shape[i] for i in other), math.prod(shape[i] for i in dot))
        return lax.reshape(x, flat + tuple(shape[i] for i in conv)), [shape[i] for i in other]

    (xa, other_a), (xb, other_b) = as_nc(a, sa, conv_a, dot_a), as_nc(b, sb, conv_b, dot_b)
    signal, window = (xa, xb) if a_larger else (xb, xa)
    spatial = tuple(range(2, 2 + len(conv_a)))
    window = lax.flip(window, spatial) if spatial else window
    sizes = lax.shape_of(window)[2:]
    padding = [(k - 1, k - 1) if mode == "full" else (0, 0) for k in sizes]
    out = lax.conv_general_dilated(signal, window, (1,) * len(spatial), padding)
    if not a_larger:  # (B's others, A's others, ...): A's first
        out = lax.moveaxis(out, 1, 0)
    return lax.reshape(out, tuple(other_a) + tuple(other_b) + tuple(lax.shape_of(out)[2:]))


def _own_axes(conv: list, dot: list, ndim: int, name: str) -> tuple[list, list]:
    """``conv`` and ``dot``, axes of ``name`` (negative ones counted from the end), checked:
    in range, and each axis convolved or contracted once at most (autograd refuses an axis
    taken twice with a raw einsum error, or returns an accident of its einsum labels)."""
    out = []
    for arg, axes in (("axes", conv), ("dot_axes", dot)):
        for ax in axes:
            if not -ndim <= ax < ndim:
                raise AxisError(f"convolve: {arg} names axis {ax} of {name}, which has "
                                f"{ndim} axes (at {user_location()})")
        out.append([int(ax) % ndim for ax in axes])
    taken = out[0] + out[1]
    for ax in sorted({ax for ax in taken if taken.count(ax) > 1}):
        raise InvalidArgumentError(
            f"convolve: axes {conv} and dot_axes {dot} take axis {ax} of {name} twice; each "
            "axis is either convolved (axes) or contracted (dot_axes), once (at "
            f"{user_location()})")
    return out[0], out[1]


def foreign_name_error(module: str, name: str) -> AttributeError:
    """The ``AttributeError`` of ``dg.<name>`` for a name :data:`FOREIGN_NAMES` knows.

    Example::

        >>> print(foreign_name_error("dualgpu", "grad_and_aux"))
        module 'dualgpu' has no attribute 'grad_and_aux'; dualgpu spells it
        dg.grad(f, has_aux=True) -> (gradient, aux) (docs/coming_from.md)
    """
    return AttributeError(f"module {module!r} has no attribute {name!r}; dualgpu spells it "
                          f"{FOREIGN_NAMES[name]} (docs/coming_from.md)")
