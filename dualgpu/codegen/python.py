"""Graph -> readable, standalone Python source (and a compiled function).

The source is built only from the registry's templates and generated names; constants are
passed in by name, never printed into the code, and every literal or parameter value is
written by the one encoder, :mod:`dualgpu.core.encode` (values are data, never code).
The same source runs on NumPy and on CuPy (``xp`` is bound to the array module).
"""
from __future__ import annotations

from string import Formatter

from ..base import names as naming
from ..core import encode
from ..core.ir import Graph, Literal, Var
from ..core.pprint import Namer
from ..core.primitives import REGISTRY


class OpsNamespace:
    """``ops.<primitive>(...)`` in generated code: the registry's implementations on ``xp``."""

    def __init__(self, xp):
        self._xp = xp

    def __getattr__(self, name):
        prim = REGISTRY[name]
        xp = self._xp

        def call(*args, **params):
            return prim.impl(xp, *args, **params)

        setattr(self, name, call)
        return call


def literal_source(v) -> str:
    """Python source of a literal operand (see :mod:`dualgpu.core.encode`)."""
    return encode.py_literal(v, "literal")


def _param_source(v, what: str = "parameter") -> str:
    return encode.py_literal(v, what)


def _attribute_fields(tpl: str) -> set:
    """Names of the template's ``xp.{name}`` placeholders (filled with a dtype name)."""
    fields = set()
    for literal, field, _spec, _conv in Formatter().parse(tpl):
        if field and not field.isdigit() and literal.endswith("xp."):
            fields.add(field)
    return fields


def emit_equation(eqn, arg_names: list[str]) -> str:
    """The right-hand side of one equation, from the primitive's ``py`` template.

    Every parameter reaches the source through the encoder: a value is printed as a
    literal (a string quoted), and a template's ``xp.{dtype}`` only ever receives one of
    the fixed dtype names."""
    prim = eqn.prim
    tpl = prim.py
    encode.check_params(prim.name, eqn.params)
    if callable(tpl):
        return tpl(arg_names, encode.template_params(prim.name, eqn.params))
    if tpl is None:
        params = "".join(f", {encode.check_param_name(prim.name, k)}="
                         f"{_param_source(v, f'{prim.name}: parameter {k!r}')}"
                         for k, v in eqn.params.items())
        return f"ops.{prim.name}({', '.join(arg_names)}{params})"
    attrs = _attribute_fields(tpl)
    fmt_params = {k: (encode.py_dtype_attr(v, f"{prim.name}: parameter {k!r}") if k in attrs
                      else _param_source(v, f"{prim.name}: parameter {k!r}"))
                  for k, v in eqn.params.items()}
    return tpl.format(*arg_names, **fmt_params)


# temporaries at least this large are dropped (``del``) after their last use, so that the
# allocator hands their memory to the next ones: a program that keeps every temporary alive
# touches fresh pages on every call (the MLP HVP on NumPy spent half its time so)
FREE_BYTES = 1 << 16


def freed_after(graph: Graph) -> dict:
    """Equation index -> the large temporaries whose last use is that equation (never an
    input, a constant or an output of the graph)."""
    last: dict = {}
    for i, eqn in enumerate(graph.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last[a.id] = (i, a)
    keep = {a.id for a in graph.outputs if isinstance(a, Var)}
    keep.update(v.id for v in graph.inputs)
    keep.update(c.id for c in graph.consts)
    freed: dict = {}
    for vid, (i, v) in last.items():
        if vid not in keep and v.aval.size * v.dtype.itemsize >= FREE_BYTES:
            freed.setdefault(i, []).append(v)
    return freed


def generate_python(graph: Graph, fn_name: str | None = None,
                    arrays: bool = False) -> tuple[str, dict]:
    """Source of a function computing the graph, and the constants it reads by name. With
    ``arrays``, every 0-d output is returned as an array of ``xp`` (NumPy's functions
    return NumPy scalars for them).

    Example::

        >>> src, consts = generate_python(dg.trace(lambda x: np.sin(x) * 2, np.ones(3)))
        >>> print(src)
        def f_lambda(x):
            t0 = xp.sin(x)
            t1 = t0 * 2
            return (t1,)
        <BLANKLINE>
    """
    fn_name = naming.function_name(fn_name or graph.name)
    name = Namer(graph)
    # the user's argument names become parameters: keep them off xp, ops, t0, c0, ...
    for v, safe in zip(graph.inputs, naming.safe_input_names([name(v) for v in graph.inputs])):
        name.names[v.id] = safe
    consts = {name(c): c.value for c in graph.consts}
    params = ", ".join(name(v) for v in graph.inputs)
    lines = [f"def {fn_name}({params}):"]
    for c in graph.consts:
        lines.append(f"    # {name(c)}: constant {c.aval.str_short()}")
    freed = freed_after(graph)
    for i, eqn in enumerate(graph.eqns):
        args = [literal_source(a.value) if isinstance(a, Literal) else name(a)
                for a in eqn.inputs]
        rhs = emit_equation(eqn, args)
        outs = ", ".join(name(v) for v in eqn.outs)
        if eqn.prim.multiple_results and len(eqn.outs) == 1:
            outs += ","  # a tuple of one output, unpacked
        lines.append(f"    {outs} = {rhs}")
        if i in freed:
            lines.append(f"    del {', '.join(name(v) for v in freed[i])}")
    results = [literal_source(a.value) if isinstance(a, Literal) else name(a)
               for a in graph.outputs]
    if arrays:
        results = [f"xp.asarray({o})" if tuple(a.shape) == () else o
                   for o, a in zip(results, graph.outputs)]
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n", consts


def compile_python(graph: Graph, xp, fn_name: str | None = None, arrays: bool = False):
    """Compile the generated source into a function over arrays of ``xp`` (``arrays``: see
    :func:`generate_python`)."""
    src, consts = generate_python(graph, fn_name, arrays)
    namespace = {"xp": xp, "ops": OpsNamespace(xp), **consts}
    code = compile(src, f"<dualgpu generated {graph.name}>", "exec")
    exec(code, namespace)  # the source is built from registry templates only
    # popped: a function in its own globals is a cycle, and its constants (closed-over
    # arrays) would wait for the cycle collector instead of going with the program
    fn = namespace.pop(naming.function_name(fn_name or graph.name))
    fn.__dualgpu_source__ = src
    return fn


