"""The prebuilt interpreter of tiny programs: one C++ library per machine, no compile per
program (:mod:`dualgpu.codegen.interpreter` encodes a program as data and runs it here).

The library's text is this module's runtime (:data:`RUNTIME`) and one table of elementwise
operations written from the C templates of the built-in ops (:func:`op_table`: every op of
``dualgpu.ops`` with a C form and no parameter, for ``double``, ``float`` and ``bool``), so
it is the same text in every process of one version of dualgpu: :func:`interpreter_library`
compiles it once per machine into the host kernels' disk cache
(:func:`~dualgpu.codegen.host.cache_dir`, through
:func:`~dualgpu.codegen.host.load_library`) and loads it once per process. Ops declared
later (``dg.custom_op``) are not in the table: a program using one runs as Python.

A program is a *tape* (an ``int64`` array: a header, the data pointers of its closed-over
constants, then instructions of :data:`REC` integers), a *pool* of ``double`` constants and
the tuple of its argument and output arrays; ``dg_interp_run`` allocates a workspace per
call (on its stack when small) and keeps no state between calls, so threads may run one
program at once. It returns the floating-point exceptions the run raised (``fenv``): the
caller then runs the Python program instead, whose NumPy calls warn or raise as
``np.errstate`` says. Instructions:

* ``EW``: an elementwise op over an index space of up to :data:`MAXD` axes, each operand
  read at its own offset and strides (broadcasts are strides of 0), converted to the op's
  compute type; the result written at the destination's offset and strides, converted to
  its dtype (opcode 0 is the identity: copies, casts, concatenations);
* ``RED``: for each element of an output index space, a fold over a second index space:
  sum, product, max or min of one operand, or the sum of products of two (matmul, einsum).

Example::

    >>> lib = interpreter_library()            # None where no compiler is found
    >>> lib is None or lib.dg_interp_abi() == ABI
    True
"""
from __future__ import annotations

import ctypes
import threading
from string import Formatter

import numpy as np

from .. import ops as _ops  # noqa: F401  (the built-in ops, whose C forms the table holds)
from ..core.flags import Flag
from ..core.primitives import REGISTRY
from ..fusion import is_reshape, reads_no_values
from . import host

MAXD = 8            # axes of an index space
REC = 72            # integers per instruction
ABI = 2             # bumped with the tape's layout
# what dg_interp_run returns: 0, or 1/2 (too many arrays, no workspace), or the bits of the
# floating-point exceptions the run raised
FAILED, DIVIDE, OVER, INVALID, UNDER = 3, 4, 8, 16, 32
EW, RED = 1, 2      # instruction kinds
F64, F32, BOOL = 0, 1, 2
DTYPE_CODES = {np.dtype(np.float64): F64, np.dtype(np.float32): F32, np.dtype(bool): BOOL}
MONOIDS = {"sum": 0, "prod": 1, "max": 2, "min": 3}
_CTYPES = {F64: "double", F32: "float", BOOL: "bool"}

RUNTIME = r"""
#include <cfenv>
#include <cmath>
#include <cstring>
#include <cstdlib>
using namespace std;
typedef long long i64;
#define MAXD @MAXD@
#define REC @REC@
#define CHUNK 64
#define STACK_BYTES 32768
enum { F64 = 0, F32 = 1, BOOL = 2 };
typedef unsigned char u8;

static inline void* dg_item(const void* tup, i64 k) {
  void* p; memcpy(&p, (const char*)tup + @TUPLE_ITEMS@ + 8 * k, sizeof p); return p;
}
static inline char* dg_data(const void* a) {
  char* p; memcpy(&p, (const char*)a + @DATA_OFFSET@, sizeof p); return p;
}

template <class T> static inline T load(const char* b, i64 dt, i64 k) {
  if (dt == F64) return (T)((const double*)b)[k];
  if (dt == F32) return (T)((const float*)b)[k];
  return (T)(((const u8*)b)[k] != 0);
}
template <class T> static inline void store(char* b, i64 dt, i64 k, T v) {
  if (dt == F64) ((double*)b)[k] = (double)v;
  else if (dt == F32) ((float*)b)[k] = (float)v;
  else ((u8*)b)[k] = (u8)(v != 0);
}
template <class T> static void gather(T* out, const char* b, i64 dt, const i64* offs, int m) {
  if (dt == F64) for (int j = 0; j < m; ++j) out[j] = (T)((const double*)b)[offs[j]];
  else if (dt == F32) for (int j = 0; j < m; ++j) out[j] = (T)((const float*)b)[offs[j]];
  else for (int j = 0; j < m; ++j) out[j] = (T)(((const u8*)b)[offs[j]] != 0);
}
static void scatter(char* b, i64 dt, const i64* offs, const double* r, int m) {
  if (dt == F64) for (int j = 0; j < m; ++j) ((double*)b)[offs[j]] = r[j];
  else if (dt == F32) for (int j = 0; j < m; ++j) ((float*)b)[offs[j]] = (float)r[j];
  else for (int j = 0; j < m; ++j) ((u8*)b)[offs[j]] = (u8)(r[j] != 0);
}

// the table of elementwise ops: r[j] = op(a[j], b[j], c[j]) (written from the ops' C forms)
@TABLE@

template <class T>
static void ew_chunk(const i64* I, char** base, i64 offs[4][CHUNK], int m) {
  T a[3][CHUNK];
  double r[CHUNK];
  const i64 nsrc = I[3];
  for (i64 s = 0; s < nsrc; ++s) {
    const i64* o = I + 13 + 11 * (s + 1);
    gather<T>(a[s], base[o[0]], o[1], offs[s + 1], m);
  }
  apply(I[1], a[0], a[1], a[2], r, m);
  scatter(base[I[13]], I[14], offs[0], r, m);
}

static void run_ew(const i64* I, char** base) {
  const i64 nsrc = I[3], ndim = I[4];
  const i64* shape = I + 5;
  i64 total = 1, idx[MAXD] = {0}, cur[4] = {0, 0, 0, 0};
  for (i64 d = 0; d < ndim; ++d) total *= shape[d];
  const i64* ops[4];
  for (i64 s = 0; s <= nsrc; ++s) { ops[s] = I + 13 + 11 * s; cur[s] = ops[s][2]; }
  i64 offs[4][CHUNK];
  for (i64 done = 0; done < total;) {
    int m = 0;
    for (; m < CHUNK && done < total; ++m, ++done) {
      for (i64 s = 0; s <= nsrc; ++s) offs[s][m] = cur[s];
      for (i64 d = ndim - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) {
          for (i64 s = 0; s <= nsrc; ++s) cur[s] += ops[s][3 + d];
          break;
        }
        for (i64 s = 0; s <= nsrc; ++s) cur[s] -= ops[s][3 + d] * (shape[d] - 1);
        idx[d] = 0;
      }
    }
    if (I[2] == F64) ew_chunk<double>(I, base, offs, m);
    else if (I[2] == F32) ew_chunk<float>(I, base, offs, m);
    else ew_chunk<bool>(I, base, offs, m);
  }
}

template <class T> static inline T combine(i64 op, T a, T b) {
  if (op == 0) return a + b;
  if (op == 1) return a * b;
  if (op == 2) return ((b > a) || (b != b)) ? b : a;   // NaN wins, as in NumPy
  return ((b < a) || (b != b)) ? b : a;
}
template <class T> static inline T identity(i64 op) {
  if (op == 0) return (T)0;
  if (op == 1) return (T)1;
  return (T)(op == 2 ? -INFINITY : INFINITY);
}
template <> inline bool identity<bool>(i64 op) { return op == 3 || op == 1; }

template <class T> static void run_red(const i64* I, char** base) {
  const i64 op = I[1], nsrc = I[3], ndim = I[4], rdim = I[13];
  const i64 *shape = I + 5, *rshape = I + 14, *dst = I + 22, *s0 = I + 33, *s1 = I + 52;
  i64 total = 1, rtotal = 1, idx[MAXD] = {0};
  for (i64 d = 0; d < ndim; ++d) total *= shape[d];
  for (i64 d = 0; d < rdim; ++d) rtotal *= rshape[d];
  char *bd = base[dst[0]];
  const char *b0 = base[s0[0]], *b1 = base[s1[0]];
  i64 cd = dst[2], c0 = s0[2], c1 = s1[2];
  const bool fast = nsrc == 2 && rdim == 1 && s0[1] == I[2] && s1[1] == I[2];
  for (i64 e = 0; e < total; ++e) {
    T acc = identity<T>(op);
    if (fast) {
      const T *A = (const T*)b0 + c0, *B = (const T*)b1 + c1;
      const i64 sa = s0[11], sb = s1[11];
      for (i64 p = 0; p < rtotal; ++p) acc += A[p * sa] * B[p * sb];
    } else {
      i64 r0 = c0, r1 = c1, ridx[MAXD] = {0};
      for (i64 k = 0; k < rtotal; ++k) {
        T x = load<T>(b0, s0[1], r0);
        if (nsrc == 2) x = x * load<T>(b1, s1[1], r1);
        acc = combine<T>(op, acc, x);
        for (i64 d = rdim - 1; d >= 0; --d) {
          if (++ridx[d] < rshape[d]) { r0 += s0[11 + d]; r1 += s1[11 + d]; break; }
          r0 -= s0[11 + d] * (rshape[d] - 1); r1 -= s1[11 + d] * (rshape[d] - 1);
          ridx[d] = 0;
        }
      }
    }
    store<T>(bd, dst[1], cd, acc);
    for (i64 d = ndim - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) { cd += dst[3 + d]; c0 += s0[3 + d]; c1 += s1[3 + d]; break; }
      cd -= dst[3 + d] * (shape[d] - 1); c0 -= s0[3 + d] * (shape[d] - 1);
      c1 -= s1[3 + d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

extern "C" int dg_interp_abi() { return @ABI@; }
extern "C" void* dg_interp_data_of(const void* tup, i64 k) { return dg_data(dg_item(tup, k)); }

// the floating-point exceptions a run raised (NumPy's errstate categories), after 1 and 2
enum { DIVIDE = 4, OVER = 8, INVALID = 16, UNDER = 32 };

// tape: n_instr, workspace bytes, arrays in the tuple, constants, the constants' data
// pointers, then the instructions; slots: the tuple's arrays, the constants, pool, workspace
extern "C" int dg_interp_run(const i64* tape, const double* pool, const void* arrays) {
  const i64 n_instr = tape[0], work = tape[1], n_obj = tape[2], n_const = tape[3];
  char* base[256];
  if (n_obj + n_const + 2 > 256) return 1;
  for (i64 k = 0; k < n_obj; ++k) base[k] = dg_data(dg_item(arrays, k));
  for (i64 k = 0; k < n_const; ++k) base[n_obj + k] = (char*)(size_t)tape[4 + k];
  base[n_obj + n_const] = (char*)pool;
  alignas(16) char stack[STACK_BYTES];
  char* w = work <= STACK_BYTES ? stack : (char*)malloc((size_t)work);
  if (w == 0) return 2;
  base[n_obj + n_const + 1] = w;
  feclearexcept(FE_ALL_EXCEPT);
  const i64* I = tape + 4 + n_const;
  for (i64 k = 0; k < n_instr; ++k, I += REC) {
    if (I[0] == 1) run_ew(I, base);
    else if (I[2] == F64) run_red<double>(I, base);
    else if (I[2] == F32) run_red<float>(I, base);
    else run_red<bool>(I, base);
  }
  if (w != stack) free(w);
  const int fl = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID | FE_UNDERFLOW);
  return (fl & FE_DIVBYZERO ? DIVIDE : 0) | (fl & FE_OVERFLOW ? OVER : 0) |
         (fl & FE_INVALID ? INVALID : 0) | (fl & FE_UNDERFLOW ? UNDER : 0);
}
"""

_LOCK = threading.Lock()
_STATE: dict = {}     # "lib": the loaded library; ("failed", compiler, cache dir): True


def _template(prim, code: int) -> str | None:
    """The C expression of ``prim`` computing in ``code``'s type over ``a[j]``, ``b[j]``,
    ``c[j]``, or None where it has no parameter-free C form for that type."""
    ct = _CTYPES[code]
    template = prim.c_for(np.dtype(bool) if code == BOOL else
                          (np.float32 if code == F32 else np.float64))
    if template is None:
        return None
    fields = {f for _, f, _, _ in Formatter().parse(template) if f and not f.isdigit()}
    if fields - ({"T"} if template is prim.c_int else set()):
        return None
    return template.format("a[j]", "b[j]", "c[j]", T=ct)


def _eligible(prim) -> bool:
    return (prim.has(Flag.ELEMENTWISE) and not is_reshape(prim) and not reads_no_values(prim)
            and not prim.has(Flag.CASTS) and prim.lowering("view") is None
            and not prim.multiple_results)


_TABLE: dict = {}


def op_table() -> dict:
    """``{(op name, dtype code): (opcode, prim)}`` of the built-in elementwise ops in the
    library (opcode 0, the identity, is not in it); the same in every process."""
    if not _TABLE:
        with _LOCK:
            if not _TABLE:
                names = sorted(n for n, p in _BUILTIN.items() if _eligible(p))
                table = {}
                for k, name in enumerate(names, start=1):
                    for code in _CTYPES:
                        if _template(_BUILTIN[name], code) is not None:
                            table[(name, code)] = (k, _BUILTIN[name])
                _TABLE.update(table)
    return _TABLE


# the ops registered when this module is first imported: dualgpu's own (imported above);
# an op of ``dg.custom_op`` is not (its C form is user-given text, never in the library)
_BUILTIN = dict(REGISTRY)


def library_text() -> str:
    """The whole C++ text of the interpreter (the runtime and the op table)."""
    cases: dict = {code: [] for code in _CTYPES}
    for (name, code), (k, prim) in sorted(op_table().items(), key=lambda kv: kv[1][0]):
        cases[code].append(f"    case {k}: for (int j = 0; j < m; ++j) r[j] = (double)("
                           f"{_template(prim, code)}); break;  // {name}")
    table = []
    for code, ct in _CTYPES.items():
        table += [f"static void apply(i64 op, const {ct}* a, const {ct}* b, const {ct}* c, "
                  "double* r, int m) {",
                  "  (void)b; (void)c;",
                  "  switch (op) {",
                  "    case 0: for (int j = 0; j < m; ++j) r[j] = (double)a[j]; break;",
                  *cases[code], "  }", "}"]
    subs = {"@MAXD@": MAXD, "@REC@": REC, "@ABI@": ABI, "@TABLE@": "\n".join(table),
            "@TUPLE_ITEMS@": tuple.__basicsize__, "@DATA_OFFSET@": object.__basicsize__}
    text = RUNTIME
    for k, v in subs.items():
        text = text.replace(k, str(v))
    return text


def _reads_arrays(lib) -> bool:
    """Whether the library finds a tuple's arrays' data where NumPy says it is."""
    probe = lib.dg_interp_data_of
    probe.argtypes, probe.restype = [ctypes.c_void_p, ctypes.c_longlong], ctypes.c_void_p
    samples: tuple[np.ndarray, ...] = (np.ones(3), np.ones((4, 5))[1:, ::2],
                                       np.full((), 2.0, np.float32))
    return all(probe(id(samples), k) == a.ctypes.data for k, a in enumerate(samples))


def interpreter_library():
    """The interpreter's library, loaded (compiled first where it is not on disk), or None:
    no compiler (:func:`~dualgpu.codegen.host.find_compiler`), the compiler refused it (a
    warning, once per compiler and cache directory) or it cannot read NumPy's arrays."""
    lib = _STATE.get("lib")
    if lib is not None:
        return lib
    compiler = host.find_compiler()
    if compiler is None:
        return None
    failed = ("failed", compiler, str(host.cache_dir()))
    if failed in _STATE:
        return None
    lib = host.library_or_none(library_text(), compiler, "the tiny-program interpreter")
    if lib is None or lib.dg_interp_abi() != ABI or not _reads_arrays(lib):
        _STATE[failed] = True
        return None
    lib.dg_interp_run.argtypes = [ctypes.c_void_p] * 3
    lib.dg_interp_run.restype = ctypes.c_int
    _STATE["lib"] = lib
    return lib
