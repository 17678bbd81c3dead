"""Primitives and the rule registry.

A :class:`Primitive` carries everything the system knows about one op:

* ``impl(xp, *args, **params)``: the array-namespace-generic implementation (``xp`` is
  ``numpy`` or ``cupy``);
* ``abstract_eval(avals, **params)``: the shape/dtype rule;
* ``jvp(primals, tangents, **params) -> (out, out_tangent)`` and
  ``vjp(cotangent, primals, ans, **params) -> cotangents``, written in registry ops so that
  transforms compose (a tangent or cotangent of ``None`` is a symbolic zero);
* ``py``: a template for the generated Python source, ``c``: a C expression for fused
  kernels (elementwise ops only);
* ``rules``: the op's rule for each interpreter of :data:`RULE_KINDS` that does not derive
  it from the op's flags (``"vmap"``: batching, ``"separability"``: the proof behind
  ``hvp(batch_axes=...)``, ``"laplacian"``: the forward Laplacian, ``"fold"``: an exact identity
  applied where the op is recorded, e.g. ``x * 1`` is ``x``; ``"sparsity"``: the Jacobian
  and Hessian pattern detection; ``"taylor"``: Taylor mode of any order), attached with
  :func:`defrules` beside the op's derivatives;
* ``standalone``: for an op the generated source calls as ``ops.<name>``, the function an
  exported module defines for it, per library (:func:`defstandalone`);
* ``lowerings``: how a code generator lowers the op where its flags do not say
  (:data:`LOWERING_FORMS`), declared with :func:`deflowering` beside the op.

Example -- registering a new primitive (see ``docs/custom_rules.md`` for the whole story)::

    >>> import dualgpu as dg
    >>> cube = dg.defprim("cube", impl=lambda xp, x: x ** 3,
    ...                   abstract_eval=dg.core.primitives.same_as_first,
    ...                   jvp=lambda primals, tangents: (cube.bind(primals[0]),
    ...                                                  3 * primals[0] ** 2 * tangents[0]))
    >>> dg.jvp(cube, (np.array([2.0]),), (np.array([1.0]),))
    (array([8.]), array([12.]))
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..base.names import check_c_expression, check_identifier, check_py_template
from ..errors import DualgpuError
from .ir import Aval
from .trace import bind

REGISTRY: dict[str, Primitive] = {}
# The interpreters that ask an op for a rule of their own (``Primitive.rules``); each falls
# back on defaults by flag (elementwise, reduction, scan) for ops without one.
RULE_KINDS = ("vmap", "separability", "laplacian", "fold", "sparsity", "taylor")
# The code generators that ask an op how it is lowered (``Primitive.lowerings``), and the
# forms each one implements; an op without a form of a kind is lowered by its flags.
LOWERING_FORMS = {
    # strides over the input's memory, in a kernel and as a library step on CuPy:
    # permute (params perm), broadcast (to params shape), index (a key of slices, ints and
    # new axes; with index arrays it is no view)
    "view": ("permute", "broadcast", "index"),
    # an element of the output in the tiny kernel (codegen/tiny.py): matmul (a row times a
    # column), einsum (a sum over the contracted letters), concat (the input holding it)
    "tiny": ("matmul", "einsum", "concat"),
    # the CuPy launcher's library step, where not the op's impl: gemm (our product kernels
    # or cuBLAS, into the step's destination), sum_as_gemm (a sum over leading or trailing
    # axes as a product with ones), concat_in_place (inputs computed into their ranges)
    "library": ("gemm", "sum_as_gemm", "concat_in_place"),
    # an element of the output in a fused region kernel, read from the input's memory:
    # padded_read (scatter_add of a key of slices: the input's element where the index
    # falls in the slices, else zero -- the transpose of a slice, fused with its readers)
    "kernel": ("padded_read",),
}
# Primitives whose outputs carry no derivative (comparisons, sign, floor, ...).
NON_DIFFERENTIABLE: set[str] = set()
# Bumped whenever a registered primitive's definition is replaced (custom_op re-registration):
# a program built under an older version may have used the old definition.
_VERSION = [0]


def registry_version() -> int:
    """A counter that changes whenever a registered op's definition is replaced; cache keys
    and long-lived programs can include it to notice a re-registration."""
    return _VERSION[0]


def bump_registry_version() -> int:
    """Mark the registry as changed (see :func:`registry_version`); returns the new value."""
    _VERSION[0] += 1
    return _VERSION[0]


class Primitive:
    """One op of the registry (see the module docstring).

    Declared once in :mod:`dualgpu.ops` (implementation, shape rule, Python and C forms,
    flags); its derivative rules are attached by :mod:`dualgpu.rules` with
    :func:`defrules`.
    """

    def __init__(self, name: str, impl: Callable, abstract_eval: Callable, *,
                 jvp: Callable | None = None, vjp: Callable | None = None,
                 multiple_results: bool = False, kind: str = "generic",
                 py: str | Callable | None = None, c: str | None = None,
                 c_int: str | None = None, arity: int | None = None,
                 flags: frozenset | set | tuple = (), monoid: str | None = None,
                 differentiable: bool = True,
                 partials: Sequence[Callable] | None = None,
                 rules: dict[str, Callable] | None = None,
                 doc: str = ""):
        self.name = name
        self.impl = impl
        self.abstract_eval = abstract_eval
        self.jvp = jvp
        self.vjp = vjp
        self.multiple_results = multiple_results
        self.kind = kind
        self._flags = frozenset(flags)
        self.monoid = monoid
        self.py = py
        self.c = c
        self.c_int = c_int
        self.arity = arity
        self.rules: dict[str, Callable] = dict(rules or {})
        # library -> the op's function in an exported module (source text), or a reason
        # it cannot be exported for that library (see defstandalone)
        self.standalone: dict[str, str] = {}
        self.standalone_refused: dict[str, str] = {}
        self.lowerings: dict[str, str] = {}   # kind of LOWERING_FORMS -> form (deflowering)
        self.differentiable = differentiable
        self.partials = partials
        # Flag.MULTILINEAR: the positions of the linear operands (None: all)
        self.linear_operands: tuple[int, ...] | None = None
        # the modules that declared the op or gave it rules, flags or lowerings (one for a
        # built-in op: its block in dualgpu/ops/, tests/ops/test_op_blocks.py checks)
        self.sites: set[str] = set()
        self.__doc__ = doc

    def add_flags(self, *flags: str) -> None:
        """Give the op more :class:`Flag` properties (the rule helpers that state one:
        ``defmultilinear`` marks a product :data:`Flag.MULTILINEAR`)."""
        self.sites.add(equipping_module())
        self._flags = self._flags | frozenset(flags)

    @property
    def flags(self) -> frozenset[str]:
        """The op's :class:`Flag` properties, its kind included."""
        return self._flags | {self.kind}

    def rule(self, kind: str) -> Callable | None:
        """The op's own rule for interpreter ``kind`` (:data:`RULE_KINDS`), or None."""
        return self.rules.get(kind)

    def lowering(self, kind: str) -> str | None:
        """The op's form for code generator ``kind`` (:data:`LOWERING_FORMS`), or None."""
        return self.lowerings.get(kind)

    def has(self, flag: str) -> bool:
        """Whether the op has a property of :class:`Flag`."""
        return flag == self.kind or flag in self._flags

    def c_for(self, dtype: DTypeLike) -> str | None:
        """The C template for a kernel computing in ``dtype`` (integer and bool types may
        have their own form, with ``{T}`` standing for the C type)."""
        if self.c_int is not None and np.dtype(dtype).kind in "iub":
            return self.c_int
        return self.c

    @property
    def has_c_form(self) -> bool:
        """Whether kernels can compute the op: a C form for floating types (``c``) or for
        integers and bools (``c_int``; an op defined on those only, as ``bitwise_and``, has
        no ``c``)."""
        return self.c is not None or self.c_int is not None

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive: record it when an argument is traced, else compute now."""
        return bind(self, args, params)

    def __call__(self, *args: Any, **params: Any) -> Any:
        return self.bind(*args, **params)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def defrules(prim: Primitive, *, jvp: Callable | None = None, vjp: Callable | None = None,
             partials: Sequence[Callable] | None = None,
             **rules: Callable | None) -> Primitive:
    """Attach an op's rules to its declared primitive: derivatives (``jvp``, ``vjp``,
    ``partials``) and the rules of other interpreters by :data:`RULE_KINDS` name (``vmap=``,
    ``separability=``, ``laplacian=``...).

    The rule modules call this once per op; a rule given as ``None`` is left as it was.
    """
    unknown = sorted(set(rules) - set(RULE_KINDS))
    if unknown:
        raise DualgpuError(f"defrules({prim.name}): no interpreter is named {unknown[0]!r}; "
                           f"the rules an op can carry: jvp, vjp, partials, "
                           f"{', '.join(RULE_KINDS)}")
    prim.sites.add(equipping_module())
    if jvp is not None:
        prim.jvp = jvp
    if vjp is not None:
        prim.vjp = vjp
    if partials is not None:
        prim.partials = partials
    prim.rules.update({k: r for k, r in rules.items() if r is not None})
    return prim


def deflowering(prim: Primitive, **forms: str) -> Primitive:
    """Declare how code generators lower ``prim``, one form per kind of
    :data:`LOWERING_FORMS` (``view=``, ``tiny=``, ``library=``, ``kernel=``), beside the op's
    declaration; a generator asks ``prim.lowering(kind)``, never the op's identity.

    Example::

        >>> from dualgpu.ops.shape import transpose
        >>> transpose.lowering("view"), transpose.lowering("tiny")
        ('permute', None)
    """
    prim.sites.add(equipping_module())
    for kind, form in forms.items():
        if kind not in LOWERING_FORMS:
            raise DualgpuError(f"deflowering({prim.name}): no lowering kind is named "
                               f"{kind!r}; the kinds: {', '.join(LOWERING_FORMS)}")
        if form not in LOWERING_FORMS[kind]:
            raise DualgpuError(f"deflowering({prim.name}): {form!r} is not a form of "
                               f"{kind}=; the forms: {', '.join(LOWERING_FORMS[kind])}")
    prim.lowerings.update(forms)
    return prim


_ERRORS = DualgpuError.__module__  # the public API's wrappers that hide library frames


def equipping_module() -> str:
    """The module declaring an op or giving it rules: the first caller outside this module
    the rule kits (modules that set ``RULE_KIT = True``: ``deflinear`` in a kit equips the op
    of the module that calls it) and the wrappers of the public API."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") in (__name__, _ERRORS)
                                 or frame.f_globals.get("RULE_KIT")):
        frame = frame.f_back
    return "?" if frame is None else str(frame.f_globals.get("__name__", "?"))


def defstandalone(prim: Primitive, numpy: str, *, cupy: str | None = None,
                  cupy_refused: str | None = None) -> Primitive:
    """The function ``def <name>(...)`` an exported module (``dg.export``) defines for an op
    the generated source calls as ``ops.<name>``: ``numpy``'s text, written with ``xp``
    for the array library; ``cupy`` where the CuPy module needs another text, or
    ``cupy_refused``, the reason it cannot be exported for CuPy. Text, never run here: the
    export writes it into the module."""
    for text in (numpy, cupy):
        if text is not None and not text.startswith(f"def {prim.name}("):
            raise DualgpuError(f"defstandalone({prim.name}): the text must define "
                               f"{prim.name}(...)")
    prim.sites.add(equipping_module())
    prim.standalone["numpy"] = numpy
    prim.standalone["cupy"] = cupy if cupy is not None else numpy
    if cupy_refused is not None:
        prim.standalone_refused["cupy"] = cupy_refused
        del prim.standalone["cupy"]
    return prim


def refuse_export(prim: Primitive, why: str) -> Primitive:
    """Declare that ``dg.export`` cannot write ``prim`` into a module, for any library;
    ``why`` ends the export's error message."""
    prim.sites.add(equipping_module())
    prim.standalone.clear()
    prim.standalone_refused.update(numpy=why, cupy=why)
    return prim


def defprim(name: str, impl: Callable, abstract_eval: Callable, **kwargs: Any) -> Primitive:
    """Create a primitive and add it to the registry.

    Example::

        >>> double = defprim("double", lambda xp, x: 2 * x, same_as_first,
        ...                  jvp=lambda p, t: (double(p[0]),
        ...                                    None if t[0] is None else double(t[0])))
        >>> dg.jvp(lambda x: double(x), (np.ones(2),), (np.ones(2),))
        (array([2., 2.]), array([2., 2.]))
    """
    check_identifier(name, what="primitive name")
    if not callable(impl):
        raise DualgpuError(f"defprim {name!r}: impl must be callable, got {type(impl).__name__}")
    if not callable(abstract_eval):
        raise DualgpuError(f"defprim {name!r}: abstract_eval must be callable, got "
                           f"{type(abstract_eval).__name__}")
    for rule in ("jvp", "vjp", "batch"):
        if kwargs.get(rule) is not None and not callable(kwargs[rule]):
            raise DualgpuError(f"defprim {name!r}: {rule}= must be callable or None, got "
                               f"{type(kwargs[rule]).__name__}")
    # templates are printed into generated source: check them as we check names
    if isinstance(kwargs.get("py"), str):
        check_py_template(kwargs["py"], what=f"Python template of {name}")
    if kwargs.get("c") is not None:
        check_c_expression(kwargs["c"], arity=16)
    if name in REGISTRY:
        raise DualgpuError(f"a primitive named {name!r} is already registered")
    prim = Primitive(name, impl, abstract_eval, **kwargs)
    prim.sites.add(equipping_module())
    REGISTRY[name] = prim
    if not prim.differentiable:
        NON_DIFFERENTIABLE.add(name)
    return prim


def same_as_first(avals: Sequence[Aval], **params: Any) -> Aval:
    """Shape rule for ops whose output is shaped and typed like their first input."""
    a = avals[0]
    return Aval(tuple(a.shape), a.dtype, a.weak)
