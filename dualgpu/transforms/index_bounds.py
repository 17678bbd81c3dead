"""Index bounds as one more output, for array libraries whose gathers do not check their
indices (CuPy's wrap around, where NumPy's raise ``IndexError``).

:func:`with_index_bounds` appends to a program with gathers or scatters whose index arrays
it receives (arguments, or values computed from them) the equations of one small vector:
the smallest and the largest index of each such array, as int64. The program computes it on
the device with its other outputs (a CUDA graph captures it as one more output slot); the
executor reads it back after the call -- one copy to the host, for these programs only --
and :func:`first_out_of_bounds` says which index, if any, lies outside ``[-n, n)``: NumPy's
message, which :func:`out_of_bounds_error` turns into the
:class:`~dualgpu.errors.IndexOutOfBoundsError` a program on NumPy raises. Programs without
such index arrays are left alone: ``None``, nothing appended.

Constant index arrays (closed over: known when the program is built) are checked here,
once, on the host; a program reading one out of range raises when it is built. Index arrays
in range by construction (an argsort's permutation gathering along its own axis, as the
derivatives of ``np.sort`` do: ops flagged ``Flag.INDICES_OF_AXIS``) are not checked.

    >>> g = dg.trace(lambda x, i: x[i], np.ones(3), np.array([0, 2]))
    >>> checked = with_index_bounds(g)
    >>> [(s.axis, s.size) for s in checked.sites], len(checked.graph.outputs)
    ([(0, 3)], 2)
    >>> first_out_of_bounds(checked.sites, np.array([-4, 2]))
    'index -4 is out of bounds for axis 0 with size 3'
    >>> with_index_bounds(dg.trace(lambda x: x[np.array([0, 2])], np.ones(3))) is None
    True
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import lax
from ..core.flags import Flag
from ..core.indexing import key_array_axes, key_has_arrays
from ..core.interpret import user_lines
from ..core.ir import Const, Eqn, Graph, Var
from ..core.trace import trace_to_graph
from ..errors import IndexOutOfBoundsError


class IndexSite(NamedTuple):
    """An index array read at run time: the axis it indexes and that axis's size ``n``; its
    smallest index is ``bounds[2 k]``, its largest ``bounds[2 k + 1]`` for the ``k``-th site."""

    axis: int
    size: int
    source: str | None


class IndexBounds(NamedTuple):
    """The program with its index bounds as its last output, and the sites in their order."""

    graph: Graph
    sites: tuple


def indexing_eqns(graph: Graph) -> list:
    """The equations of ``graph`` that read index arrays (gathers and scatters)."""
    return [q for q in graph.eqns if key_has_arrays(q.params.get("key", ()))]


def _operands(eqn):
    """``(index array, axis, size of that axis)`` for each index array ``eqn`` reads: a
    gather indexes its first input, a scatter (``scatter_add``) the array of its ``shape``."""
    shape = eqn.params.get("shape", eqn.inputs[0].aval.shape)
    for k, axis in key_array_axes(eqn.params["key"]).items():
        yield eqn.inputs[1 + k], axis, int(shape[axis])


def _in_range_by_construction(a: Var, n: int, producers: dict) -> bool:
    """Whether the index array ``a`` holds only indices in ``[0, n)`` whatever the inputs: the
    output of an op that gives indices of an axis (argsort, argmax) no longer than ``n``."""
    eqn = producers.get(a.id)
    return eqn is not None and eqn.prim.has(Flag.INDICES_OF_AXIS) and \
        eqn.inputs[0].aval.shape[eqn.params["axis"]] <= n


def with_index_bounds(graph: Graph) -> IndexBounds | None:
    """``graph`` with one more output, the int64 vector of the smallest and largest index of
    each index array it reads at run time (:class:`IndexSite`, in order); None when it reads
    none. Constant index arrays are checked now: one out of range raises
    :class:`~dualgpu.errors.IndexOutOfBoundsError`."""
    sites, arrays, seen = [], [], set()
    producers = {v.id: q for q in graph.eqns for v in q.outs}
    for eqn in indexing_eqns(graph):
        for a, axis, n in _operands(eqn):
            if a.aval.size == 0 or (a.id, axis, n) in seen:
                continue
            seen.add((a.id, axis, n))
            if isinstance(a, Const):
                _check_constant(graph, a.value, axis, n)
            elif isinstance(a, Var) and not _in_range_by_construction(a, n, producers):
                sites.append(IndexSite(axis, n, eqn.source))
                arrays.append(a)
    if not arrays:
        return None

    def bounds(*indices):
        parts = []
        with user_lines() as at:
            for site, i in zip(sites, indices):
                at(site)  # the user's line of the gather
                i = lax.astype(i, np.int64)   # cast inside the reductions' kernel
                parts += [lax.min(i), lax.max(i)]
        return lax.stack(parts)

    check, _ = trace_to_graph(bounds, [a.aval for a in arrays], graph.xp,
                              name=f"{graph.name}_index_bounds")
    rename = {v.id: a for v, a in zip(check.inputs, arrays)}
    eqns = [Eqn(q.prim, [rename.get(a.id, a) if isinstance(a, Var) else a for a in q.inputs],
                q.params, q.outs, q.source) for q in check.eqns]
    names = None if graph.output_names is None else [*graph.output_names, "index bounds"]
    checked = Graph(list(graph.inputs), [*graph.outputs, check.outputs[0]],
                    [*graph.eqns, *eqns], name=graph.name, input_names=graph.input_names,
                    xp=graph.xp, output_names=names)
    return IndexBounds(checked, tuple(sites))


def first_out_of_bounds(sites, bounds) -> str | None:
    """NumPy's message for the first site whose bounds (host values, as
    :func:`with_index_bounds` lays them out) hold an index outside ``[-n, n)``; else None."""
    for k, site in enumerate(sites):
        lo, hi = int(bounds[2 * k]), int(bounds[2 * k + 1])
        bad = hi if hi >= site.size else lo if lo < -site.size else None
        if bad is not None:
            return f"index {bad} is out of bounds for axis {site.axis} with size {site.size}"
    return None


def out_of_bounds_error(graph: Graph, e) -> IndexOutOfBoundsError:
    """NumPy's ``IndexError`` (or its message) of a gather or scatter whose indices the
    program received (or computed) as an :class:`~dualgpu.errors.IndexOutOfBoundsError`
    naming the user's lines of the indexing operations."""
    lines = sorted({q.source or "<unknown location>" for q in indexing_eqns(graph)})
    where = f" at {', '.join(lines)}" if lines else ""
    return IndexOutOfBoundsError(
        f"{graph.name}: {e} -- an index array given to the program (or computed from its "
        f"arguments) holds an index outside [-n, n) for an axis of size n, indexed{where}; "
        f"NumPy raises this IndexError too: check the indices, or clip/wrap them "
        f"(np.take(..., mode='clip'))")


def _check_constant(graph: Graph, value, axis: int, n: int) -> None:
    """A closed-over index array (NumPy's or CuPy's: its bounds copied to the host) checked
    against the axis size ``n`` when the program is built."""
    lo, hi = int(value.min()), int(value.max())
    message = first_out_of_bounds([IndexSite(axis, n, None)], (lo, hi))
    if message is not None:
        raise out_of_bounds_error(graph, message)
