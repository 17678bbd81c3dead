"""Safety of generated code: the source is built only from registry templates and generated
names; every name, C expression or template a user supplies is validated
(dualgpu/base/names.py) before it can reach generated source; nothing evaluates a user's
string. Hostile names go through dg.defprim, dg.custom_op and the names of traced
functions and of their arguments."""
from __future__ import annotations

import ast
import builtins
import os

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.base import names as naming
from dualgpu.core.primitives import same_as_first

HOSTILE_NAMES = [
    "x; import os",
    "__import__('os')",
    '{0}); system("rm"); (',
    "x\nimport os",
    "ñandú",
    "x\u200bfoo",          # zero-width space
    "а",                   # Cyrillic a
    "a" * 65,
    "a" * 10_000,
    "class", "def", "None", "lambda",
    "",
    "1abc",
    "__init__", "_xp", "__class__",
    "a-b", "a.b", "a b", "a(b)",
]
NOT_STRINGS = [None, 42, b"abc", ("a",)]

HOSTILE_C = [
    '{0}); system("rm"); (',
    "x; import os",
    "__import__('os')",
    "{0} + {7}",                     # operand out of range
    "exp({0})\n#include <stdio.h>",
    "exp({0}) // comment",
    "printf({0})",
    'asm("trap")',
    "exp({0}) ＋ 1",                 # non-ASCII
    "+".join(["{0}"] * 200),         # too long
    "{0}[0]",
    "*(&{0})",
    "{0} = 1",
]
GOOD_C = ["(exp({0}) + 1)", "fmax({0}, {1})", "{0} * 2.5f", "({0} > 0 ? {0} : 0.01 * {0})"]

HOSTILE_PY = [
    "__import__('os').system('ls')",
    "xp.sin({0}); import os",
    "xp.sin({0})\nimport os",
    "eval({0})",
    "open({0})",
    "{0}.__class__",
    "{0}.ctypes.data",
    "xp.ctypeslib.os.system({0})",
    "lambda: {0}",
    "{0} if {1} else {2}",
    "{0} = 5",
    "# {0}",
]


def _raises_safety(fn):
    with pytest.raises(dg.CodegenSafetyError):
        fn()


# --------------------------------------------------------------------------- validators
@pytest.mark.parametrize("name", HOSTILE_NAMES + NOT_STRINGS, ids=repr)
def test_check_identifier_rejects(name):
    _raises_safety(lambda: naming.check_identifier(name))


@pytest.mark.parametrize("name", ["cube", "my_op2", "Softsign", "a" * 64])
def test_check_identifier_accepts(name):
    assert naming.check_identifier(name) == name


@pytest.mark.parametrize("expr", HOSTILE_C + NOT_STRINGS, ids=repr)
def test_check_c_expression_rejects(expr):
    _raises_safety(lambda: naming.check_c_expression(expr, 2))


@pytest.mark.parametrize("expr", GOOD_C)
def test_check_c_expression_accepts(expr):
    assert naming.check_c_expression(expr, 2) == expr


@pytest.mark.parametrize("tpl", HOSTILE_PY + NOT_STRINGS, ids=repr)
def test_check_py_template_rejects(tpl):
    _raises_safety(lambda: naming.check_py_template(tpl))


def test_every_registered_template_passes_the_checks():
    """The registry's own templates are held to the rules applied to users'."""
    for name, prim in dg.REGISTRY.items():
        naming.check_identifier(name)
        if isinstance(prim.py, str):
            naming.check_py_template(prim.py)
        if isinstance(prim.c, str):
            naming.check_c_expression(prim.c, 16)


def test_error_message_of_a_huge_name_is_short():
    with pytest.raises(dg.CodegenSafetyError) as info:
        naming.check_identifier("a" * 100_000)
    assert len(str(info.value)) < 300


# --------------------------------------------------------------------------- defprim/custom_op
@pytest.mark.parametrize("name", HOSTILE_NAMES + NOT_STRINGS, ids=repr)
def test_defprim_rejects_hostile_names(name):
    before = dict(dg.REGISTRY)
    _raises_safety(lambda: dg.defprim(name, lambda xp, x: x, same_as_first))
    assert dg.REGISTRY == before


@pytest.mark.parametrize("name", HOSTILE_NAMES + NOT_STRINGS, ids=repr)
def test_custom_op_rejects_hostile_names(name):
    before = dict(dg.REGISTRY)
    _raises_safety(lambda: dg.custom_op(name, lambda xp, x: x, vjp=lambda g, p, ans: (g,)))
    assert dg.REGISTRY == before


@pytest.mark.parametrize("expr", HOSTILE_C, ids=repr)
def test_hostile_c_expressions_are_rejected(expr):
    before = dict(dg.REGISTRY)
    _raises_safety(lambda: dg.custom_op("safety_c_op", lambda xp, x: x,
                                        vjp=lambda g, p, ans: (g,), c=expr))
    if expr != "{0} + {7}":  # defprim does not know its arity: placeholders are not counted
        _raises_safety(lambda: dg.defprim("safety_c_prim", lambda xp, x: x, same_as_first,
                                          c=expr))
    assert dg.REGISTRY == before


@pytest.mark.parametrize("tpl", HOSTILE_PY, ids=repr)
def test_hostile_python_templates_are_rejected(tpl):
    before = dict(dg.REGISTRY)
    _raises_safety(lambda: dg.defprim("safety_py_prim", lambda xp, x: x, same_as_first, py=tpl))
    assert dg.REGISTRY == before


def test_string_parameters_are_quoted_in_generated_source():
    """A parameter value is data: a string that is not a plain identifier is printed as a
    string literal, never as code."""
    payload = "0); __import__('builtins').DUALGPU_PWNED = 1; ("
    op = dg.defprim("safety_mode_op", lambda xp, x, mode: x * 2.0,
                    lambda avals, mode: avals[0],
                    jvp=lambda p, t, mode: (op.bind(p[0], mode=mode), t[0] * 2.0),
                    vjp=lambda g, p, ans, mode: (g * 2.0,),
                    py="ops.safety_mode_op({0}, mode={mode})")
    try:
        f = lambda x: np.sum(op.bind(x, mode=payload) ** 2)  # noqa: E731
        x = np.arange(3.0)
        src = dg.source(dg.grad(f), x)
        assert repr(payload) in src
        np.testing.assert_allclose(dg.grad(f)(x), 8 * x)
        assert not hasattr(builtins, "DUALGPU_PWNED")
    finally:
        dg.REGISTRY.pop("safety_mode_op", None)  # leave the registry as the other tests expect


# --------------------------------------------------------------------------- traced functions
def _named(name, body=lambda x: np.sum(np.sin(x) ** 2)):
    def f(x):
        return body(x)

    f.__name__ = name
    f.__qualname__ = name
    return f


_TRACED_NAMES = [n for n in HOSTILE_NAMES if n] + ["xp", "ops", "c0", "t1", "in0", "float"]


@pytest.mark.parametrize("name", _TRACED_NAMES, ids=repr)
def test_hostile_function_names_generate_safe_code(name):
    f = _named(name)
    x = np.linspace(-1, 1, 4)
    want_g = 2 * np.sin(x) * np.cos(x)
    np.testing.assert_allclose(dg.grad(f)(x), want_g, rtol=1e-12)
    np.testing.assert_allclose(dg.hvp(f)(x, np.ones(4)), 2 * np.cos(2 * x), rtol=1e-12)
    for transformed in (dg.grad(f), dg.hvp(f), dg.jit(f)):
        args = (x, x) if transformed.__class__.__name__ == "_Hvp" else (x,)
        src = dg.source(transformed, *args)
        _assert_generated_source_is_clean(src)


class _CallableWithOddName:
    __name__ = 42

    def __call__(self, x):
        return np.sum(x ** 3)


def test_non_string_function_name():
    x = np.arange(3.0)
    np.testing.assert_allclose(dg.grad(_CallableWithOddName())(x), 3 * x ** 2)


@pytest.mark.parametrize("params", [("xp",), ("ops",), ("t0",), ("c0",), ("float",),
                                    ("x", "x_dot"), ("x", "out0_bar"), ("in0", "i0")])
def test_argument_names_do_not_shadow_generated_names(params):
    """Argument names become parameters of the generated function: they must not shadow
    the array module, the registry's implementations or generated variables."""
    W = np.array([0.5, -1.0, 2.0])
    args = ", ".join(params)
    src = (f"def f({args}):\n"
           f"    return np.sum(np.sin({params[0]}) * np.cos({params[-1]}) * W)\n")
    ns = {"np": np, "W": W}
    exec(src, ns)  # test code: builds a function with these parameter names
    f = ns["f"]
    x = np.array([0.3, 0.5, 0.7])
    xs = (x,) * len(params)

    def reference(*a):
        return np.sum(np.sin(a[0]) * np.cos(a[-1]) * W)

    for argnums in range(len(params)):
        np.testing.assert_allclose(dg.grad(f, argnums)(*xs), dg.grad(reference, argnums)(*xs),
                                   rtol=1e-13)
        np.testing.assert_allclose(dg.hvp(f, argnums)(*xs, x),
                                   dg.hvp(reference, argnums)(*xs, x), rtol=1e-13)
    out, out_dot = dg.jvp(f, xs, xs)
    want = dg.jvp(reference, xs, xs)
    np.testing.assert_allclose(out_dot, want[1], rtol=1e-13)
    _assert_generated_source_is_clean(dg.source(dg.hvp(f), *xs, x))


def test_safe_input_names():
    got = naming.safe_input_names(["xp", "ops", "t0", "x", "x", "x_dot", "c12", "ñ", "float"])
    assert len(set(got)) == len(got)
    for name in got:
        assert name.isidentifier() and name.isascii()
        assert name not in naming.RESERVED_NAMES and not naming._GENERATED.match(name)


@pytest.mark.parametrize("raw", _TRACED_NAMES + [None, 7], ids=repr)
def test_function_name_is_a_safe_identifier(raw):
    name = naming.function_name(raw)
    assert name.isidentifier() and name.isascii() and len(name) <= 64
    assert name not in naming.RESERVED_NAMES and not naming._GENERATED.match(name)
    import keyword

    assert not keyword.iskeyword(name)


# --------------------------------------------------------------------------- generated source
def _assert_generated_source_is_clean(src: str):
    """Generated Python: one function of assignments and a return, reading only its
    parameters, its own variables, constants, ``xp``, ``ops`` and ``float``; no imports,
    no dunder attributes, no string constants other than dtype-free literals."""
    tree = ast.parse(src)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(funcs) == len(tree.body) >= 1
    for fn in funcs:
        params = {a.arg for a in fn.args.args}
        assigned = set()
        for stmt in fn.body:
            assert isinstance(stmt, (ast.Assign, ast.Return, ast.Expr)), ast.dump(stmt)
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            assigned.add(n.id)
        allowed = params | assigned | {"xp", "ops", "float"}
        for node in ast.walk(fn):
            assert not isinstance(node, (ast.Import, ast.ImportFrom, ast.Lambda, ast.Global,
                                         ast.Nonlocal, ast.With, ast.Try)), ast.dump(node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                assert node.id in allowed or naming._GENERATED.match(node.id), node.id
            if isinstance(node, ast.Attribute):
                assert not node.attr.startswith("_"), node.attr


def test_generated_sources_are_clean():
    A = np.arange(6.0).reshape(2, 3)

    def f(x, y):
        z = np.tanh(A @ x) * y[::-1] + np.sum(x ** 2)
        return np.sum(dg.nn.softplus(z)) + np.max(np.take(x, [0, 2, 2]))

    x, y = np.linspace(-1, 1, 3), np.linspace(0.5, 1, 2)
    for t, args in [(dg.grad(f), (x, y)), (dg.hvp(f), (x, y, x)),
                    (dg.grad_and_hvp(f, argnums=(0, 1)), (x, y, (x, y))),
                    (dg.jit(f), (x, y))]:
        _assert_generated_source_is_clean(dg.source(t, *args))


# --------------------------------------------------------------------------- no eval of strings
def test_library_evaluates_no_user_strings():
    """Only the code generator compiles source (its own, built from templates): no other
    module of the library calls eval, exec or compile."""
    import dualgpu

    root = os.path.dirname(dualgpu.__file__)
    found = []
    for dirpath, _, files in os.walk(root):
        for fname in files:
            if not fname.endswith(".py"):
                continue
            path = os.path.join(dirpath, fname)
            with open(path) as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("eval", "exec", "compile"):
                    found.append((os.path.relpath(path, root), node.func.id))
    allowed = {(os.path.join("codegen", "python.py"), "exec"),
               (os.path.join("codegen", "python.py"), "compile")}
    assert set(found) <= allowed, sorted(set(found) - allowed)


def test_string_parameters_in_cuda_kernels_are_validated():
    """A parameter printed into a fused CUDA kernel (a user op's ``{k}``) is held to the C
    whitelist; the kernel source is generated here without a GPU."""
    from dualgpu.codegen.cuda import region_kernels
    from dualgpu.fusion import plan_graph

    op = dg.defprim("safety_cuda_param", lambda xp, x, k: x * 2.0,
                    lambda avals, k: avals[0], kind="elementwise", c="({0} * {k})")
    op.arity = 1
    try:
        def kernels(k):
            g = dg.trace(lambda x: op.bind(np.sin(x), k=k) + 1.0, np.ones(8))
            return [region_kernels(r).source for r in plan_graph(g).regions]

        assert "(v1 * 2.0)" in "".join(kernels("2.0"))
        for payload in ['2.0); asm("trap"); (', "2.0\n#include <x>", "system"]:
            _raises_safety(lambda payload=payload: kernels(payload))
    finally:
        dg.REGISTRY.pop("safety_cuda_param", None)
