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
from dualgpu.core.primitives import REGISTRY
from dualgpu.export import STANDALONE_OPS

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


def test_hvp_runs_without_dualgpu_and_matches(tmp_path):
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


def test_every_builtin_ops_form_has_a_standalone_version():
    """Ops the generated source calls as ``ops.<name>`` need a standalone body in the module
    (sparse products and custom ops are refused instead)."""
    missing = []
    for name, prim in REGISTRY.items():
        if getattr(prim, "custom", False) or name in ("spmm", "sddmm"):
            continue
        py = prim.py
        if (py is None or (isinstance(py, str) and py.startswith("ops."))) \
                and name not in STANDALONE_OPS:
            missing.append(name)
    assert not missing, f"ops without a standalone form in dualgpu/export.py: {missing}"


def test_cli_export(tmp_path, capsys):
    from dualgpu.cli import main

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
