"""What an op's sparsity rule works with (the pattern detection of
:mod:`dualgpu.transforms.sparsity`, behind ``dg.jacobian_sparsity`` and ``dg.hessian_sparsity``).

Every value that depends on the differentiated input carries its **dependencies**: a
``scipy.sparse`` CSR matrix with one row per entry of the value (flattened, C order) and one
column per entry of the input, nonzero where the entry may depend on that input entry (for
*some* input value: the patterns are global). A value that does not depend on the input has
``None``.

A sparsity rule is ``rule(eqn, deps, ctx) -> dep`` (a list for an op with several outputs):
``deps`` holds the operands' dependencies (``None`` for constants), ``ctx.values`` their
values where they are known while tracing (closed-over arrays and Python scalars, else
``None``), and the rule records the op's **second-order interactions** for Hessian patterns
with ``ctx.interact(a, b)``: ``a`` and ``b`` have the same rows (aligned entries), and the
op's output entry of each row has a nonzero mixed second derivative in those two operands'
entries (``x * y`` couples x's and y's dependencies, ``sin(x)`` x's with themselves). Rules
are vectorised: row gathers (:func:`gather`) and products with 0/1 matrices
(:func:`combine`), never a Python loop over entries.

Example (the rule of a linear elementwise op: each output entry reads the aligned entries of
its operands, and adds no second-order interaction)::

    def linear_elementwise(eqn, deps, ctx):
        return union([aligned(d, a.shape, eqn.outs[0].shape)
                      for a, d in zip(eqn.inputs, deps)], ctx.n)
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..core.indexing import key_to_python
from ..errors import DualgpuError

# the ops this module's helpers equip belong to the block that calls them (op.sites)
RULE_KIT = True

# the most index combinations a rule enumerates (einsum: the flop count; a dense block: its
# entries): beyond, the derivative is too dense for a sparse matrix
MAX_COMBINATIONS = 50_000_000


class TooDense(DualgpuError):
    """A rule's pattern would have more than :data:`MAX_COMBINATIONS` entries; the
    interpreter names the op."""


def check_count(count: int, what: str) -> None:
    """Refuse a pattern of ``count`` entries beyond :data:`MAX_COMBINATIONS`."""
    if count > MAX_COMBINATIONS:
        raise TooDense(f"{what} has {count} entries, more than {MAX_COMBINATIONS}")


def empty(rows: int, n: int) -> sp.csr_matrix:
    """No entry depends on anything."""
    return sp.csr_matrix((rows, n), dtype=np.float32)


def ones_of(m) -> sp.csr_matrix:
    """``m``'s structure with every stored value 1 (products count paths, never cancel)."""
    m = sp.csr_matrix(m)
    m.sum_duplicates()
    m.data = np.ones(len(m.data), dtype=np.float32)
    return m


def gather(dep, index) -> sp.csr_matrix:
    """The rows of ``dep`` at the flat indices ``index``; an index of -1 selects no entry
    (an output entry filled with a constant, as ``pad`` does)."""
    index = np.asarray(index, dtype=np.int64).ravel()
    if (index < 0).any():
        dep = sp.vstack([dep, empty(1, dep.shape[1])], format="csr")
        index = np.where(index < 0, dep.shape[0] - 1, index)
    if len(index) == dep.shape[0] and (index == np.arange(len(index))).all():
        return dep
    return dep[index]


def union(deps, n: int, rows: int | None = None) -> sp.csr_matrix | None:
    """Entry by entry, the union of the dependencies of aligned operands (``None`` for
    constants); ``None`` when every operand is constant."""
    live = [d for d in deps if d is not None]
    if not live:
        return None
    total = live[0]
    for d in live[1:]:
        total = total + d
    return ones_of(total)


def combine(matrix, dep) -> sp.csr_matrix:
    """``dep`` mapped by a 0/1 matrix of output entries by operand entries: an output entry
    depends on what the operand entries it reads depend on."""
    return ones_of(sp.csr_matrix(matrix) @ dep)


def broadcast_index(shape: tuple, out_shape: tuple) -> np.ndarray:
    """For each entry of ``out_shape`` (flat), the flat index of the entry of an operand of
    ``shape`` that NumPy broadcasting reads."""
    size = int(np.prod(shape, dtype=np.int64))
    source = np.arange(size, dtype=np.int64).reshape(shape)
    return np.broadcast_to(source, out_shape).ravel()


def aligned(dep, shape: tuple, out_shape: tuple):
    """An operand's dependencies, one row per entry of the broadcast output."""
    if dep is None:
        return None
    if tuple(shape) == tuple(out_shape):
        return dep
    return gather(dep, broadcast_index(tuple(shape), tuple(out_shape)))


def dense(deps, rows: int, n: int) -> sp.csr_matrix | None:
    """Every output entry depends on everything any operand depends on (the block of an op
    whose entries all mix, such as a matrix decomposition)."""
    live = [d for d in deps if d is not None]
    if not live:
        return None
    cols = np.unique(np.concatenate([d.indices for d in live]))
    check_count(rows * len(cols), "its dense block")
    data = np.ones(rows * len(cols), dtype=np.float32)
    indptr = np.arange(rows + 1, dtype=np.int64) * len(cols)
    return sp.csr_matrix((data, np.tile(cols, rows), indptr), shape=(rows, n))


def group_matrix(groups: np.ndarray, n_groups: int) -> sp.csr_matrix:
    """The 0/1 matrix that sends operand entry ``i`` to output entry ``groups[i]``
    (-1: nowhere)."""
    groups = np.asarray(groups, dtype=np.int64).ravel()
    keep = groups >= 0
    cols = np.arange(len(groups), dtype=np.int64)[keep]
    return sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (groups[keep], cols)),
                         shape=(n_groups, len(groups)))


def selected_index(eqn, values, shape: tuple):
    """For an op that selects entries of its first operand (``Flag.SELECTS``), the flat index
    of the entry each output entry reads: the op applied to the indices themselves. ``None``
    when an index operand is not known while tracing."""
    if any(v is None for v in values[1:]):
        return None
    source = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return np.asarray(eqn.prim.impl(np, source, *values[1:], **eqn.params))


def scatter_targets(key, arrays, g_shape: tuple, out_shape: tuple):
    """For ``out = zeros(out_shape); out[key] += g``: the flat output index of each entry of
    ``g`` (``None`` when an index array is unknown)."""
    if any(a is None for a in arrays):
        return None
    target = np.arange(int(np.prod(out_shape, dtype=np.int64)), dtype=np.int64)
    target = target.reshape(out_shape)[key_to_python(key, arrays)]
    return np.broadcast_to(target, g_shape).ravel()


def multilinear(ctx, out_size: int, deps, values, out_index, operand_indices):
    """The rule of a product of its operands (``einsum``, ``matmul``, sparse products): the
    output is a sum of terms ``prod_k operand_k[operand_indices[k][t]]`` added into
    ``out_index[t]``; a term whose known operand entry is zero is dropped. Each dependent
    operand's entries reach the output entries of its terms, and two dependent operands
    interact within each term."""
    keep = np.ones(len(out_index), dtype=bool)
    for v, idx in zip(values, operand_indices):
        if v is not None and np.ndim(v) > 0:
            keep &= np.asarray(v).ravel()[idx] != 0
    out_index = out_index[keep]
    operand_indices = [idx[keep] for idx in operand_indices]
    parts = []
    for d, idx in zip(deps, operand_indices):
        if d is not None:
            reads = sp.csr_matrix((np.ones(len(idx), dtype=np.float32), (out_index, idx)),
                                  shape=(out_size, d.shape[0]))
            parts.append(combine(reads, d))
    live = [k for k, d in enumerate(deps) if d is not None]
    for i in live:
        for j in live:
            if i < j:
                a, b = deps[i], deps[j]
                pairs = sp.csr_matrix(
                    (np.ones(len(out_index), dtype=np.float32),
                     (operand_indices[i], operand_indices[j])), shape=(a.shape[0], b.shape[0]))
                ctx.interact_through(a, pairs, b)
    return union(parts, ctx.n)


def einsum_indices(spec: str, shapes) -> tuple[np.ndarray, list[np.ndarray]]:
    """For a normalized einsum ``spec``: the flat output index and each operand's flat index
    of every term (every combination of the letters' values; length-1 axes broadcast)."""
    ins, out = spec.split("->")
    in_specs = ins.split(",")
    sizes: dict[str, int] = {}
    for s, shape in zip(in_specs, shapes):
        for c, d in zip(s, shape):
            sizes[c] = max(sizes.get(c, 1), d)
    letters = sorted(sizes)
    count = int(np.prod([sizes[c] for c in letters], dtype=np.int64))
    check_count(count, f"the enumeration of einsum {spec!r}")
    grid_shape = tuple(sizes[c] for c in letters)

    def flat(subscripts, shape):
        index = np.zeros((1,) * len(letters), dtype=np.int64)
        stride = 1
        for c, d in reversed(list(zip(subscripts, shape))):
            if d != 1:
                axis = letters.index(c)
                along = np.arange(sizes[c], dtype=np.int64) * stride
                index = index + along.reshape([-1 if k == axis else 1
                                               for k in range(len(letters))])
            stride *= d
        return np.broadcast_to(index, grid_shape).ravel()

    out_shape = tuple(sizes[c] for c in out)
    return flat(out, out_shape), [flat(s, shape) for s, shape in zip(in_specs, shapes)]


def matmul_spec(a_ndim: int, b_ndim: int) -> str:
    """``a @ b`` as a normalized einsum (NumPy's rules for 1-D operands and batches)."""
    batch = "abcdefgh"
    nb = max(a_ndim, b_ndim) - 2
    a = (batch[nb - (a_ndim - 2):nb] + "ij") if a_ndim > 1 else "j"
    b = (batch[nb - (b_ndim - 2):nb] + "jk") if b_ndim > 1 else "j"
    out = batch[:max(nb, 0)] + ("i" if a_ndim > 1 else "") + ("k" if b_ndim > 1 else "")
    return f"{a},{b}->{out}"


def _aligned_operands(eqn, deps):
    out_shape = tuple(eqn.outs[0].shape)
    return [aligned(d, tuple(a.shape), out_shape) for a, d in zip(eqn.inputs, deps)]


def linear_elementwise(eqn, deps, ctx):
    """An elementwise op linear in its floating operands (add, negative, where's branches):
    each output entry reads the aligned entries; no second-order interaction."""
    return union(_aligned_operands(eqn, deps), ctx.n)


def bilinear_elementwise(eqn, deps, ctx):
    """``x * y``: linear in each operand, so only the two operands interact."""
    a, b = _aligned_operands(eqn, deps)
    ctx.interact(a, b)
    return union([a, b], ctx.n)


def quotient_elementwise(eqn, deps, ctx):
    """``x / y``: linear in ``x``; ``y`` interacts with ``x`` and with itself."""
    a, b = _aligned_operands(eqn, deps)
    ctx.interact(a, b)
    ctx.interact(b, b)
    return union([a, b], ctx.n)


def no_derivative(eqn, deps, ctx):
    """An op whose derivative is zero (``stop_gradient``)."""
    return [None] * len(eqn.outs) if eqn.prim.multiple_results else None


def dense_block(eqn, deps, ctx):
    """Every output entry depends on every entry the operands depend on, and all of them
    interact (matrix decompositions: inv, solve, det, eigh, ...). A batch of matrices (the
    leading axes of the first operand, which every operand and output starts with) is one
    dense block per matrix (when every operand is a stack of the same batch)."""
    first = eqn.inputs[0]
    batch = tuple(first.shape[:-2])
    stacked = all(a.ndim == first.ndim and tuple(a.shape[:len(batch)]) == batch
                  for a in eqn.inputs) and \
        all(tuple(v.shape[:len(batch)]) == batch for v in eqn.outs)
    if not stacked:   # an operand broadcast against the batch (solve's vector b): one block
        batch = ()
    count = int(np.prod(batch, dtype=np.int64))

    def batch_of(shape):   # the batch of each entry of an array of ``shape``
        size = int(np.prod(shape, dtype=np.int64))
        return np.arange(size, dtype=np.int64) // max(size // count, 1) if size else \
            np.zeros(0, dtype=np.int64)

    per_batch = union([None if d is None else combine(group_matrix(batch_of(a.shape), count), d)
                       for a, d in zip(eqn.inputs, deps)], ctx.n)
    ctx.interact(per_batch, per_batch)
    outs = []
    for v in eqn.outs:
        live = per_batch is not None and v.dtype.kind in "fc"
        outs.append(gather(per_batch, batch_of(v.shape)) if live else None)
    return outs if eqn.prim.multiple_results else outs[0]


def along_axis(eqn, deps, ctx):
    """``sort`` or an FFT along an axis: an output entry may be any entry of its line (the
    permutation depends on the values; every coefficient of a DFT is nonzero), the line of
    the output as long as the op makes it (``rfft`` halves it); piecewise linear, so no
    interaction."""
    axis = eqn.params["axis"]

    def lines(shape):
        index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
        return np.moveaxis(index, axis, -1).reshape(-1, shape[axis])

    ins, outs = lines(tuple(eqn.inputs[0].shape)), lines(tuple(eqn.outs[0].shape))
    check_count(outs.size * ins.shape[1], f"the pattern of {eqn.prim.name} (every entry of a "
                                          "line)")
    rows = np.repeat(outs, ins.shape[1], axis=1).ravel()
    cols = np.tile(ins, (1, outs.shape[1])).ravel()
    reads = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                          shape=(outs.size, ins.size))
    return combine(reads, deps[0])
