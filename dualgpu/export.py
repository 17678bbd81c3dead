"""``dg.export``: a derivative program as a standalone Python module you can ship, read and
edit, which imports only NumPy (SciPy too, when the program calls a special function).

The module holds the generated program (the same straight-line source ``dg.source`` shows),
the constants it closes over (as bytes, never as code), the few registry operations it calls
that NumPy has no function for, and glue that takes the arguments the transformed function
takes -- pytrees and keyword arguments included -- and returns its result in the same
structure. Static (non-array) arguments are fixed at export time; the exported function
checks that it gets the same values. Each line of the program carries the user's source line
it came from.

Example::

    >>> def loss(w, X):
    ...     return np.sum(np.tanh(X @ w) ** 2)
    >>> w, X = np.ones(3) / 3, np.arange(6.0).reshape(2, 3) / 6
    >>> text = dg.export(dg.hvp(loss), w, X, w, name="loss_hvp")
    >>> namespace = {}
    >>> exec(text, namespace)
    >>> np.allclose(namespace["loss_hvp"](w, X, w), dg.hvp(loss)(w, X, w))
    True
    >>> "import dualgpu" in text
    False
"""
from __future__ import annotations

import base64
import keyword
import os
from collections.abc import Callable

import numpy as np

from . import tree as T
from ._version import __version__
from .api import Transformed, jit
from .codegen.python import generate_python
from .core import encode as E
from .core.trace import Tracer
from .errors import DualgpuError
from .names import check_identifier
from .signature import Signature

# Registry ops the generated source calls as ``ops.<name>``, written for the exported module.
# (tests/test_export.py checks that every built-in op with an ``ops.`` form is here.)
STANDALONE_OPS = {
    "logistic": "def logistic(x):\n    return 0.5 * (xp.tanh(0.5 * x) + 1)\n",
    "erf": "def erf(x):\n    return _special().erf(x)\n",
    "erfc": "def erfc(x):\n    return _special().erfc(x)\n",
    "gammaln": "def gammaln(x):\n    return _special().gammaln(x)\n",
    "digamma": "def digamma(x):\n    return _special().digamma(x)\n",
    "polygamma": (
        "def polygamma(x, n):\n"
        "    x = xp.asarray(x)\n"
        "    out = _special().polygamma(xp.asarray(n), x)\n"
        "    return out.astype(x.dtype, copy=False) if x.dtype.kind == 'f' else out\n"),
    "solve": (
        "def solve(a, b):\n"
        "    if b.ndim == 1 and a.ndim > 2:\n"
        "        return xp.linalg.solve(a, b[:, None])[..., 0]\n"
        "    return xp.linalg.solve(a, b)\n"),
    "slogdet": "def slogdet(a):\n    return tuple(xp.linalg.slogdet(a))\n",
    "eigh": "def eigh(a, uplo='L'):\n    return tuple(xp.linalg.eigh(a, UPLO=uplo))\n",
    "eig": (
        "def eig(a):\n"
        "    w, v = xp.linalg.eig(a)\n"
        "    dt = xp.result_type(a.dtype, xp.float16)\n"
        "    if w.dtype.kind == 'c' and w.size:\n"
        "        tol = xp.sqrt(xp.finfo(dt).eps) * xp.max(abs(w), axis=-1, keepdims=True)\n"
        "        if xp.any(abs(w.imag) > tol):\n"
        "            raise ValueError('linalg.eig: the matrix has complex eigenvalues')\n"
        "        if xp.any(v.imag != 0):  # a phase: the largest entry real and positive\n"
        "            top = xp.take_along_axis(v, xp.argmax(abs(v), axis=-2)[..., None, :], -2)\n"
        "            r = (v * xp.conj(top / xp.where(top == 0, 1, abs(top)))).real\n"
        "            r = r / xp.sqrt(xp.sum(r * r, axis=-2, keepdims=True))\n"
        "            v = xp.where(xp.any(v.imag != 0, axis=-2, keepdims=True), r, v.real)\n"
        "        w, v = w.real, v.real\n"
        "    return w.astype(dt, copy=False), v.astype(dt, copy=False)\n"),
    "svd": "def svd(a):\n    return tuple(xp.linalg.svd(a, full_matrices=False))\n",
    "qr": "def qr(a):\n    return tuple(xp.linalg.qr(a, mode='reduced'))\n",
    "sort": "def sort(x, axis):\n    return xp.sort(x, axis=axis, kind='stable')\n",
    "argsort": "def argsort(x, axis):\n    return xp.argsort(x, axis=axis, kind='stable')\n",
    "scatter_add": (
        "def scatter_add(g, *arrays, key, shape):\n"
        "    out = xp.zeros(shape, dtype=g.dtype)\n"
        "    index = tuple(None if e is None else slice(*e[1:]) if e[0] == 'slice'\n"
        "                  else e[1] if e[0] == 'int' else arrays[e[1]] for e in key)\n"
        "    xp.add.at(out, index, g)\n"
        "    return out\n"),
}

_GLUE = '''
def _leaves(tree, out):
    """The array leaves of a pytree, in dualgpu's order (dict keys sorted)."""
    if isinstance(tree, (tuple, list)):
        for t in tree:
            _leaves(t, out)
    elif isinstance(tree, dict):
        try:
            keys = sorted(tree)
        except TypeError:
            keys = list(tree)
        for k in keys:
            _leaves(tree[k], out)
    elif tree is not None:
        out.append(tree)
    return out


def _build(spec, leaves):
    """A pytree of ``spec`` (a nested description) with ``leaves`` in order."""
    kind = spec[0]
    if kind == "*":
        return next(leaves)
    if kind == "none":
        return None
    if kind == "dict":
        return {k: _build(s, leaves) for k, s in zip(spec[1], spec[2])}
    items = [_build(s, leaves) for s in spec[1]]
    return tuple(items) if kind == "tuple" else items


def _constant(data, dtype, shape):
    return xp.asarray(np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape))


def _special():
    import scipy.special  # only programs that call a special function need SciPy

    return scipy.special
'''


def export(fn: Callable, *example_args, path: str | None = None, name: str | None = None,
           **example_kwargs) -> str:
    """The source of a standalone module computing ``fn`` (a plain or transformed function)
    for arguments shaped and typed like ``example_args``; written to ``path`` when given.

    The module defines one function, ``name`` (default: the transformed function's name),
    called like ``fn``. It needs NumPy (and SciPy for special functions), not dualgpu.
    NumPy arguments only for now: CuPy arguments, sparse matrices and custom ops are
    refused with a :class:`~dualgpu.DualgpuError`.
    """
    t = fn if isinstance(fn, Transformed) else jit(fn)
    if t.kind == "vjp":
        raise DualgpuError("dg.export: a vjp returns a pullback function and cannot be "
                           "exported; export dg.grad or dg.jit of the pulled-back function")
    fname = (check_identifier(name, what="dg.export name") if name is not None
             else _python_name(t.__name__))
    args = _fresh(example_args)
    kwargs = _fresh(example_kwargs)
    fargs, extra = t.split(args)
    sig = Signature(fargs, kwargs, t.argnums, t.__name__)
    if sig.traced:
        raise DualgpuError("dg.export: call it on concrete arrays, not inside a traced "
                           "function")
    if not sig.backend.name == "numpy":
        raise DualgpuError("dg.export: only NumPy programs can be exported for now (the "
                           f"arguments are {sig.backend.name} arrays)")
    if sig.sparse:
        raise DualgpuError("dg.export: sparse matrix arguments cannot be exported yet")
    extras = t.extra_inputs(sig, extra)
    compiled = t.compiled(sig)
    passed = list(sig.inputs) + list(extras)
    outs = compiled.exe(*passed)
    result = t.finish(compiled, sig, outs)
    input_leaves = _input_positions(args, kwargs, fargs, sig, extras)
    out_leaves, out_tree = T.flatten(result)
    order = [_index_of(o, outs, "a result") for o in out_leaves]
    what = f"{t.kind} of {_python_name(getattr(t.fn, '__name__', 'f'))}"
    text = _module_text(what, fname, compiled.graph, passed, input_leaves, order, out_tree,
                        _static_checks(args, kwargs, input_leaves))
    if path is not None:
        with open(os.fspath(path), "w") as fh:
            fh.write(text)
    return text


def _python_name(label: str) -> str:
    """An identifier made of ``label``'s letters and digits (a user's name is data)."""
    chars = [c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in str(label)]
    out = "".join(chars).strip("_")[:60] or "f"
    if out[0].isdigit() or keyword.iskeyword(out):
        out = "f_" + out
    return check_identifier(out, what="dg.export name")


def _fresh(tree):
    """The example with every array leaf replaced by a new array of its shape and dtype, so
    that each program input can be traced back to its leaf by identity."""
    def fresh(x):
        if isinstance(x, Tracer):
            return x
        if isinstance(x, np.ndarray) and type(x) is np.ndarray:
            return np.array(x, copy=True)
        return x

    return T.tree_map(fresh, tree)


def _index_of(obj, items, what: str) -> int:
    for i, x in enumerate(items):
        if x is obj:
            return i
    raise DualgpuError(f"dg.export: cannot tell where {what} of this transform comes from "
                       "(export dg.jit of a function returning arrays instead)")


def _input_positions(args, kwargs, fargs, sig, extras) -> list:
    """For each program input, the index of its leaf in ``_leaves((args, kwargs))``."""
    all_leaves = T.leaves((args, kwargs))
    n_f = len(T.leaves(tuple(fargs)))
    n_args = len(T.leaves(tuple(args)))
    positions = []
    for j in sig.input_pos:  # leaves of (fargs, kwargs): kwargs follow the extra arguments
        positions.append(j if j < n_f else j + (n_args - n_f))
    for e in extras:
        positions.append(_index_of(e, all_leaves, "a direction argument"))
    return positions


def _static_checks(args, kwargs, input_leaves) -> list[tuple[int, str]]:
    """(leaf index, literal) of the static leaves whose value the program depends on."""
    checks = []
    used = set(input_leaves)
    for k, leaf in enumerate(T.leaves((args, kwargs))):
        if k in used or isinstance(leaf, np.ndarray):
            continue
        try:
            checks.append((k, E.py_literal(leaf, "a static argument")))
        except DualgpuError:
            continue  # an object known by identity: nothing to compare in the module
    return checks


def _spec(tree) -> str:
    """A literal description of a TreeDef, read by the module's ``_build``."""
    if tree.is_leaf:
        return "('*',)"
    if tree.kind == "none":
        return "('none',)"
    kids = ", ".join(_spec(c) for c in tree.children)
    kids = f"[{kids}]"
    if tree.kind == "dict":
        keys = ", ".join(E.py_literal(k, "a dict key") for k in tree.meta)
        return f"('dict', [{keys}], {kids})"
    if tree.kind in ("tuple", "list"):
        return f"({tree.kind!r}, {kids})"
    return f"('tuple', {kids})"  # a namedtuple comes back as a tuple


def _constants(consts: dict) -> list[str]:
    lines = []
    for cname, value in consts.items():
        a = np.ascontiguousarray(np.asarray(value))
        if a.dtype.kind not in "biufc":
            raise DualgpuError(f"dg.export: constant {cname} has dtype {a.dtype}")
        data = base64.b64encode(a.tobytes()).decode("ascii")
        lines.append(f"{cname} = _constant({data!r}, {a.dtype.str!r}, {tuple(a.shape)!r})")
    return lines


def _ops_used(graph) -> list[str]:
    names = []
    for eqn in graph.eqns:
        py = eqn.prim.py
        uses_ops = py is None or (isinstance(py, str) and py.startswith("ops."))
        if getattr(eqn.prim, "custom", False):
            raise DualgpuError(f"dg.export: the custom op {eqn.prim.name!r} cannot be "
                               "exported (its implementation is a Python function of yours)")
        if callable(py) and eqn.prim.name in ("spmm", "sddmm"):
            raise DualgpuError("dg.export: sparse products cannot be exported yet")
        if uses_ops and eqn.prim.name not in names:
            if eqn.prim.name not in STANDALONE_OPS:
                raise DualgpuError(f"dg.export: op {eqn.prim.name!r} has no standalone form "
                                   "yet")
            names.append(eqn.prim.name)
    return names


def _with_locations(src: str, graph) -> str:
    """The program's lines, each equation annotated with the user's source line."""
    lines = src.splitlines()
    out, k = [], 0
    for line in lines:
        stripped = line.strip()
        if (stripped and not stripped.startswith(("def ", "#", "return"))
                and k < len(graph.eqns)):
            loc = graph.eqns[k].source
            k += 1
            if loc and "dualgpu" not in loc:  # a file name is data: printable, one line
                line = f"{line}  # " + "".join(c if c.isprintable() else "?" for c in loc)
        out.append(line)
    return "\n".join(out) + "\n"


def _module_text(what, fname, graph, passed, input_leaves, order, out_tree, checks) -> str:
    src, consts = generate_python(graph, "program")
    ops = _ops_used(graph)
    dtypes = [np.dtype(p.dtype).str for p in passed]
    head = [
        f'"""{fname}: the {what}, exported by dualgpu {__version__}.',
        "",
        "Standalone: it imports NumPy (and SciPy for special functions), not dualgpu.",
        f"Exported for {len(passed)} array input(s): "
        + ", ".join(f"{np.dtype(p.dtype).name}{list(np.shape(p))}" for p in passed) + ".",
        '"""',
        "import base64",
        "",
        "import numpy as np",
        "",
        "xp = np",
        _GLUE,
    ]
    if ops:
        head.append("\nclass ops:")
        head.append('    """The registry operations the program calls that NumPy has no '
                    'function for."""')
        for op in ops:
            body = STANDALONE_OPS[op].replace("\n", "\n    ").rstrip()
            head.append("\n    @staticmethod\n    " + body)
        head.append("")
    head += _constants(consts)
    program = _with_locations(src, graph)
    n_leaves = "_N_LEAVES"
    glue = [
        "",
        f"{n_leaves} = {max(input_leaves + [k for k, _ in checks], default=-1) + 1}",
        f"_INPUTS = {tuple(input_leaves)!r}",
        f"_DTYPES = {tuple(dtypes)!r}",
        f"_ORDER = {tuple(order)!r}",
        f"_OUT = {_spec(out_tree)}",
        f"_STATIC = {{{', '.join(f'{k}: {lit}' for k, lit in checks)}}}",
        "",
        "",
        f"def {fname}(*args, **kwargs):",
        f'    """The {what}, for arguments like the ones it was exported with."""',
        "    leaves = _leaves((args, kwargs), [])",
        f"    if len(leaves) < {n_leaves}:",
        "        raise TypeError(f'expected at least {_N_LEAVES} array/scalar leaves in the "
        "arguments, got {len(leaves)}')",
        "    for k, value in _STATIC.items():",
        "        if type(leaves[k]) is not type(value) or repr(leaves[k]) != repr(value):",
        "            raise ValueError(f'static argument leaf {k} is {leaves[k]!r}; this "
        "module was exported for {value!r}')",
        "    inputs = [xp.asarray(leaves[k], dtype=d) for k, d in zip(_INPUTS, _DTYPES)]",
        "    outs = program(*inputs)",
        "    return _build(_OUT, iter(outs[i] for i in _ORDER))",
    ]
    return "\n".join(head) + "\n\n\n" + program + "\n".join(glue) + "\n"
