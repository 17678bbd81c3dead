"""Graph clean-up: common-subexpression elimination, dead-code elimination, and the merge
of cotangent pieces scattered into disjoint slices (the VJP of unpacking a flat vector).

CSE and DCE treat every op alike. The merge is a pattern pass: it matches ``scatter_add``
into a slice and ``add`` of two pieces in the predicates at the top of the module, the one
place that asks which op an equation applies, and builds ``concatenate`` and ``reshape``.
"""
from __future__ import annotations

from ..core.ir import Atom, Aval, Const, Eqn, Graph, Literal, Var, exact_key
from ..ops.elementwise import add
from ..ops.shape import concatenate, reshape, scatter_add


# ------------------------------------------------------------------ the merge's patterns
def _is_sum(eqn) -> bool:
    """An add of two operands."""
    return eqn.prim is add and len(eqn.inputs) == 2


def _slice_piece(eqn, length):
    """``(start, stop, value)`` when ``eqn`` scatters ``value`` into ``[start:stop]`` of the
    first axis of zeros, else None."""
    if eqn is None or eqn.prim is not scatter_add or len(eqn.inputs) != 1 \
            or not isinstance(eqn.inputs[0], Var):
        return None
    key = eqn.params["key"]
    if not key or key[0] is None or any(e != ("slice", None, None, None) for e in key[1:]):
        return None
    if key[0][0] == "int":  # x[i]: a piece of length one, without its leading axis
        i = key[0][1] % length
        return (i, i + 1, eqn.inputs[0])
    if key[0][0] != "slice" or key[0][3] not in (None, 1):
        return None
    start, stop, _ = slice(key[0][1], key[0][2]).indices(length)
    return (start, stop, eqn.inputs[0]) if stop > start else None


def _atom_key(a):
    """A hashable key of an equation input: variables (and constants) by id, literals by
    their exact value (``x * 0.0`` and ``x * -0.0`` are different equations)."""
    if isinstance(a, Literal):
        return ("lit", exact_key(a.value))
    return a.id  # Var and Const ids come from one counter


def _params_key(params):
    try:
        key = tuple(sorted((name, exact_key(v)) for name, v in params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def cse(graph: Graph) -> Graph:
    """Merge equations that apply the same primitive to the same inputs and params."""
    rename: dict[int, Var] = {}
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = eqn.inputs
        if rename and any(isinstance(a, Var) and a.id in rename for a in inputs):
            inputs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in inputs]
            eqn = Eqn(eqn.prim, inputs, eqn.params, eqn.outs, eqn.source)
        pkey = _params_key(eqn.params)
        if pkey is None:
            eqns.append(eqn)
            continue
        key = (eqn.prim.name, tuple(map(_atom_key, inputs)), pkey)
        hit = seen.get(key)
        if hit is not None:
            for v, w in zip(eqn.outs, hit.outs):
                rename[v.id] = w
            continue
        seen[key] = eqn
        eqns.append(eqn)
    outputs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in graph.outputs]
    return replace_uses(graph, eqns, outputs)


def dce(graph: Graph) -> Graph:
    """Drop equations none of whose outputs reach a graph output."""
    live = {a.id for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if any(v.id in live for v in eqn.outs):
            kept.append(eqn)
            for a in eqn.inputs:
                if isinstance(a, Var):
                    live.add(a.id)
    kept.reverse()
    return replace_uses(graph, kept, graph.outputs)


def replace_uses(graph: Graph, eqns, outputs) -> Graph:
    return Graph(graph.inputs, list(outputs), eqns, name=graph.name,
                 input_names=graph.input_names, xp=graph.xp)


class _PieceSum:
    """A sum of scatter pieces, kept as a binary tree so that building the sums of a long
    chain of adds costs O(1) per add; :meth:`flat` lists the pieces only when needed."""

    __slots__ = ("left", "right", "piece", "length")

    def __init__(self, left=None, right=None, piece=None):
        self.left, self.right, self.piece = left, right, piece
        self.length = piece[1] - piece[0] if piece is not None else left.length + right.length

    def flat(self) -> list:
        """The pieces, left to right (an explicit stack: chains may be very deep)."""
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            if node.piece is not None:
                out.append(node.piece)
            else:
                stack.append(node.right)
                stack.append(node.left)
        return out


def _piece_sums(graph: Graph) -> dict:
    """Var id -> :class:`_PieceSum` for every variable that is a scatter piece, or an add of
    two such variables of its own shape, in one forward pass."""
    sums: dict[int, _PieceSum] = {}
    for eqn in graph.eqns:
        out = eqn.outs[0] if eqn.outs else None
        if out is None or out.ndim < 1:
            continue
        if _is_sum(eqn):
            same = [_is_var(a) and tuple(a.shape) == tuple(out.shape) for a in eqn.inputs]
            left, right = (sums.get(a.id) if ok and isinstance(a, Var) else None
                           for a, ok in zip(eqn.inputs, same))
            if left is not None and right is not None:
                sums[out.id] = _PieceSum(left, right)
            continue
        piece = _slice_piece(eqn, out.shape[0])
        if piece is not None:
            sums[out.id] = _PieceSum(piece=piece)
    return sums


def _is_var(a: Atom) -> bool:
    return isinstance(a, Var) and not isinstance(a, Const)


def merge_slice_scatters(graph: Graph) -> Graph:
    """Replace a sum of ``scatter_add`` pieces that tile the first axis exactly by one
    ``concatenate``.

    The gradient of ``f(p)`` where ``f`` unpacks a flat ``p`` into ``p[:n1]``, ``p[n1:n2]``,
    ... is the sum of each piece's cotangent scattered into zeros: one zeros array and one
    add per piece. Concatenating the pieces gives the same array in one op. Linear in the
    number of equations: a sum is listed only when its pieces' lengths add up to the axis.
    """
    sums = _piece_sums(graph)
    eqns: list[Eqn] = []
    changed = False
    for eqn in graph.eqns:
        done = eqn.outs and eqn.outs[0].id in sums and _merge_one(eqn, sums, eqns)
        if not done:
            eqns.append(eqn)
        changed = changed or bool(done)
    return replace_uses(graph, eqns, graph.outputs) if changed else graph


def _merge_one(eqn, sums: dict, eqns: list) -> bool:
    """Append the rewrite of ``eqn`` (a piece, or a sum of pieces) to ``eqns`` if it has
    one; return whether it did."""
    out = eqn.outs[0]
    n = out.shape[0]
    total = sums[out.id]
    if not _is_sum(eqn):   # a piece
        if total.piece[:2] != (0, n):
            return False
        # a scatter that covers the whole array is a reshape (x[0] of a (1, n) array)
        eqns.append(Eqn(reshape, [total.piece[2]], {"new_shape": tuple(out.shape)}, [out],
                        eqn.source))
        return True
    if total.length != n:
        return False
    found = sorted(total.flat(), key=lambda p: p[0])
    if not _tiles(found, n) or any(v.dtype != out.dtype for _, _, v in found):
        return False
    parts = []
    for start, stop, v in found:
        if v.ndim < out.ndim:  # an x[i] piece: give it back its axis
            v = _reshaped(v, (stop - start,) + tuple(out.shape[1:]), eqns, eqn.source)
        parts.append(v)
    eqns.append(Eqn(concatenate, parts, {"axis": 0}, [out], eqn.source))
    return True


def _reshaped(v, shape, eqns, source):
    out = Var(Aval(tuple(shape), v.dtype))
    eqns.append(Eqn(reshape, [v], {"new_shape": tuple(shape)}, [out], source))
    return out


def _tiles(found, length) -> bool:
    pos = 0
    for start, stop, _ in found:
        if start != pos:
            return False
        pos = stop
    return pos == length


def simplify(graph: Graph) -> Graph:
    """CSE, the merge of scattered slices, then DCE.

    Example::

        >>> print(simplify(dg.trace(lambda x: np.sin(x) + np.sin(x), np.ones(3))))
        { lambda x:float64[3] .
          t0:float64[3] = sin x
          t1:float64[3] = add t0 t0
          in ( t1 ) }
    """
    return dce(merge_slice_scatters(cse(graph)))
