"""Derivatives of matmul and einsum: both are multilinear, so the JVP comes from
``defmultilinear`` and only the transposes (the VJPs) are written here."""
from __future__ import annotations

import string

from .. import numpy_api as dnp
from ..core.ir import Aval
from ..ops.linalg import einsum, matmul
from ._util import defmultilinear, unbroadcast, wants_cotangent


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


defmultilinear(matmul, _matmul_vjp)
defmultilinear(einsum, _einsum_vjp, linear=None)
