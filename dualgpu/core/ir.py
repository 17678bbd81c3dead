"""The graph IR: variables, literals, equations and graphs.

A :class:`Graph` is a straight-line program: ``inputs`` are :class:`Var`, each equation
(:class:`Eqn`) applies one primitive to variables, :class:`Const` (closed-over arrays) or
:class:`Literal` (Python scalars) and binds fresh output variables. ``str(graph)`` prints it
as a short program; ``graph.nx`` and ``graph.to_dot()`` export it.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import GraphValidationError


class Aval(NamedTuple):
    """Abstract value: what the shape rules know of an array (``weak`` marks Python scalars)."""

    shape: tuple
    dtype: np.dtype
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def str_short(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{self.dtype.name}[{dims}]"


_ids = itertools.count()


class Var:
    """A graph variable (an input or the output of an equation)."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: Aval):
        self.aval = aval
        self.id = next(_ids)

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))

    def __repr__(self) -> str:
        return f"Var({self.id}:{self.aval.str_short()})"


class Const(Var):
    """A closed-over array (NumPy, CuPy or sparse) baked into the graph."""

    __slots__ = ("value",)

    def __init__(self, value: Any, aval: Aval):
        super().__init__(aval)
        self.value = value


def exact_key(value: Any) -> Any:
    """A hashable key under which two values are equal only if they are the same value:
    ``0.0`` and ``-0.0`` differ, and ``1`` differs from ``1.0`` and ``True``.

    >>> exact_key(0.0) == exact_key(-0.0), exact_key(1) == exact_key(1.0)
    (False, False)
    """
    t = type(value)
    if t is float:
        return (float, value.hex())
    if t is complex:
        return (complex, value.real.hex(), value.imag.hex())
    if isinstance(value, np.generic):
        return (t, value.dtype.str, value.tobytes())
    if t is tuple or t is list:
        return (t, tuple(exact_key(v) for v in value))
    if t is dict:
        return (dict, tuple(sorted((k, exact_key(v)) for k, v in value.items())))
    return (t, value)


class Literal:
    """A Python scalar used directly by an equation (weakly typed, as in NumPy)."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any):
        self.value = value
        dtype = np.result_type(value)
        if dtype.kind == "O" and isinstance(value, int):
            # an int beyond 64 bits: a weak integer all the same (NumPy promotes it with
            # floats, and raises an OverflowError with integer arrays), never an object
            dtype = np.dtype(np.int64)
        self.aval = Aval((), dtype, weak=True)

    shape = property(lambda self: ())
    dtype = property(lambda self: self.aval.dtype)
    ndim = 0

    def __repr__(self) -> str:
        return repr(self.value)


Atom = Var | Literal  # what an equation reads


@dataclass
class Eqn:
    """One primitive application: ``outs = prim(*inputs, **params)``."""

    prim: Any  # a Primitive (primitives.py, a layer above)
    inputs: list[Atom]
    params: dict[str, Any]
    outs: list[Var]
    source: str | None = None  # user file:line that produced this equation, if known


@dataclass
class Graph:
    """A traced program. Inputs and outputs are :class:`Var` (outputs may also be literals)."""

    inputs: list[Var]
    outputs: list[Atom]
    eqns: list[Eqn] = field(default_factory=list)
    name: str = "f"
    input_names: list[str] | None = None
    xp: Any = None  # numpy or cupy: the array library the graph was traced for
    output_names: list[str] | None = None  # roles of the outputs (value, grad x, ...), for people

    # ----------------------------------------------------------------- inspection
    @property
    def consts(self) -> list[Const]:
        """Constants used by the equations and outputs, in first-use order."""
        seen: dict[int, Const] = {}
        for eqn in self.eqns:
            for a in eqn.inputs:
                if isinstance(a, Const):
                    seen.setdefault(a.id, a)
        for a in self.outputs:
            if isinstance(a, Const):
                seen.setdefault(a.id, a)
        return list(seen.values())

    def primitive_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for eqn in self.eqns:
            counts[eqn.prim.name] = counts.get(eqn.prim.name, 0) + 1
        return counts

    def __repr__(self) -> str:
        return f"<dualgpu.Graph {self.name}: {len(self.inputs)} inputs, {len(self.eqns)} eqns>"

    # str(), the pictures, .nx, .to_dot() and .render() are installed by
    # dualgpu.core.pprint (the printer sits above the IR it prints)
    if TYPE_CHECKING:
        @property
        def nx(self) -> Any: ...  # a networkx.DiGraph

        def to_dot(self, plan: Any = None) -> str: ...

        def render(self, path: str) -> str: ...

    def validate(self) -> Graph:
        """Re-run every primitive's shape rule and check the recorded avals; return self."""
        validate(self)
        return self

    def with_consts_as_inputs(self, lifted: Any, at: int | None = None
                              ) -> tuple[Graph, list[Const]]:
        """``(graph, consts)``: this graph with the constants whose value ``lifted(value)``
        accepts read from new inputs, in ``consts``' order, inserted before input ``at``
        (after the others by default): a program that must read the values they hold now,
        not when it runs, is given copies.

        Example::

            >>> w = np.ones(2)
            >>> g, consts = dg.trace(lambda x: x * w, np.ones(2)).with_consts_as_inputs(
            ...     lambda v: isinstance(v, np.ndarray))
            >>> len(g.inputs), consts[0].value is w, g.consts
            (2, True, [])
        """
        consts = [c for c in self.consts if lifted(c.value)]
        if not consts:
            return self, []
        new = {c.id: Var(c.aval) for c in consts}

        def sub(a: Atom) -> Atom:
            return new.get(a.id, a) if isinstance(a, Const) else a

        eqns = [Eqn(e.prim, [sub(a) for a in e.inputs], e.params, e.outs, e.source)
                for e in self.eqns]
        at = len(self.inputs) if at is None else at
        inputs = self.inputs[:at] + [new[c.id] for c in consts] + self.inputs[at:]
        names = None if self.input_names is None else (
            self.input_names[:at] + [f"captured{i}" for i in range(len(consts))]
            + self.input_names[at:])
        graph = Graph(inputs, [sub(a) for a in self.outputs], eqns, self.name, names, self.xp,
                      self.output_names)
        return graph, consts


def validate(graph: Graph) -> None:
    defined: set[int] = {v.id for v in graph.inputs}
    for i, eqn in enumerate(graph.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var) and not isinstance(a, Const) and a.id not in defined:
                raise GraphValidationError(
                    f"equation {i} ({eqn.prim.name}) uses a variable defined nowhere before it")
        avals = eqn.prim.abstract_eval([a.aval for a in eqn.inputs], **eqn.params)
        if not eqn.prim.multiple_results:
            avals = [avals]
        if len(avals) != len(eqn.outs):
            raise GraphValidationError(f"equation {i} ({eqn.prim.name}): wrong output count")
        for got, want in zip(eqn.outs, avals):
            if tuple(got.aval.shape) != tuple(want.shape) or got.aval.dtype != want.dtype:
                raise GraphValidationError(
                    f"equation {i} ({eqn.prim.name}): recorded {got.aval.str_short()}, "
                    f"shape rule gives {want.str_short()}")
            defined.add(got.id)
    for a in graph.outputs:
        if isinstance(a, Var) and not isinstance(a, Const) and a.id not in defined:
            raise GraphValidationError("a graph output is defined nowhere")
