"""Call sequences: a cached call returns exactly what a freshly built program returns.

The generator, the oracle and the shrinker live in tests/helpers/fuzz_calls.py. Every test here
runs sequences and, on a failure, prints the shrunk sequence as Python-ish text with the
failing call marked, and the failure class:

* ``stale``      the cached result differs (bitwise) from a fresh build's;
* ``structure``  different pytree structure / leaf type / dtype / shape;
* ``error``      a valid call raised (whatever the checks asked: a call that raised has
  nothing the other checks could look at);
* ``alias-input``/``alias-result``  a result shares memory with an input / another result;
* ``compose``    a composed transform differs from its reference (the same transform
  without ``jit``; ``hvp`` for ``grad`` of ``<grad f, w>``).

CI runs a few hundred deterministic sequences (seconds). ``pytest
tests/runtime/test_call_sequences.py --fuzz-long --calls-seeds=START:STOP`` (``make fuzz``; the
range defaults to ``DUALGPU_CALLS_SEEDS`` or ``0:10000``) runs one sequence per seed, the
family chosen by the seed, records every failure (one shrunk repro per class), and writes
``DUALGPU_CALLS_REPORT`` when set (every 500 sequences, so an interrupted run leaves its
progress: resume with the next range). Seed ranges are independent (each process has its
own cache, nothing is shared), so a campaign splits across processes::

    pytest tests/runtime/test_call_sequences.py -k fuzz_calls --fuzz-long --calls-seeds=0:5000 &
    pytest tests/runtime/test_call_sequences.py -k fuzz_calls --fuzz-long --calls-seeds=5000:10000

The long campaign uses a pool of 160 programs (CI: 40); replay one sequence with
``DUALGPU_CALLS_SEED=1234 DUALGPU_CALLS_FAMILY=mixed [DUALGPU_CALLS_POOL=160] pytest
tests/runtime/test_call_sequences.py -k one_seed``.
"""
from __future__ import annotations

import os
import time
from collections import Counter

import fuzz_calls as fc
import numpy as np
import pytest

import dualgpu as dg

ALL_CHECKS = ("stale", "error", "alias", "compose")
NO_ALIAS = ("stale", "error", "compose")
CI_POOL = 40
LONG_POOL = 160


def _fail(seq, failures, checks, hint=""):
    shrunk = fc.shrink(seq, failures, checks)
    try:
        again = [f for f in fc.check(shrunk, checks) if f.kind == failures[0].kind]
    except fc.Invalid:
        shrunk, again = None, None
    text = fc.report(seq, failures, shrunk, again)
    text += (f"\n{fc.HELPERS_TEXT}\nreproduce: DUALGPU_CALLS_SEED={seq.seed} "
             f"DUALGPU_CALLS_FAMILY={seq.family} pytest tests/runtime/test_call_sequences.py -k "
             "one_seed" + hint)
    pytest.fail(text, pytrace=False)


def run_family(family, seeds, checks, alias=True, n_programs=CI_POOL):
    for seed in seeds:
        seq = fc.generate(seed, family, alias=alias, n_programs=n_programs)
        failures = fc.check(seq, checks)
        if failures:
            _fail(seq, failures, checks, "" if alias else " (with DUALGPU_CALLS_ALIAS=0)")


# ----------------------------------------------------------------------------- the harness


def test_oracle_control():
    """Control: plain transforms on arrays, no aliased arguments, no static values. This
    works today; it shows the oracle (bitwise equality with a fresh build) does not report
    noise, through clear_cache, set_cache_size, in-place mutation, new transform objects,
    float32/float64 and shape interleavings."""
    run_family("arrays", range(1000, 1050), NO_ALIAS, alias=False)


def test_oracle_detects_a_stale_cache(monkeypatch):
    """The harness itself: a planted cache that keys by shapes only (ignoring values of
    static arguments) is reported as ``stale`` and shrunk to the two calls."""
    real_build = fc.build

    def planted(t, fns=None):
        obj = real_build(t, fns)
        if fns is None:
            return obj
        memo = {}

        def stale(*args, **kwargs):
            key = tuple(np.shape(a) for a in args if isinstance(a, np.ndarray))
            if key not in memo:
                memo[key] = obj(*args, **kwargs)
            return memo[key]

        return stale

    monkeypatch.setattr(fc, "build", planted)
    seq = fc.Seq(0, "planted", [
        ("new", "a0", (3,), "float64", 1, None),
        ("call", 0, ("grad", ("fn", ("hand", "h_static")), 0, False), 0,
         [("arr", "a0"), ("val", 1.0)], []),
        ("new", "a1", (2,), "float64", 2, None),
        ("call", 1, ("grad", ("fn", ("hand", "h_static")), 0, False), 0,
         [("arr", "a0"), ("val", 2.0)], []),
    ])
    failures = fc.check(seq, NO_ALIAS)
    assert [f.kind for f in failures] == ["stale"] and failures[0].cid == 1
    shrunk = fc.shrink(seq, failures, NO_ALIAS)
    assert len(shrunk.steps) == 3
    text = fc.report(seq, failures, shrunk, failures)
    assert "r1 = t0(a0, 2.0)    # <-- FAIL [stale]" in text


def test_sequences_are_reproducible_and_printable():
    a = fc.generate(7, "mixed")
    b = fc.generate(7, "mixed")
    assert a.steps == b.steps
    text = a.text()
    assert text.startswith("# call sequence: family 'mixed', seed 7")
    assert "dg." in text


# ----------------------------------------------------------------------------- known bugs
# Minimal sequences of the bugs review found; each is a ``Seq`` (data) checked like a
# generated one, so a failure prints the same way.

X = ("new", "x", (3,), "float64", 11, None)
V = ("new", "v", (3,), "float64", 12, None)
B = ("new", "b", (3,), "float64", 13, None)


def _h(name):
    return ("fn", ("hand", name))


def check_seq(steps, checks=NO_ALIAS):
    seq = fc.Seq(0, "known", steps)
    failures = fc.check(seq, checks)
    if failures:
        pytest.fail(fc.report(seq, failures) + "\n" + fc.HELPERS_TEXT, pytrace=False)


def test_known_hvp_same_array_as_point_and_direction():
    """After h(x, x), h(x, v) returned H·x again (arguments matched by identity)."""
    h = ("hvp", _h("h_sin"), 0)
    check_seq([X, V, ("call", 0, h, 0, [("arr", "x"), ("arr", "x")], []),
               ("call", 1, h, 0, [("arr", "x"), ("arr", "v")], [])])


def test_known_grad_same_array_twice():
    """After g(a, a), g(a, b) returned the (a, a) result."""
    g = ("grad", _h("h_two"), (0, 1), False)
    check_seq([X, B, ("call", 0, g, 0, [("arr", "x"), ("arr", "x")], []),
               ("call", 1, g, 0, [("arr", "x"), ("arr", "b")], [])])


def test_known_arrays_inside_a_list_are_not_constants():
    """g(x, [W, b]) then g(x, [W2, b2]) returned the old gradient (the list's arrays were
    baked into the program)."""
    g = ("grad", _h("h_list"), 0, False)
    steps = [("new", "x", (2, 3), "float64", 1, None),
             ("new", "W", (3, 2), "float64", 2, None), ("new", "b", (2,), "float64", 3, None),
             ("new", "W2", (3, 2), "float64", 4, None),
             ("new", "b2", (2,), "float64", 5, None)]
    check_seq(steps + [
        ("call", 0, g, 0, [("arr", "x"), ("list", [("arr", "W"), ("arr", "b")])], []),
        ("call", 1, g, 0, [("arr", "x"), ("list", [("arr", "W2"), ("arr", "b2")])], []),
        ("call", 2, g, 0, [("arr", "x"), ("tuple", [("arr", "W"), ("arr", "b2")])], [])])


def test_known_arrays_inside_a_list_mutated_in_place():
    g = ("grad", _h("h_list"), 0, False)
    steps = [("new", "x", (2, 3), "float64", 1, None),
             ("new", "W", (3, 2), "float64", 2, None), ("new", "b", (2,), "float64", 3, None)]
    args = [("arr", "x"), ("list", [("arr", "W"), ("arr", "b")])]
    check_seq(steps + [("call", 0, g, 0, args, []), ("mutate", "W", 9),
                       ("call", 1, g, 0, args, [])])


@pytest.mark.parametrize("first,second", [(0.0, -0.0), (-0.0, 0.0), (1, 1.0), (1.0, True),
                                          (0, False), ((1,), (1.0,)), ((1, 2), (1.0, 2.0)),
                                          (float("nan"), 1.0), (2.0, np.float64(2.0))],
                         ids=repr)
def test_known_static_values_that_compare_equal(first, second):
    """0.0 and -0.0 (and other equal-comparing static values) shared a cache entry."""
    g = ("value_and_grad", _h("h_static"), 0, False)
    check_seq([X, ("call", 0, g, 0, [("arr", "x"), ("val", first)], []),
               ("call", 1, g, 0, [("arr", "x"), ("val", second)], []),
               ("call", 2, g, None, [("arr", "x"), ("val", second)], [])])


@pytest.mark.parametrize("first,second", [(0.0, -0.0), (0.5, 2.5), (0.5, np.float64(0.5)),
                                          (1.0, 1), (float("nan"), 1.0)], ids=repr)
def test_known_jit_traced_floats(first, second):
    """jit traces a float argument (one program for every value, weakly typed): the cached
    program gives what a fresh build gives, for a new value, an int or a NumPy scalar, and
    the static value of a function that needs it (static_argnums) is still keyed exactly."""
    for fn in ("h_scalar", "h_static"):
        t = ("jit", _h(fn))
        check_seq([X, ("call", 0, t, 0, [("arr", "x"), ("val", first)], []),
                   ("call", 1, t, 0, [("arr", "x"), ("val", second)], []),
                   ("call", 2, t, None, [("arr", "x"), ("val", first)], [])])


def test_known_vjp_of_fresh_lambdas():
    """dg.vjp cached by id(fn): a fresh lambda got a freed lambda's pullback."""
    steps = [X]
    for k, c in enumerate([0.5, 2.0, -1.5, 3.0]):
        steps += [("vjp", 2 * k, ("fn", ("closure", "vec", c)), None, [("arr", "x")], k),
                  ("pull", 2 * k + 1, k, 1)]
    check_seq(steps)


def test_known_grad_of_fresh_lambdas():
    steps = [X]
    for k, c in enumerate([0.5, 2.0, -0.0, 0.0]):
        steps.append(("call", k, ("grad", ("fn", ("closure", "scale", c)), 0, False), None,
                      [("arr", "x")], []))
    check_seq(steps)


def test_known_composition_does_not_poison_the_cache():
    """jit(grad(f)) returned f(x) and poisoned the cache for grad(f); grad(jit(f))
    returned ()."""
    f = _h("h_sin")
    check_seq([X, ("call", 0, ("jit", ("grad", f, 0, False)), 0, [("arr", "x")], []),
               ("call", 1, ("grad", f, 0, False), 1, [("arr", "x")], []),
               ("call", 2, ("grad", ("jit", f), 0, False), 2, [("arr", "x")], []),
               ("call", 3, ("jit", f), 3, [("arr", "x")], []),
               ("call", 4, ("jit", ("value_and_grad", f, 0, False)), 4, [("arr", "x")], []),
               ("call", 5, ("value_and_grad", f, 0, False), 5, [("arr", "x")], [])])


def test_known_clear_cache_and_small_cache_mid_sequence():
    g = ("grad", _h("h_two"), 1, False)
    h = ("hvp", _h("h_two"), 0)
    check_seq([X, V, B, ("call", 0, g, 0, [("arr", "x"), ("arr", "v")], []),
               ("cache_size", 1), ("call", 1, h, 1, [("arr", "x"), ("arr", "v"), ("arr", "b")],
                                   []),
               ("call", 2, g, 0, [("arr", "b"), ("arr", "v")], []), ("clear",),
               ("call", 3, h, 1, [("arr", "v"), ("arr", "x"), ("arr", "b")], []),
               ("mutate", "x", 5), ("call", 4, g, 0, [("arr", "x"), ("arr", "v")], [])])


def test_known_keyword_arguments():
    t = ("grad", _h("h_kw"), 0, False)
    check_seq([X, ("call", 0, t, 0, [("arr", "x")], [("scale", 0.0)]),
               ("call", 1, t, 0, [("arr", "x")], [("scale", -0.0)]),
               ("call", 2, t, 0, [("arr", "x")], [("scale", 2.0), ("power", 3)]),
               ("call", 3, t, 0, [("arr", "x")], [])])


def test_known_results_do_not_alias_inputs():
    """jit of a function returning a view of its input returned that view."""
    steps = [("new", "x", (2, 3), "float64", 1, None)]
    for k, name in enumerate(["transpose", "reshape", "identity", "pair"]):
        steps.append(("call", k, ("jit", ("fn", ("closure", "view", name))), None,
                      [("arr", "x")], []))
    check_seq(steps, ALL_CHECKS)


# ----------------------------------------------------------------------------- fuzzing


def test_sequences_arrays():
    """Plain transforms on arrays, the same array object in several positions."""
    run_family("arrays", range(0, 80), NO_ALIAS)


def test_sequences_static():
    """Static positional values that compare equal but differ (0.0/-0.0, 1/1.0/True...)."""
    run_family("static", range(0, 60), NO_ALIAS, alias=False)


def test_sequences_closures():
    """Fresh closures per call (ids reused), vjp and pullbacks called later."""
    run_family("closures", range(0, 50), NO_ALIAS, alias=False)


def test_sequences_containers():
    """Lists/tuples/dicts of arrays (pytrees), has_aux, keyword arguments."""
    run_family("containers", range(0, 40), NO_ALIAS)


def test_sequences_compose():
    """Composed transforms (jit∘grad, grad∘jit, grad∘grad, jvp∘grad, hvp∘grad...)."""
    run_family("compose", range(0, 50), NO_ALIAS)


def test_sequences_vmap_of_hvp():
    """``vmap(hvp(f))`` over a stack of directions (also under ``jit`` and over a jitted
    ``f``) inside the sequences: cached calls equal fresh builds bit for bit, and each
    direction's slice equals one ``hvp`` (the compose check)."""
    seeds = [s for s in range(0, 120)
             if any(st[0] == "call" and "'vmap'" in repr(st[2])
                    for st in fc.generate(s, "compose", n_programs=CI_POOL).steps)][:15]
    assert len(seeds) == 15
    run_family("compose", seeds, ALL_CHECKS)


def test_sequences_captured_values():
    """Globals, object and class attributes, dict and list items, module attributes,
    default arguments, closure cells and dg.config switches reassigned between calls."""
    run_family("captured", range(0, 80), NO_ALIAS)


def test_oracle_detects_a_stale_captured_value(monkeypatch):
    """The harness itself: with guards that never notice a change, reassigning a captured
    global between two calls of one transform object is reported as ``stale``."""
    from dualgpu.runtime.guards import Guards

    monkeypatch.setattr(Guards, "hold", lambda self: True)
    grad = ("grad", ("fn", ("hand", "h_gcoef")), 0, False)
    seq = fc.Seq(0, "planted", [
        ("new", "a0", (3,), "float64", 1, None),
        ("call", 0, grad, 0, [("arr", "a0")], []),
        ("set", "G_COEF", 1),
        ("call", 1, grad, 0, [("arr", "a0")], []),
    ])
    failures = fc.check(seq, NO_ALIAS)
    assert [(f.kind, f.cid) for f in failures] == [("stale", 1)]
    assert "G_COEF = (3.0, 0.0)" in seq.text()


@pytest.mark.parametrize("kind", ["hessian", "jacfwd", "jacrev"])
def test_known_dense_captured_matrix_changed_in_place(kind):
    """A captured matrix in a product, changed in place: the dense derivatives had folded
    its products with their basis at the trace (a cached Hessian mixed old and new)."""
    spec = (kind, ("fn", ("hand", "h_gmat")), 0)
    check_seq([("new", "a0", (3,), "float64", 1, None),
               ("call", 0, spec, 0, [("arr", "a0")], []), ("set", "G_MAT[...]", 1),
               ("call", 1, spec, 0, [("arr", "a0")], [])], NO_ALIAS)


@pytest.mark.parametrize("target,choice,fn", [("G_MAT[...]", 2, "h_gmat"),
                                               ("G_IDX[...]", 2, "h_gidx"),
                                               ("h_gcell.k", 2, "h_gcell"),
                                               ("G_COEF", 1, "h_gcoef")])
def test_known_f_jvp_after_what_its_function_reads_changed(target, choice, fn):
    """linearize's f_jvp ran the cached jvp program, which read the arrays the function
    closed over when it ran, and traced again after a value it reads was reassigned: after
    ``G_MAT[...] = ...``, ``G_IDX[...] = ...`` or a closure cell's new value (the first
    linearize steps' captured seeds 368, 130 and 30, commit 1a740ab), f_jvp gave the
    derivative at the new values; JAX's, and a fresh linearize of then, at the old ones."""
    lin = ("fn", ("hand", fn))
    check_seq([X, ("lin", 0, lin, 0, [("arr", "x")], 0), ("set", target, choice),
               ("fjvp", 1, 0, [("arr", "x")]), ("mutate", "x", 3),
               ("fjvp", 2, 0, [("arr", "x")]), ("clear",),
               ("fjvp", 3, 0, [("arr", "x")])], ALL_CHECKS)


def test_known_pending_pullback_and_f_jvp_after_their_point_changed_in_place():
    """The fuzzer never mutated the arguments of a pending pullback; now it does (and of a
    pending f_jvp): both keep the values of their call."""
    v = ("fn", ("hand", "h_vec"))
    check_seq([X, V, ("vjp", 0, v, 0, [("arr", "x"), ("arr", "v")], 0),
               ("lin", 1, v, 1, [("arr", "x"), ("arr", "v")], 1),
               ("mutate", "x", 4), ("mutate", "v", 5), ("set", "G_MAT[...]", 1),
               ("pull", 2, 0, 3), ("fjvp", 3, 1, [("arr", "v"), ("arr", "x")]),
               ("lin", 4, v, None, [("arr", "x"), ("arr", "x")], 2),
               ("mutate", "x", 6), ("fjvp", 5, 2, [("arr", "v"), ("arr", "x")])], ALL_CHECKS)


def test_sequences_linearize():
    """Sequences with dg.linearize: its f_jvp called later, after its point, the arrays
    its function closed over and the values it reads changed (seeds with lin steps)."""
    seeds = [s for s in range(0, 200)
             if any(st[0] == "fjvp" for st in fc.generate(s, "captured", n_programs=CI_POOL).steps)]
    assert len(seeds) >= 25
    run_family("captured", seeds[:25], ALL_CHECKS)


# ----------------------------------------------------------------------------- sparse transforms
XS = ("new", "xs", (fc.S_N,), "float64", 21, None)


def _s(kind, name, *mode):
    return (kind, ("fn", ("sparse", name)), 0) + mode


def test_known_sparse_hessian_dict_item_changed_in_place():
    """The plan was keyed by the dict's identity, the program by its contents: after
    cfg["couple"] = True, the old pattern came back with the new values."""
    hess = _s("sparse_hessian", "s_cfg")
    check_seq([XS, ("cfg", "cfg0", False, 1.0, 1),
               ("call", 0, hess, 0, [("arr", "xs"), ("arr", "cfg0")], []),
               ("cfgset", "cfg0", "couple", True),
               ("call", 1, hess, 0, [("arr", "xs"), ("arr", "cfg0")], []),
               ("cfgset", "cfg0", "shift", 2),
               ("call", 2, hess, 0, [("arr", "xs"), ("arr", "cfg0")], [])], ALL_CHECKS)


@pytest.mark.parametrize("spec", [_s("sparse_jacobian", "s_matv", "rev"),
                                  _s("sparse_jacobian", "s_orderv", "fwd"),
                                  _s("sparse_hessian", "s_order"),
                                  _s("sparse_hessian", "s_mat")])
def test_known_sparse_captured_array_changed_in_place(spec):
    """A captured matrix or index array changed in place changes the pattern: the entry is
    built again (its contents are guarded), as a fresh build sees them."""
    target = "S_MATRIX[...]" if "mat" in spec[1][1][1] else "S_ORDER[...]"
    check_seq([XS, ("call", 0, spec, 0, [("arr", "xs")], []), ("set", target, 2),
               ("call", 1, spec, 0, [("arr", "xs")], []), ("set", target, 3),
               ("call", 2, spec, 0, [("arr", "xs")], [])], ALL_CHECKS)


def test_known_sparse_keywords_and_float32():
    """Keyword arguments were refused; reverse mode on a float32 argument of a float64
    function asked for a float64 cotangent nobody passed."""
    x32 = ("new", "x32", (fc.S_N,), "float32", 22, None)
    check_seq([XS, x32,
               ("call", 0, _s("sparse_hessian", "s_kw"), 0, [("arr", "xs")], [("k", 2)]),
               ("call", 1, _s("jacobian_sparsity", "s_kwv"), 1, [("arr", "xs")], [("k", 2)]),
               ("call", 2, _s("sparse_jacobian", "s_matv", "rev"), 2, [("arr", "x32")], []),
               ("call", 3, _s("sparse_jacobian", "s_matv", "fwd"), 3, [("arr", "x32")], [])],
              ALL_CHECKS)


def test_sequences_sparse():
    """Sparse transforms and patterns between in-place changes of dict arguments and of
    captured arrays, reassigned globals, new values and shapes, cleared and tiny caches:
    every result bitwise equal to a fresh build's, and to the dense derivative."""
    run_family("sparse", range(0, 24), ALL_CHECKS)


ALIAS_SEEDS = range(2000, 2040)


def test_sequences_results_never_alias():
    """No result shares memory with an input or with another result."""
    run_family("arrays", ALIAS_SEEDS, ("alias",))


def test_alias_check_fails_when_every_call_raises(monkeypatch):
    """The harness itself: a call that raised has no result to check for aliasing, so the
    alias-only run reports it as ``error`` instead of passing on calls that all raise."""

    def raising(t, fns=None):
        def planted(*args, **kwargs):
            raise RuntimeError("planted: every call raises")
        return planted

    monkeypatch.setattr(fc, "build", raising)
    seq = fc.generate(ALIAS_SEEDS[0], "arrays")
    failures = fc.check(seq, ("alias",))
    calls = {s[1] for s in seq.steps if s[0] in fc.CALLS}
    assert calls and {f.cid for f in failures} >= calls
    assert {f.kind for f in failures} == {"error"}
    with pytest.raises(pytest.fail.Exception, match=r"\[error\].*planted"):
        test_sequences_results_never_alias()


def test_fuzz_calls(fuzz_long, calls_seeds, capsys):
    """Mixed sequences: CI runs a short deterministic batch; ``--fuzz-long`` a campaign
    over every family (seed s runs family ``FAMILIES[s % 7]``), all checks, aliasing on."""
    if not fuzz_long:
        run_family("mixed", range(0, 60), ALL_CHECKS)
        return
    start, stop = calls_seeds
    report_path = os.environ.get("DUALGPU_CALLS_REPORT")
    fc.pool(LONG_POOL)
    counts: Counter = Counter()
    first: dict = {}
    t0 = time.monotonic()
    n = 0
    for seed in range(start, stop):
        seq = fc.generate(seed, fc.FAMILIES[seed % len(fc.FAMILIES)], n_programs=LONG_POOL)
        n += 1
        failures = fc.check(seq, ALL_CHECKS)
        for f in {f.kind: f for f in failures}.values():
            counts[f.kind] += 1
        for f in failures:  # one shrunk repro per likely-distinct bug (at most 60)
            key = fc.failure_key(seq, f)
            if key not in first and len(first) < 60:
                shrunk = fc.shrink(seq, [f], ALL_CHECKS)
                again = [g for g in fc.check(shrunk, ALL_CHECKS) if g.kind == f.kind]
                first[key] = fc.report(seq, [f], shrunk, again)
        if report_path and (n % 500 == 0 or seed == stop - 1):
            _write(report_path, start, seed + 1, n, counts, first, t0)
    summary = _write(report_path, start, stop, n, counts, first, t0)
    with capsys.disabled():
        print("\n" + summary.split("\n\n")[0])
    assert not counts, summary


def _write(path, start, upto, n, counts, first, t0):
    summary = (f"dualgpu call-sequence fuzz: seeds {start}:{upto} ({n} sequences), "
               f"sequences failing per class {dict(counts)}, {time.monotonic() - t0:.0f} s")
    text = (summary + f", {len(first)} distinct (class, call, transforms, error)\n\n"
            + "\n\n".join(f"== {k}\n{first[k]}" for k in sorted(first)))
    if path:
        with open(path, "w") as fh:
            fh.write(text + "\n" + fc.HELPERS_TEXT + "\n")
    return text


def test_one_seed():
    """Replays one sequence: DUALGPU_CALLS_SEED, DUALGPU_CALLS_FAMILY (default mixed),
    DUALGPU_CALLS_POOL (40; the long campaign: 160), DUALGPU_CALLS_ALIAS (1; 0 for the
    static and closures tests)."""
    seed = os.environ.get("DUALGPU_CALLS_SEED")
    if seed is None:
        seed = "3"  # an ordinary sequence when not asked for one
    family = os.environ.get("DUALGPU_CALLS_FAMILY", "mixed")
    n_programs = int(os.environ.get("DUALGPU_CALLS_POOL", CI_POOL))
    alias = os.environ.get("DUALGPU_CALLS_ALIAS", "1") != "0"
    seq = fc.generate(int(seed), family, n_programs=n_programs, alias=alias)
    failures = fc.check(seq, ALL_CHECKS)
    if failures:
        _fail(seq, failures, ALL_CHECKS)


def test_dg_is_clean_after_a_sequence():
    """check() restores the cache size it found."""
    size = dg.config["cache_size"]
    fc.check(fc.generate(5, "mixed"), ALL_CHECKS)
    assert dg.config["cache_size"] == size
