"""dg.export: the exported module computes what dualgpu computes, in a Python where dualgpu
cannot be imported; pytrees, keywords, static values, constants and special functions
travel; what cannot be exported is refused clearly; names and values are data."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special

import dualgpu as dg

RNG = np.random.default_rng(0)
W = RNG.standard_normal(3)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal(5)
V = RNG.standard_normal(3)
SHIFT = RNG.standard_normal(5)  # a closed-over constant


def loss(w, X, y):
    return np.mean((np.tanh(X @ w + SHIFT) - y) ** 2)


def params_loss(params, X, *, scale=1.0):
    h = X @ params["W"] + params["b"]
    return scale * np.sum(scipy.special.erf(h) ** 2) + np.sum(scipy.special.gammaln(
        2.0 + params["b"] ** 2))


PARAMS = {"W": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}


def _run_without_dualgpu(tmp_path, module_text, call):
    """Run ``call`` (Python source using the module ``m``) in a fresh interpreter where
    ``import dualgpu`` fails; returns the JSON it prints."""
    (tmp_path / "m.py").write_text(module_text)
    fake = tmp_path / "shadow" / "dualgpu"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('dualgpu is not installed here')\n")
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import m
        try:
            import dualgpu
            sys.exit('dualgpu was importable')
        except ImportError:
            pass
        out = {call}
        def plain(o):
            if isinstance(o, dict):
                return {{k: plain(v) for k, v in o.items()}}
            if isinstance(o, (tuple, list)):
                return [plain(v) for v in o]
            return np.asarray(o).tolist()
        print(json.dumps(plain(out)))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "shadow"),
                                                        str(tmp_path)]))
    res = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _plain(o):
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, (tuple, list)):
        return [_plain(v) for v in o]
    return np.asarray(o).tolist()


def test_hvp_runs_without_dualgpu_and_matches(tmp_path, monkeypatch):
    # the exported text is the generated Python program: bit for bit what it returns (the
    # interpreter of tiny programs, on by default, sums in another order)
    monkeypatch.setitem(dg.config, "host_interpreter", False)
    text = dg.export(dg.hvp(loss), W, X, Y, V, name="loss_hvp")
    assert "import dualgpu" not in text and "from dualgpu" not in text
    np.save(tmp_path / "args.npy", np.concatenate([W, X.ravel(), Y, V]))
    got = _run_without_dualgpu(
        tmp_path, text, "m.loss_hvp(*np.split(np.load('args.npy'), [3, 18, 23]))"
        .replace("np.split(np.load('args.npy'), [3, 18, 23])",
                 "(lambda a: (a[:3], a[3:18].reshape(5, 3), a[18:23], a[23:]))"
                 "(np.load('args.npy'))"))
    np.testing.assert_array_equal(got, dg.hvp(loss)(W, X, Y, V))


def test_pytrees_keywords_special_functions(tmp_path):
    vg = dg.value_and_grad(params_loss)
    text = dg.export(vg, PARAMS, X, scale=2.0, name="vg")
    assert "scipy.special" in text  # imported only because erf/gammaln are used
    ns: dict = {}
    exec(text, ns)
    got = ns["vg"](PARAMS, X, scale=2.0)
    want = vg(PARAMS, X, scale=2.0)
    assert _plain(got) == _plain(want)
    with pytest.raises(ValueError, match="exported for 2.0"):
        ns["vg"](PARAMS, X, scale=3.0)


def test_argnums_order_and_new_values():
    g = dg.grad(lambda a, b: np.sum(np.sin(a) * b ** 3), argnums=(1, 0))
    text = dg.export(g, W, V)
    ns: dict = {}
    exec(text, ns)
    fn = ns[[k for k in ns if k.startswith("grad_")][0]]
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    for got, want in zip(fn(a, b), g(a, b)):
        np.testing.assert_array_equal(got, want)


def test_jit_of_a_plain_function_with_a_static_int():
    def f(x, k):
        return {"pow": x ** k, "sum": np.sum(x)}

    text = dg.export(f, X, 3)
    ns: dict = {}
    exec(text, ns)
    out = ns["jit_f"](X, 3)
    np.testing.assert_array_equal(out["pow"], X ** 3)
    with pytest.raises(ValueError, match="exported for 3"):
        ns["jit_f"](X, 2)


def test_source_lines_point_at_the_users_code():
    text = dg.export(dg.grad(loss), W, X, Y)
    assert "test_export.py" in text


def test_refused_clearly():
    import scipy.sparse as sp

    A = sp.random(4, 3, density=0.5, format="csr", random_state=0)
    with pytest.raises(dg.DualgpuError, match="sparse"):
        dg.export(dg.grad(lambda a, x: np.sum(a @ x)), A, np.ones(3))
    op = dg.custom_op("export_custom_square", lambda xp, x: x * x,
                      vjp=lambda g, p, ans: (2 * p[0] * g,))
    with pytest.raises(dg.DualgpuError, match="custom op"):
        dg.export(dg.grad(lambda x: np.sum(op(x))), np.ones(3))
    with pytest.raises(dg.DualgpuError, match="name"):
        dg.export(loss, W, X, Y, name="not a name")


def test_names_are_data():
    def f(x):
        return np.sum(x ** 2)

    f.__name__ = '"""\nimport os\nos.system("echo pwned")\n"""'
    text = dg.export(dg.grad(f), W)
    assert "os.system" not in text and "import os" not in text
    ns: dict = {}
    exec(text, ns)


def test_cli_export(tmp_path, capsys):
    from dualgpu.tools.cli import main

    model = tmp_path / "model.py"
    model.write_text("import numpy as np\ndef loss(x):\n    return np.sum(np.exp(x) ** 2)\n")
    out = tmp_path / "loss_hvp.py"
    assert main(["export", f"{model}:loss", "--arg", "float64[4]", "--hvp",
                 "-o", str(out), "--name", "loss_hvp"]) == 0
    ns: dict = {}
    exec(out.read_text(), ns)
    x = np.linspace(0, 1, 4)
    np.testing.assert_allclose(ns["loss_hvp"](x, x), 4 * np.exp(2 * x) * x, rtol=1e-12)


def test_ops_written_by_a_template_function_travel():
    """scatter_add's Python form is written by a function, not a string: the module still
    carries its standalone body (the gradient of a sort scatters)."""
    g = dg.grad(lambda x: np.sum(np.sort(x, axis=0) ** 3))
    x = RNG.standard_normal((4, 3))
    text = dg.export(g, x)
    assert "def scatter_add(" in text
    ns: dict = {}
    exec(text, ns)
    np.testing.assert_allclose(ns[[k for k in ns if k.startswith("grad_")][0]](x), g(x),
                               rtol=1e-14)


# --------------------------------------------------------------------------- argument checks
def _exported(fn, *args, **kwargs):
    text = dg.export(fn, *args, name="exported", **kwargs)
    ns: dict = {}
    exec(text, ns)
    return ns["exported"], text


def test_arguments_of_another_shape_are_refused():
    """The program is specialised to the example's shapes (np.mean's 1/n is a literal): an
    argument of another shape gave a silently wrong result of the old shape."""
    g = dg.grad(lambda x: np.mean(x ** 2))
    fn, _ = _exported(g, np.ones(3))
    np.testing.assert_allclose(fn(np.arange(3.0)), g(np.arange(3.0)), rtol=1e-15)
    with pytest.raises(ValueError, match=r"argument 0 \(x\) is float64\[4\]; this module was "
                                         r"exported for float64\[3\]"):
        fn(np.arange(4.0))
    hvp, _ = _exported(dg.hvp(loss), W, X, Y, V)
    with pytest.raises(ValueError, match=r"argument 1 \(X\) is float64\[6, 3\].*float64\[5, 3\]"):
        hvp(W, RNG.standard_normal((6, 3)), Y, V)
    with pytest.raises(ValueError, match=r"argument 3 is float64\[4\].*float64\[3\]"):
        hvp(W, X, Y, np.ones(4))  # the direction: no parameter of loss names it


def test_arguments_of_another_dtype_or_type_are_refused():
    """They were converted silently (float32 data computed in float64, as another program)."""
    fn, _ = _exported(dg.value_and_grad(params_loss), PARAMS, X, scale=2.0)
    want = fn(PARAMS, X, scale=2.0)
    assert _plain(want) == _plain(dg.value_and_grad(params_loss)(PARAMS, X, scale=2.0))
    p32 = dict(PARAMS, W=PARAMS["W"].astype(np.float32))
    with pytest.raises(ValueError, match=r"argument 0 \(params\)\['W'\] is float32\[3, 2\]; "
                                         r"this module was exported for float64\[3, 2\]"):
        fn(p32, X, scale=2.0)
    with pytest.raises(TypeError, match=r"argument 1 \(X\): expected a numpy.ndarray, got "
                                        r"builtins.str"):
        fn(PARAMS, "X", scale=2.0)
    with pytest.raises(TypeError, match=r"expected 4 leaves in the arguments.*got 5"):
        fn(PARAMS, X, scale=2.0, extra=1.0)
    with pytest.raises(ValueError, match=r"keyword argument 'scale' \(a static argument\) is "
                                         r"3.0; this module was exported for 2.0"):
        fn(PARAMS, X, scale=3.0)


def test_scalars_and_layouts_that_the_program_does_not_depend_on_pass():
    """A NumPy program reads any layout, and a Python number is a 0-d array of its dtype."""
    g = dg.grad(lambda x, c: np.sum(np.sin(x) * c ** 2), argnums=(0, 1))
    A = RNG.standard_normal((4, 3))
    fn, _ = _exported(g, A, 2.0)
    for view in (np.asfortranarray(A), np.repeat(A, 2, axis=1)[:, ::2]):
        assert not view.flags.c_contiguous
        for got, want in zip(fn(view, 1.5), g(A, 1.5)):
            np.testing.assert_allclose(got, want, rtol=1e-15)
    for c in (2, np.float64(2.0)):  # as dualgpu takes them: float64
        for got, want in zip(fn(A, c), g(A, 2.0)):
            np.testing.assert_allclose(got, want, rtol=1e-15)
    with pytest.raises(ValueError, match=r"argument 1 \(c\) is int64\[\].*float64\[\]"):
        fn(A, np.int64(2))
    with pytest.raises(ValueError, match=r"argument 1 \(c\) is float32\[\].*float64\[\]"):
        fn(A, np.float32(2))


def test_the_argument_check_is_one_helper_for_both_libraries():
    np_text = dg.export(dg.grad(loss), W, X, Y)
    cupy_text = dg.export(dg.grad(loss), W, X, Y, backend="cupy")

    def helper(text):
        assert text.count("def _checked(") == 1
        start = text.index("def _checked(")
        return text[start:text.index("    return a\n", start)]

    assert helper(np_text) == helper(cupy_text)


def test_argument_names_in_messages_are_data():
    key = "'''\nimport os\nos.system('x')\n'''"  # short: named by its repr
    fn, text = _exported(dg.grad(lambda p: np.sum(p[key] ** 2)), {key: W})
    assert "\nimport os" not in text
    with pytest.raises(ValueError, match="os.system"):
        fn({key: np.ones(2)})


def test_per_matrix_library_ops_export_an_empty_stack_and_refuse_a_complex_root():
    """The exported loops over a stack's matrices stacked an empty list (raw ValueError);
    sqrtm's exported form kept the real part of a complex root (silently wrong)."""
    import scipy.linalg

    def f(a, b):
        lu = scipy.linalg.lu_factor(a)
        return (scipy.linalg.lu_solve(lu, b), scipy.linalg.solve_triangular(a, b),
                scipy.linalg.eigh(a, driver="evr"), scipy.linalg.sqrtm(a),
                scipy.linalg.solve_sylvester(a, a, a))

    a, b = np.zeros((0, 2, 2)), np.zeros((0, 2, 1))
    for got, want in zip(dg.tree.leaves(_exported(f, a, b)[0](a, b)),
                         dg.tree.leaves(dg.jit(f)(a, b))):
        assert got.shape == want.shape and got.dtype == want.dtype
    with pytest.raises(ValueError, match="negative eigenvalue"):
        _exported(scipy.linalg.sqrtm, np.eye(2))[0](np.diag([-1.0, 4.0]))
