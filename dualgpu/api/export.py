"""``dg.export``: a derivative program as a standalone Python module you can ship, read and
edit, which imports only NumPy (SciPy too, when the program calls a special function) -- or,
for CuPy, only CuPy (and NumPy for dtypes and constants), with dualgpu's generated CUDA
kernels embedded and its launch plan written out.

The module holds the generated program (the same straight-line source ``dg.source`` shows),
the constants it closes over (as bytes, never as code), the few registry operations it calls
that NumPy has no function for, and glue that takes the arguments the transformed function
takes -- pytrees and keyword arguments included -- and returns its result in the same
structure. Static (non-array) arguments are fixed at export time; the exported function
checks that it gets the same values, and that each array argument has the example's shape
and dtype (one helper, ``_checked``, for both libraries; it names the argument). Each line
of the program carries the user's source line it came from.

``backend="cupy"`` (the default for CuPy example arguments) writes the fusion plan a CuPy call
runs (:mod:`dualgpu.codegen.cupy_python`): the kernels' CUDA source as one string compiled
with ``cupy.RawModule`` at import, one launch per kernel, the library calls on ``xp =
cupy``. The kernels are specialised to the example shapes and to C-contiguous arrays, so the
exported function checks each array argument's type, shape, dtype and layout. The text is
pure Python to generate: ``dg.export(f, *numpy_args, backend="cupy")`` works without a GPU.

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
import inspect
import keyword
import os
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from .._version import __version__
from ..backends import array_backend
from ..backends.base import Backend
from ..backends.cupy import CupyBackend
from ..base import tree as pytree
from ..base.names import check_identifier
from ..codegen.cupy_python import kernel_global, plan_program
from ..codegen.python import emit_equation, generate_python
from ..core import encode
from ..core.primitives import REGISTRY
from ..core.trace import Tracer
from ..errors import DualgpuError, RandomInTraceError, library_location
from ..fusion import plan_graph
from ..runtime.executor import config
from ..runtime.signature import Signature
from ..runtime.transformed import Transformed
from ..transforms.index_bounds import with_index_bounds
from .differentiation import jit

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


def _checked(a, k, dtype, shape):
    """Array argument leaf ``k`` (``_WHERE[k]`` names it), checked against the example this
    module was exported with: an ``xp.ndarray`` of the same shape and dtype (with
    ``_NUMBERS``, a number is one: a NumPy number of its dtype, a Python one float64 or
    complex128, as dualgpu takes them), and C-contiguous where the program depends on the
    layout (``_C_CONTIGUOUS``)."""
    if _NUMBERS and isinstance(a, (int, float, complex, np.generic)) and type(a) is not bool:
        a = xp.asarray(a, dtype=a.dtype if isinstance(a, np.generic)
                       else np.result_type(a, np.float64))
    if type(a) is not xp.ndarray:
        raise TypeError(f"{_WHERE[k]}: expected a {xp.__name__}.ndarray, got "
                        f"{type(a).__module__}.{type(a).__name__}{_TYPE_HINT}")
    if a.dtype != dtype or a.shape != shape:
        raise ValueError(f"{_WHERE[k]} is {a.dtype.name}{list(a.shape)}; this module was "
                         f"exported for {dtype.name}{list(shape)} (its program is specialised "
                         "to the example's shapes and dtypes): pass an array of that shape "
                         "and dtype, or export again for this one")
    if _C_CONTIGUOUS and not a.flags.c_contiguous:
        raise ValueError(f"{_WHERE[k]} is not C-contiguous (strides {a.strides}); this "
                         "module's CUDA kernels read C-contiguous arrays: pass "
                         f"{xp.__name__}.ascontiguousarray(...) of it")
    return a
'''

_NUMPY_GLUE = '''
_NUMBERS = True  # a number is a 0-d array
_TYPE_HINT = ""
_C_CONTIGUOUS = False  # NumPy programs read any layout


def _special():
    import scipy.special  # only programs that call a special function need SciPy

    return scipy.special
'''

_CUPY_GLUE = '''
_NUMBERS = False  # the kernels read device arrays
_TYPE_HINT = " (move it to the GPU with cupy.asarray)"
_C_CONTIGUOUS = True  # the kernels index C-contiguous arrays


def _special():
    import cupyx.scipy.special  # only programs that call a special function need it

    return cupyx.scipy.special


def _c(a, dtype):
    """``a`` as a C-contiguous array of ``dtype``, the layout the kernels were generated
    for: ``a`` itself when it is one, else a copy."""
    if isinstance(a, xp.ndarray) and a.dtype == dtype and a.flags.c_contiguous:
        return a
    return xp.array(a, dtype=dtype, order="C")
'''

_INDEX_CHECK = '''

def _check_indices(bounds):
    """Raise NumPy's IndexError where an index array the program read holds an index
    outside [-n, n) (CuPy's gathers wrap around): ``bounds``, the program's last output,
    holds the smallest and the largest index of each array of ``_INDEX_SITES`` (axis,
    size n, the line that indexed); one copy to the host."""
    bounds = xp.asnumpy(bounds)
    for k, (axis, n, where) in enumerate(_INDEX_SITES):
        lo, hi = int(bounds[2 * k]), int(bounds[2 * k + 1])
        if hi >= n or lo < -n:
            raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for axis "
                             f"{axis} with size {n} (indexed at {where})")

'''


def export(fn: Callable, *example_args, path: str | None = None, name: str | None = None,
           backend: str | None = None, **example_kwargs) -> str:
    """The source of a standalone module computing ``fn`` (a plain or transformed function)
    for arguments shaped and typed like ``example_args``; written to ``path`` when given.

    The module defines one function, ``name`` (default: the transformed function's name),
    called like ``fn``. ``backend`` is ``"numpy"`` (a module needing NumPy, and SciPy for
    special functions) or ``"cupy"`` (a module needing CuPy, with the generated CUDA
    kernels embedded); by default the example arguments' library. A CuPy module can be
    written from NumPy example arguments, without a GPU. Sparse matrices, custom ops run
    as library calls and ``vjp`` are refused with a :class:`~dualgpu.DualgpuError`.
    """
    t = fn if isinstance(fn, Transformed) else jit(fn)
    if t.kind == "vjp":
        raise DualgpuError("dg.export: a vjp returns a pullback function and cannot be "
                           "exported; export dg.grad or dg.jit of the pulled-back function")
    if backend not in (None, "numpy", "cupy"):
        raise DualgpuError(f"dg.export: backend must be 'numpy' or 'cupy', got {backend!r}")
    fname = (check_identifier(name, what="dg.export name") if name is not None
             else _python_name(t.__name__))
    args = _fresh(example_args)
    kwargs = _fresh(example_kwargs)
    fargs, extra = t.split(args)
    sig = Signature(fargs, kwargs, t.argnums, t.__name__)
    if sig.traced:
        raise DualgpuError("dg.export: call it on concrete arrays, not inside a traced "
                           "function")
    if sig.sparse:
        raise DualgpuError("dg.export: sparse matrix arguments cannot be exported yet")
    target = backend or sig.backend.export_target
    extras = t.extra_inputs(sig, extra)
    with cupy_build() if target == "cupy" else _as_is():
        compiled = t.compiled(sig)
    if compiled.draws:
        raise RandomInTraceError(
            f"dg.export: {getattr(t.fn, '__name__', 'the function')} draws random numbers "
            f"({compiled.draws[0].label}), which an exported module cannot draw again at every "
            "call; draw them outside and pass them in as arguments")
    if compiled.decisions is not None:
        raise DualgpuError(
            f"dg.export: {t.__name__} takes a Python branch on traced values (at "
            f"{compiled.decisions.wheres[0]}): its program holds the branch these example "
            "arguments take, and an exported program cannot trace the others. Write the "
            "branch with np.where(cond, a, b), or export one program per branch")
    passed = list(sig.inputs) + list(extras)
    outs = compiled.exe(*passed)
    result = t.finish(compiled, sig, outs)
    input_leaves = _input_positions(args, kwargs, fargs, sig, extras)
    out_leaves, out_tree = pytree.flatten(result)
    order = [_index_of(o, outs, "a result") for o in out_leaves]
    what = f"{t.kind} of {_python_name(getattr(t.fn, '__name__', 'f'))}"
    checks = _static_checks(args, kwargs, input_leaves)
    where = _argument_names(t.fn, args, kwargs)
    if target == "cupy":
        text = _cupy_module_text(what, fname, compiled.graph, passed, input_leaves, order,
                                 out_tree, checks, where)
    else:
        text = _module_text(what, fname, compiled.graph, passed, input_leaves, order,
                            out_tree, checks, where)
    if path is not None:
        with open(os.fspath(path), "w") as fh:
            fh.write(text)
    return text


class CupyOnCpu(Backend):
    """The CuPy backend as a CuPy build made on the CPU sees it (a CuPy export or plan
    from NumPy example arguments, without CuPy or a GPU): CuPy's name and capabilities,
    which decide how its programs are built (``config.stack_gemms_for``); no modules, no
    CuPy array to recognise, and anything that would touch the device refused.

    Example::

        >>> from dualgpu.backends import missing_members
        >>> b = CupyOnCpu()
        >>> missing_members(CupyOnCpu), b.export_target, b.is_array(np.ones(2))
        ([], 'cupy', False)
    """

    name = export_target = CupyBackend.name
    on_device = CupyBackend.on_device
    runs_fused_kernels = CupyBackend.runs_fused_kernels
    runs_host_kernels = CupyBackend.runs_host_kernels
    replays_cuda_graphs = CupyBackend.replays_cuda_graphs
    checks_indices = CupyBackend.checks_indices
    xp = special = linalg = sparse = sparse_linalg = None  # CuPy is not imported for a build

    def is_array(self, x) -> bool:
        return False  # a build made on the CPU is given NumPy arrays only

    def is_sparse(self, x) -> bool:
        return False

    def _needs_gpu(self, what: str):
        return DualgpuError(f"{what} needs CuPy and a GPU; this is a CuPy build made on the "
                            "CPU (dg.export(..., backend='cupy')), which only writes code: "
                            "run the exported module on the GPU machine")

    def to_device(self, a):
        raise self._needs_gpu("moving an array to the device")

    def to_host(self, a):
        raise self._needs_gpu("copying an array from the device")

    def as_arrays(self, values: list) -> list:
        raise self._needs_gpu("running a program")

    def device_of(self, a):
        raise self._needs_gpu("the device of an array")

    def default_device(self):
        raise self._needs_gpu("the current CUDA device")

    def synchronize(self) -> None:
        raise self._needs_gpu("synchronizing the device")

    def stable_sort(self, x, axis: int):
        raise self._needs_gpu("sorting")

    def stable_argsort(self, x, axis: int):
        raise self._needs_gpu("sorting")

    def scatter_add(self, out, key, values):
        raise self._needs_gpu("scatter_add")

    def linear_operator_class(self):
        raise self._needs_gpu("cupyx's LinearOperator")

    def matmul_precision(self, precision: str):
        raise self._needs_gpu("the cuBLAS compute type")

    def keep_freed_memory(self) -> None:
        pass  # no array is made: CuPy's pool keeps what its arrays free


@contextmanager
def cupy_build():
    """Build switches as a CuPy call sets them, for programs traced on NumPy arrays that
    stand for CuPy ones (a CuPy export or plan made without a GPU)."""
    saved = config["stack_gemms"]
    wanted = config.stack_gemms_for(CupyOnCpu())
    if wanted == config.stack_gemms_for(None):  # the same program either way: keep caches
        yield
        return
    config["stack_gemms"] = wanted
    try:
        yield
    finally:
        config["stack_gemms"] = saved


@contextmanager
def _as_is():
    yield


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
        b = array_backend(x)
        if b is not None and b.on_device and b.is_array(x):
            return x.copy()
        return x

    return pytree.tree_map(fresh, tree)


def _index_of(obj, items, what: str) -> int:
    for i, x in enumerate(items):
        if x is obj:
            return i
    raise DualgpuError(f"dg.export: cannot tell where {what} of this transform comes from "
                       "(export dg.jit of a function returning arrays instead)")


def _input_positions(args, kwargs, fargs, sig, extras) -> list:
    """For each program input, the index of its leaf in ``_leaves((args, kwargs))``."""
    all_leaves = pytree.leaves((args, kwargs))
    n_f = len(pytree.leaves(tuple(fargs)))
    n_args = len(pytree.leaves(tuple(args)))
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
    for k, leaf in enumerate(pytree.leaves((args, kwargs))):
        if k in used or isinstance(leaf, np.ndarray):
            continue
        try:
            checks.append((k, encode.py_literal(leaf, "a static argument")))
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
        keys = ", ".join(encode.py_literal(k, "a dict key") for k in tree.meta)
        return f"('dict', [{keys}], {kids})"
    if tree.kind in ("tuple", "list"):
        return f"({tree.kind!r}, {kids})"
    return f"('tuple', {kids})"  # a namedtuple comes back as a tuple


def _constants(consts: dict) -> list[str]:
    lines = []
    for cname, value in consts.items():
        b = array_backend(value)
        if b is not None and b.is_array(value):
            value = b.to_host(value)  # a closed-over CuPy array: its bytes, from the device
        a = np.ascontiguousarray(np.asarray(value))
        if a.dtype.kind not in "biufc":
            raise DualgpuError(f"dg.export: constant {cname} has dtype {a.dtype}")
        data = base64.b64encode(a.tobytes()).decode("ascii")
        lines.append(f"{cname} = _constant({data!r}, {a.dtype.str!r}, {tuple(a.shape)!r})")
    return lines


def _ops_used(eqns, cupy: bool = False) -> list[str]:
    """The registry ops that ``eqns`` (the equations run as Python) call as ``ops.<name>``;
    refuses what the module cannot compute without dualgpu."""
    names = []
    for eqn in eqns:
        if getattr(eqn.prim, "custom", False):
            raise DualgpuError(f"dg.export: the custom op {eqn.prim.name!r} cannot be "
                               "exported (its implementation is a Python function of yours)")
        refused = eqn.prim.standalone_refused.get("numpy")  # for every library
        if refused is not None:
            raise DualgpuError(f"dg.export: {eqn.prim.name}: {refused}")
        # a template may be a function (scatter_add's): ask the source it writes
        uses_ops = f"ops.{eqn.prim.name}(" in emit_equation(eqn, ["_"] * len(eqn.inputs))
        if uses_ops and eqn.prim.name not in names:
            library = "cupy" if cupy else "numpy"
            if library in eqn.prim.standalone_refused:
                raise DualgpuError(f"dg.export: op {eqn.prim.name!r} cannot be exported for "
                                   f"CuPy ({eqn.prim.standalone_refused[library]})")
            if library not in eqn.prim.standalone:
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
            if loc and not library_location(loc):  # a file name is data: printable
                line = f"{line}  # " + "".join(c if c.isprintable() else "?" for c in loc)
        out.append(line)
    return "\n".join(out) + "\n"


def _ops_class(ops: list, library: str, title: str) -> list[str]:
    """The class ``ops`` of the module: each op's function for ``library`` (the op's
    ``defstandalone`` text)."""
    if not ops:
        return []
    lines = ["\nclass ops:",
             f'    """The registry operations the program calls that {title} has no '
             'function for."""']
    for op in ops:
        body = REGISTRY[op].standalone[library].replace("\n", "\n    ").rstrip()
        lines.append("\n    @staticmethod\n    " + body)
    lines.append("")
    return lines


def _shapes_line(passed) -> str:
    return (f"Exported for {len(passed)} array input(s): "
            + ", ".join(f"{np.dtype(p.dtype).name}{list(np.shape(p))}" for p in passed) + ".")


def _glue(what, fname, passed, input_leaves, order, out_tree, checks, where,
          index_sites=()) -> list:
    """The module's tables and its public function, which checks every argument leaf
    (``_checked``; ``where`` names them) and calls the program; with ``index_sites``
    (:func:`~dualgpu.transforms.index_bounds.with_index_bounds`), it checks the index bounds
    the program returns last."""
    dtypes = [np.dtype(p.dtype).str for p in passed]
    shapes = tuple(tuple(int(d) for d in np.shape(p)) for p in passed)
    lines = [
        "",
        f"_N_LEAVES = {len(where)}",
        f"_WHERE = {encode.py_literal(tuple(where), 'the argument names')}",
        f"_INPUTS = {tuple(input_leaves)!r}",
        f"_DTYPES = {tuple(dtypes)!r}",
        f"_SHAPES = {encode.py_literal(shapes, 'the input shapes')}",
        f"_ORDER = {tuple(order)!r}",
        f"_OUT = {_spec(out_tree)}",
        f"_STATIC = {{{', '.join(f'{k}: {lit}' for k, lit in checks)}}}",
        "",
        "",
        f"def {fname}(*args, **kwargs):",
        f'    """The {what}, for arguments like the ones it was exported with."""',
        "    leaves = _leaves((args, kwargs), [])",
        "    if len(leaves) != _N_LEAVES:",
        "        raise TypeError(f'expected {_N_LEAVES} leaves in the arguments (arrays and "
        "static values, as in the example this module was exported with), got "
        "{len(leaves)}')",
        "    for k, value in _STATIC.items():",
        "        if type(leaves[k]) is not type(value) or repr(leaves[k]) != repr(value):",
        "            raise ValueError(f'{_WHERE[k]} (a static argument) is {leaves[k]!r}; "
        "this module was exported for {value!r}')",
        "    inputs = [_checked(leaves[k], k, np.dtype(d), s)",
        "              for k, d, s in zip(_INPUTS, _DTYPES, _SHAPES)]",
        "    outs = program(*inputs)",
        *(["    _check_indices(outs[-1])"] if index_sites else []),
        "    return _build(_OUT, iter(outs[i] for i in _ORDER))",
    ]
    if not index_sites:
        return lines
    sites = tuple((s.axis, s.size, _printable(s.source or "<unknown location>"))
                  for s in index_sites)
    return [_INDEX_CHECK, f"_INDEX_SITES = {encode.py_literal(sites, 'the index sites')}",
            *lines]


def _printable(text: str) -> str:
    """A file name and line as data for a message: printable, one line."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _argument_names(fn, args, kwargs) -> list[str]:
    """Words for every leaf of ``(args, kwargs)`` in the exported function's order:
    ``argument 1 (X)``, ``argument 0 (params)['W']``, ``keyword argument 'scale'``."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for i, a in enumerate(args):
        label = f"argument {i}" + (f" ({params[i]})" if i < len(params) else "")
        _leaf_names(a, label, names)
    for key in pytree._dict_keys(kwargs):
        _leaf_names(kwargs[key], f"keyword argument {_key_text(key)}", names)
    return names


def _leaf_names(tree, label: str, out: list) -> None:
    """Append a name for each leaf of ``tree`` (dualgpu's order: dict keys sorted)."""
    def walk(t, path):
        if t.is_leaf:
            out.append(label + path)
        elif t.kind == "dict":
            for key, child in zip(t.meta, t.children):
                walk(child, f"{path}[{_key_text(key)}]")
        else:
            for i, child in enumerate(t.children):
                walk(child, f"{path}[{i}]")

    walk(pytree.structure(tree), "")


def _key_text(key) -> str:
    """A dict key in words: its repr for a short string or an int, else its type."""
    if type(key) is str and len(key) <= 40 or type(key) is int:
        return repr(key)
    return f"<a {type(key).__name__} key>"


def _module_text(what, fname, graph, passed, input_leaves, order, out_tree, checks,
                 where) -> str:
    src, consts = generate_python(graph, "program")
    ops = _ops_used(graph.eqns)
    head = [
        f'"""{fname}: the {what}, exported by dualgpu {__version__}.',
        "",
        "Standalone: it imports NumPy (and SciPy for special functions), not dualgpu.",
        _shapes_line(passed),
        '"""',
        "import base64",
        "",
        "import numpy as np",
        "",
        "xp = np",
        _GLUE + _NUMPY_GLUE,
    ]
    head += _ops_class(ops, "numpy", "NumPy")
    head += _constants(consts)
    program = _with_locations(src, graph)
    glue = _glue(what, fname, passed, input_leaves, order, out_tree, checks, where)
    return "\n".join(head) + "\n\n\n" + program + "\n".join(glue) + "\n"


def _cupy_module_text(what, fname, graph, passed, input_leaves, order, out_tree,
                      checks, where) -> str:
    # CuPy's gathers wrap around: the program also returns its index arrays' bounds
    checked = with_index_bounds(graph) if config["check_indices"] else None
    if checked is not None:
        graph = checked.graph
    plan = plan_graph(graph, recompute=config["recompute"])
    prog = plan_program(plan, "program")
    ops = _ops_used(prog.library_eqns, cupy=True)
    regions = len(plan.regions)
    head = [
        f'"""{fname}: the {what}, exported by dualgpu {__version__} for CuPy.',
        "",
        "Standalone: it imports CuPy (and NumPy for dtypes and constants), not dualgpu.",
        f"The fusion plan: {regions} fused region(s) run by {prog.launches} launch(es) of "
        f"{len(prog.kernels)} generated CUDA kernel(s), compiled at import, and "
        f"{len(plan.steps) - regions} library call(s).",
        _shapes_line(passed),
        "The kernels are specialised to these shapes and dtypes and to C-contiguous arrays:",
        "the function checks its array arguments and raises a clear error for others.",
        '"""',
        "import base64",
        "",
        "import cupy",
        "import numpy as np",
        "",
        "xp = cupy",
        _GLUE + _CUPY_GLUE,
    ]
    head += _ops_class(ops, "cupy", "CuPy")
    head += _constants(prog.consts)
    head += _kernel_lines(prog.kernels)
    glue = _glue(what, fname, passed, input_leaves, order, out_tree, checks, where,
                 checked.sites if checked is not None else ())
    return ("\n".join(head) + "\n\n\n" + prog.source
            + "\n".join(glue) + "\n")


def _kernel_lines(kernels: dict) -> list[str]:
    """The CUDA source of every kernel (each once) as one string, compiled at import, and
    one module-level name per kernel."""
    if not kernels:
        return []
    lines = ["", "# The generated CUDA kernels (dg.source shows the same text), compiled once.",
             "_CUDA = " + encode.py_text_block("\n".join(kernels.values()), "the CUDA source"),
             "_kernels = cupy.RawModule(code=_CUDA)"]
    for kname in kernels:
        lines.append(f"{kernel_global(kname)} = _kernels.get_function("
                     f"{encode.py_literal(kname, 'a kernel name')})")
    return lines
