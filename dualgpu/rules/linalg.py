"""Linear algebra: matmul (every rank combination NumPy allows) and einsum (any subscripts,
repeated indices and ellipsis included). Library ops: on the GPU they run through cuBLAS on
plain arrays, never on dual numbers."""
from __future__ import annotations

import string

import numpy as np

from .. import numpy_api as dnp
from ..core.ir import Aval
from ..core.primitives import defprim
from ..errors import DualgpuError
from ._util import add_any, promote, unbroadcast, wants_cotangent


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


def _matmul_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    ans = matmul.bind(a, b)
    out = None
    if ta is not None:
        out = matmul.bind(ta, b)
    if tb is not None:
        out = add_any(out, matmul.bind(a, tb))
    return ans, out


def _matmul_vjp(g, primals, ans):
    a, b = primals
    a2 = dnp.reshape(a, (1,) + tuple(a.shape)) if a.ndim == 1 else a
    b2 = dnp.reshape(b, tuple(b.shape) + (1,)) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = dnp.expand_dims(g2, -2 if b.ndim > 1 else -1)
    if b.ndim == 1:
        g2 = dnp.expand_dims(g2, -1)
    ca = cb = None
    if wants_cotangent(a):
        ca = matmul.bind(g2, dnp.swapaxes(b2, -1, -2))
        ca = unbroadcast(ca, Aval(tuple(a2.shape), a.dtype))
        ca = dnp.reshape(ca, a.shape) if a.ndim == 1 else ca
    if wants_cotangent(b):
        cb = matmul.bind(dnp.swapaxes(a2, -1, -2), g2)
        cb = unbroadcast(cb, Aval(tuple(b2.shape), b.dtype))
        cb = dnp.reshape(cb, b.shape) if b.ndim == 1 else cb
    return ca, cb




matmul = defprim("matmul", lambda xp, a, b: xp.matmul(a, b), _matmul_shape,
                 jvp=_matmul_jvp, vjp=_matmul_vjp, kind="library", py="{0} @ {1}")


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


def _einsum_jvp(primals, tangents, spec):
    ans = einsum.bind(*primals, spec=spec)
    out = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        ops = list(primals)
        ops[i] = t
        out = add_any(out, einsum.bind(*ops, spec=spec))
    return ans, out


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
        ct = dnp.transpose(ct, order) if order != list(range(len(order))) else ct
        ct = dnp.broadcast_to(dnp.reshape(ct, tuple(shape_keep)),
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
                eye_ops.append(dnp.eye(sizes[c], dtype=x.dtype, like=x))
            else:
                seen.add(c)
                labels.append(c)
        ct = einsum.bind(ct, *eye_ops, spec=",".join([unique] + eyes) + "->" + "".join(labels))
    return unbroadcast(ct, x.aval)


einsum = defprim(
    "einsum", lambda xp, *ops, spec: xp.einsum(spec, *ops), _einsum_shape,
    jvp=_einsum_jvp, vjp=_einsum_vjp, kind="library",
    py=lambda names, params: f"xp.einsum({params['spec']!r}, {', '.join(names)})")
