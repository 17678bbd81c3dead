"""Linear algebra: matmul (every rank combination NumPy allows) and einsum (any subscripts,
repeated indices and ellipsis included), one block each. Library ops: on the GPU they run
through cuBLAS on plain arrays, never on dual numbers. Both are multilinear, so the JVP comes
from ``defmultilinear`` and each block writes its transposes (the VJP), its batching, its
separability map, its forward-Laplacian cross terms and its sparsity pattern; Taylor mode
takes the Leibniz sums of the product applied to coefficient pairs.

>>> from dualgpu.ops.products import normalize_einsum
>>> normalize_einsum("ij,jk", [(2, 3), (3, 4)])
'ij,jk->ik'
"""
from __future__ import annotations

import string

import numpy as np

from .. import lax
from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import deflowering, defprim, defrules
from ..core.trace import Tracer
from ..errors import DualgpuError
from ..rules import batching_rules as batching
from ..rules import laplacian_rules, taylor_rules
from ..rules import sparsity_rules as sparsity
from ..rules.common import defmultilinear, unbroadcast, wants_cotangent
from ..rules.separability_rules import labelled


# --------------------------------------------------------------------------- shared
def _product_sparsity(spec, eqn, deps, ctx):
    out_size = int(np.prod(eqn.outs[0].shape, dtype=np.int64))
    out_index, operand_indices = sparsity.einsum_indices(
        spec, [tuple(a.shape) for a in eqn.inputs])
    return sparsity.multilinear(ctx, out_size, deps, ctx.values, out_index, operand_indices)


def _traced(value, like):
    """``value`` as a value of the trace ``like`` belongs to (a closed-over array becomes a
    recorded constant, never an array baked into the rules' arithmetic)."""
    if isinstance(value, Tracer):
        return value
    value = value if hasattr(value, "shape") else np.asarray(value)
    return laplacian_rules.traced_constant(like, value)


# --------------------------------------------------------------------------- matmul
def _matmul_shape(avals):
    a, b = avals
    if a.ndim == 0 or b.ndim == 0:
        raise DualgpuError("matmul: operands must have at least one dimension "
                           f"(got {a.str_short()} @ {b.str_short()}); use * for scalars")
    ash = a.shape if a.ndim > 1 else (1,) + tuple(a.shape)
    bsh = b.shape if b.ndim > 1 else tuple(b.shape) + (1,)
    if ash[-1] != bsh[-2]:
        raise DualgpuError(f"matmul: inner dimensions differ: {a.str_short()} @ "
                           f"{b.str_short()}")
    try:
        batch = np.broadcast_shapes(ash[:-2], bsh[:-2])
    except ValueError:
        raise DualgpuError(f"matmul: batch dimensions of {a.str_short()} and "
                           f"{b.str_short()} do not broadcast") from None
    shape = tuple(batch) + (ash[-2], bsh[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return Aval(shape, promote(avals))


matmul = defprim("matmul", lambda xp, a, b: xp.matmul(a, b), _matmul_shape,
                 kind=Flag.LIBRARY, arity=2,
                 py="{0} @ {1}")
deflowering(matmul, tiny="matmul", library="gemm")


def _matmul_vjp(g, primals, ans):
    a, b = primals
    a2 = lax.reshape(a, (1,) + tuple(a.shape)) if a.ndim == 1 else a
    b2 = lax.reshape(b, tuple(b.shape) + (1,)) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = lax.expand_dims(g2, -2 if b.ndim > 1 else -1)
    if b.ndim == 1:
        g2 = lax.expand_dims(g2, -1)
    ca = cb = None
    if wants_cotangent(a):
        ca = matmul.bind(g2, lax.swapaxes(b2, -1, -2))
        ca = unbroadcast(ca, Aval(tuple(a2.shape), a.dtype))
        ca = lax.reshape(ca, a.shape) if a.ndim == 1 else ca
    if wants_cotangent(b):
        cb = matmul.bind(lax.swapaxes(a2, -1, -2), g2)
        cb = unbroadcast(cb, Aval(tuple(b2.shape), b.dtype))
        cb = lax.reshape(cb, b.shape) if b.ndim == 1 else cb
    return ca, cb


def _matmul_vmap(eqn, args, batched, size):
    a, b = args
    if batched[0] and not batched[1]:
        return batching.one(_matmul_left(a, b, size, eqn))
    if batched[1] and not batched[0]:
        return batching.one(_matmul_right(a, b, size, eqn))
    ra, rb = len(a.shape) - 1, len(b.shape) - 1
    a2 = a if ra >= 2 else lax.reshape(a, (size, 1, a.shape[-1]))
    b2 = b if rb >= 2 else lax.reshape(b, (size, b.shape[-1], 1))
    a2, b2 = batching.pad_batch(a2, b2)
    return batching.one(batching.drop_to(matmul.bind(a2, b2), size, eqn))


def _matmul_left(a, b, size, eqn):
    """Batched ``a``, shared ``b``: the examples become rows of one GEMM."""
    ra, rb = len(a.shape) - 1, len(np.shape(b))
    if rb <= 2:
        if ra == 1:
            return matmul.bind(a, b)  # (B, k) @ b
        out = matmul.bind(lax.reshape(a, (-1, a.shape[-1])), b)
        return batching.drop_to(out, size, eqn)
    a2 = a if ra >= 2 else lax.reshape(a, (size, 1, a.shape[-1]))
    nb = rb - 2
    na = len(a2.shape) - 3
    if na < nb:
        a2 = lax.reshape(a2, (size,) + (1,) * (nb - na) + tuple(a2.shape[1:]))
    return batching.drop_to(matmul.bind(a2, b), size, eqn)


def _matmul_right(a, b, size, eqn):
    """Shared ``a``, batched ``b``: the examples become columns of one GEMM."""
    ra, rb = len(np.shape(a)), len(b.shape) - 1
    if rb == 1:
        if ra == 1:
            return matmul.bind(b, a)  # one dot per example: (B, k) @ (k,)
        out = matmul.bind(a, lax.transpose(b))  # (..., n, B)
        return lax.moveaxis(out, -1, 0)
    if ra == 1:
        return matmul.bind(a, b)  # (k,) @ (B, ..., k, m)
    if ra == 2 and rb == 2:
        k, m = b.shape[1:]
        wide = lax.reshape(lax.transpose(b, (1, 0, 2)), (k, size * m))
        out = lax.reshape(matmul.bind(a, wide), (np.shape(a)[0], size, m))
        return lax.transpose(out, (1, 0, 2))
    na, nb = ra - 2, rb - 2
    if nb < na:
        b = lax.reshape(b, (size,) + (1,) * (na - nb) + tuple(b.shape[1:]))
    return matmul.bind(a, b)


def _matmul_separability(eqn, dep, sizes) -> tuple:
    a, b = eqn.inputs
    ins, out = sparsity.matmul_spec(a.ndim, b.ndim).split("->")
    return labelled(ins.split(","), out, dep)


def _matmul_cross(eqn, values, i, j, Ja, Jb, mode):
    """``sum_d J_A[d] @ J_B[d]`` for 2-d operands is one GEMM of inner size ``D*k``."""
    if mode.diag or Ja.ndim != 3 or Jb.ndim != 3:
        return laplacian_rules.batched_cross(eqn, values, i, j, Ja, Jb, mode)
    D, m, k = Ja.shape
    n = Jb.shape[2]
    wide = lax.reshape(lax.transpose(Ja, (1, 0, 2)), (m, D * k))
    return matmul.bind(wide, lax.reshape(Jb, (D * k, n)))


def _matmul_jet(eqn, values, jets, mode):
    seeded = _seeded_product(values, jets, mode)
    if seeded is not None:
        return [(seeded, None)]
    return laplacian_rules.multilinear_rule(eqn, values, jets, mode, cross=_matmul_cross)


def _seeded_product(values, jets, mode):
    """``J`` of ``x @ W`` (or ``A @ x``) when ``x`` is an input whose only instance axis is
    the contracted one and ``W`` is constant: ``J[d] = W[d]`` (or ``A[:, d]``), the other
    factor's rows laid out along the coordinates and broadcast over the batch axes -- no
    product with the identity seed. None when the product is not of that form."""
    act = [i for i, j in enumerate(jets) if j is not None]
    if len(act) != 1 or jets[act[0]][1] is not None:
        return None
    side = act[0]
    seed = mode.seeds.get(laplacian_rules.vid(jets[side][0]))
    a, b = values
    if seed is None or tuple(values[side].shape) != seed.shape or a.ndim == 0 or b.ndim == 0:
        return None
    if side == 0:  # x (..., k) @ W (k, n) or (k,): J[d, ..., :] = W[d - offset]
        if seed.inst != (a.ndim - 1,) or b.ndim > 2:
            return None
        rows, out_shape = b, tuple(a.shape[:-1]) + tuple(b.shape[1:])
        tail = (1,) * (a.ndim - 1) + tuple(b.shape[1:])
    else:          # A (m, k) @ x (k, n) or (k,): J[d, :, ...] = A[:, d - offset]
        if seed.inst != (0,) or a.ndim != 2 or b.ndim > 2:
            return None
        rows, out_shape = lax.transpose(_traced(a, jets[side][0]), (1, 0)), \
            (a.shape[0],) + tuple(b.shape[1:])
        tail = (a.shape[0],) + (1,) * (b.ndim - 1)
    D = mode.size
    rows = _traced(rows, jets[side][0])
    if seed.first or seed.size != rows.shape[0]:   # a chunk's part of the coordinates
        rows = rows[seed.first:seed.first + seed.size]
    if D != seed.size:
        rows = lax.pad(rows, [(seed.offset, D - seed.offset - seed.size)]
                       + [(0, 0)] * (rows.ndim - 1))
    small = lax.reshape(rows, (D,) + tail)
    dtype = np.result_type(a.dtype, b.dtype)
    if small.dtype != dtype:
        small = lax.astype(small, dtype)
    J = lax.broadcast_to(small, (D,) + out_shape) if small.shape != (D,) + out_shape else small
    mode.small[laplacian_rules.vid(J)] = small
    return J


def _matmul_sparsity(eqn, deps, ctx):
    a, b = eqn.inputs
    return _product_sparsity(sparsity.matmul_spec(a.ndim, b.ndim), eqn, deps, ctx)


defmultilinear(matmul, _matmul_vjp)
defrules(matmul, vmap=_matmul_vmap, separability=_matmul_separability,
         laplacian=_matmul_jet, taylor=taylor_rules.multilinear_rule,
         sparsity=_matmul_sparsity)


# --------------------------------------------------------------------------- einsum
def normalize_einsum(spec: str, shapes) -> str:
    """Explicit output, ellipsis expanded into letters: 'ij,jk->ik'."""
    spec = spec.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins, out = spec, None
    in_specs = ins.split(",")
    if len(in_specs) != len(shapes):
        raise DualgpuError(f"einsum {spec!r}: {len(in_specs)} subscripts for "
                           f"{len(shapes)} operands")
    used = set(spec) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    ell_rank = 0
    for s, sh in zip(in_specs, shapes):
        if "..." in s:
            ell_rank = max(ell_rank, len(sh) - (len(s) - 3))
    ell = "".join(spare[:ell_rank])
    fixed = []
    for s, sh in zip(in_specs, shapes):
        if "..." in s:
            r = len(sh) - (len(s) - 3)
            s = s.replace("...", ell[ell_rank - r:])
        if len(s) != len(sh):
            raise DualgpuError(f"einsum {spec!r}: subscripts {s!r} for an operand of rank "
                               f"{len(sh)}")
        fixed.append(s)
    if out is None:
        counts: dict[str, int] = {}
        for s in fixed:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return ",".join(fixed) + "->" + out


def _einsum_shape(avals, spec):
    ins, out = spec.split("->")
    sizes: dict[str, int] = {}
    for s, a in zip(ins.split(","), avals):
        for c, d in zip(s, a.shape):
            if sizes.get(c, d) != d and 1 not in (d, sizes[c]):
                raise DualgpuError(f"einsum {spec!r}: index {c!r} has sizes {sizes[c]} and {d}")
            sizes[c] = max(sizes.get(c, d), d)
    return Aval(tuple(sizes[c] for c in out), promote(avals))


einsum = defprim(
    "einsum", lambda xp, *ops, spec: xp.einsum(spec, *ops), _einsum_shape,
    kind=Flag.LIBRARY,
    py=lambda names, params: f"xp.einsum({params['spec']!r}, {', '.join(names)})")
deflowering(einsum, tiny="einsum")


def _einsum_vjp(g, primals, ans, spec):
    ins, out = spec.split("->")
    in_specs = ins.split(",")
    cts = []
    for i, x in enumerate(primals):
        if not wants_cotangent(x):
            cts.append(None)
            continue
        cts.append(_einsum_operand_ct(g, primals, in_specs, out, i))
    return tuple(cts)


def _einsum_operand_ct(g, primals, in_specs, out, i):
    target = in_specs[i]
    others = [(s, p) for j, (s, p) in enumerate(zip(in_specs, primals)) if j != i]
    present = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    unique = "".join(dict.fromkeys(target))
    reachable = "".join(c for c in unique if c in present)
    sub = ",".join([out] + [s for s, _ in others]) + "->" + reachable
    ct = einsum.bind(g, *[p for _, p in others], spec=sub)
    x = primals[i]
    # Indices only in this operand were summed out: broadcast back along them.
    sizes = dict(zip(target, x.shape))
    if reachable != unique:
        idx = [unique.index(c) for c in reachable]
        shape_keep = [1] * len(unique)
        for pos, c in zip(idx, reachable):
            shape_keep[pos] = sizes[c]
        order = sorted(range(len(reachable)), key=lambda k: idx[k])
        ct = lax.transpose(ct, order) if order != list(range(len(order))) else ct
        ct = lax.broadcast_to(lax.reshape(ct, tuple(shape_keep)),
                              tuple(sizes[c] for c in unique))
    # Repeated indices (a diagonal): embed with identity matrices.
    if unique != target:
        spare = [c for c in string.ascii_letters if c not in set(target) | set(out)]
        labels, eyes, eye_ops = [], [], []
        seen: set[str] = set()
        for c in target:
            if c in seen:
                new = spare.pop(0)
                labels.append(new)
                eyes.append(c + new)
                eye_ops.append(lax.eye(sizes[c], dtype=x.dtype, like=x))
            else:
                seen.add(c)
                labels.append(c)
        ct = einsum.bind(ct, *eye_ops, spec=",".join([unique] + eyes) + "->" + "".join(labels))
    return unbroadcast(ct, x.aval)


def _einsum_vmap(eqn, args, batched, size):
    spec = eqn.params["spec"]
    letter = next(c for c in string.ascii_letters if c not in spec)
    ins, out = spec.split("->")
    specs = [letter + s if b else s for s, b in zip(ins.split(","), batched)]
    return batching.one(einsum.bind(*args, spec=",".join(specs) + "->" + letter + out))


def _einsum_separability(eqn, dep, sizes) -> tuple:
    ins, out = eqn.params["spec"].split("->")
    return labelled(ins.split(","), out, dep)


def _einsum_cross(eqn, values, i, j, Ji, Jj, mode):
    """One einsum with the coordinate axis on both operands (kept only if diagonal)."""
    spec = eqn.params["spec"]
    letter = next(c for c in "dpqrstuvwxyzabcefghijklmno" if c not in spec)
    ins, out = spec.split("->")
    specs = ins.split(",")
    specs[i], specs[j] = letter + specs[i], letter + specs[j]
    args = list(values)
    args[i], args[j] = Ji, Jj
    return einsum.bind(*args, spec=",".join(specs) + "->" + (letter if mode.diag else "")
                           + out)


def _einsum_jet(eqn, values, jets, mode):
    return laplacian_rules.multilinear_rule(eqn, values, jets, mode,
                                            linear=tuple(range(len(values))),
                                            cross=_einsum_cross)


def _einsum_sparsity(eqn, deps, ctx):
    return _product_sparsity(eqn.params["spec"], eqn, deps, ctx)


defmultilinear(einsum, _einsum_vjp, linear=None)
defrules(einsum, vmap=_einsum_vmap, separability=_einsum_separability,
         laplacian=_einsum_jet, taylor=taylor_rules.multilinear_rule,
         sparsity=_einsum_sparsity)
