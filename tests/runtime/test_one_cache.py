"""One cache: every artifact derived from a trace is an entry of ``dualgpu.base.cache.PROGRAMS``
(programs, inlined graphs, custom ops' derived rules and registered ops, Dask plans,
autograd's wrappers), under one bound (``dg.config["cache_size"]``), emptied by
``dg.clear_cache()``; nothing else in the package caches on user objects."""
import pathlib
import re

import numpy as np

import dualgpu as dg
from dualgpu import autograd_compat
from dualgpu.api import custom_derivatives
from dualgpu.api import custom_op as custom
from dualgpu.base import cache

PACKAGE = pathlib.Path(dg.__file__).parent

# caches that are not keyed on user objects, each with its reason
ALLOWED = {
    ("backends/cupy.py", "lru_cache"): "the one CuPy backend object",
}


def test_no_other_cache_is_made_in_the_package():
    pattern = re.compile(r"LRUCache\(|WeakKeyDictionary\(|WeakValueDictionary\(|lru_cache"
                         r"|functools\.cache\b")
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for m in pattern.finditer(path.read_text()):
            what = m.group(0).rstrip("(")
            if rel == "base/cache.py":
                continue
            assert (rel, what) in ALLOWED, f"{rel} makes a cache of its own ({what})"


def test_every_kind_of_artifact_lives_in_the_one_cache_and_clears_with_it():
    dg.clear_cache()
    x = np.linspace(0.1, 1.0, 3)
    dg.grad(lambda x: np.sum(np.sin(x)))(x)  # a program
    op = dg.custom_op("one_cache_square", lambda xp, x: x * x,
                      vjp=lambda g, p, ans: (2 * p[0] * g,))
    dg.jvp(op, (x,), (np.ones(3),))  # a derived rule
    autograd_compat.elementwise_grad(np.sin)(x)  # autograd's wrapper

    @dg.custom_jvp
    def f(x):
        return np.sin(x)

    f.defjvp(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0]))
    dg.grad(lambda x: np.sum(f(x)))(x)  # a custom_jvp's registered op
    kinds = (custom.DERIVED, custom_derivatives.CUSTOM_DERIVATIVE_OP, autograd_compat.SUMMED)
    assert all(cache.PROGRAMS.count_kind(k) >= 1 for k in kinds)
    dg.clear_cache()
    assert len(cache.PROGRAMS) == 0


def test_giving_rules_again_does_not_reuse_the_old_op():
    @dg.custom_jvp
    def f(x):
        return x * 2.0

    f.defjvp(lambda p, t: (p[0] * 2.0, t[0] * 2.0))
    x = np.ones(2)
    assert np.allclose(dg.grad(lambda x: np.sum(f(x)))(x), 2.0)
    g = dg.grad(lambda x: np.sum(f(x)))
    assert np.allclose(g(x), 2.0)
    f.defjvp(lambda p, t: (p[0] * 2.0, t[0] * 5.0))  # a (wrong, on purpose) new rule
    assert np.allclose(dg.grad(lambda x: np.sum(f(x)))(x), 5.0)
    assert np.allclose(g(x), 5.0), "a cached program ran the rule given before"
