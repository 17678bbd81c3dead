"""Linear algebra: matmul (every rank combination NumPy allows) and einsum (any subscripts,
repeated indices and ellipsis included). Library ops: on the GPU they run through cuBLAS on
plain arrays, never on dual numbers. Derivatives: :mod:`dualgpu.rules.products`.

>>> from dualgpu.ops.products import normalize_einsum
>>> normalize_einsum("ij,jk", [(2, 3), (3, 4)])
'ij,jk->ik'
"""
from __future__ import annotations

import string

import numpy as np

from ..core.dtypes import promote
from ..core.flags import Flag
from ..core.ir import Aval
from ..core.primitives import deflowering, defprim
from ..errors import DualgpuError


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
