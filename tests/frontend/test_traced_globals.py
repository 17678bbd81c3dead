"""Globals inside traced code behave as in the plain function: the rebound copies of a
module's functions share one copy of its globals, and what the traced code assigns is
written back to the module when the traced call returns (once per trace, as JAX's)."""
import types

import numpy as np

import dualgpu as dg

calls = 0
scale = 0


def _bump():
    global scale
    scale += 1


def _counted(x):
    global calls
    calls += 1
    return np.sum(np.sin(x))


def _scaled(x):
    _bump()  # assigns a global that this function then reads
    return np.sum(np.sin(x)) * scale


def test_a_global_assigned_during_the_trace_reaches_the_module():
    global calls
    calls = 0
    g = dg.grad(_counted)
    g(np.ones(3))
    assert calls == 1
    g(np.ones(3))  # cached: not traced again
    assert calls == 1


def test_a_global_assigned_by_one_function_is_read_by_another():
    global scale
    scale = 0
    dg.clear_cache()
    x = np.array([0.3, 1.1])
    got = dg.grad(_scaled)(x)
    assert scale == 1
    np.testing.assert_allclose(got, np.cos(x) * 1)  # it read 0 (a copy) before: zero


def test_copies_of_globals_compare_without_touching_their_arrays():
    # a coverage tool compares frames' globals with ==; copies holding constant arrays
    # must not raise numpy's "truth value of an array is ambiguous"
    seen = types.SimpleNamespace(globals=[])
    W = np.ones(3)

    def f(x):
        seen.globals.append(globals())
        return np.sum(W * x)

    dg.grad(f)(np.ones(3))
    W = np.full(3, 2.0)  # noqa: F841  (a new closure value: traced again)
    dg.grad(f)(np.ones(3))
    first, second = seen.globals
    assert not first == second


handler = chosen = None
factor = 1.0
act = None
table = None
nested = 0


def _base(x):
    return x * factor


handlers = {"base": _base}


def _installs_handler(x):
    global handler, chosen
    handler = _base  # (the traced code holds a rebound copy of _base)
    chosen = dict(handlers)  # (of a copy of the dict holding a copy)
    return np.sum(handler(x))


def test_a_function_assigned_to_a_global_is_the_users_own_afterwards():
    global factor
    factor = 1.0
    dg.grad(_installs_handler)(np.ones(2))
    assert handler is _base and chosen["base"] is _base  # were rebound copies, on a stale
    factor = 5.0  # copy of the globals
    assert handler(2.0) == 10.0  # read the copy's factor 1.0: 2.0


@dg.custom_vjp
def _uses_assigned(x):
    return np.sum(act(x) * table)


_uses_assigned.defvjp(lambda x: (_uses_assigned(x), x),
                      lambda x, ct: (ct * np.cos(x) * table,))


def _assigns_then_nests(x):
    global act, table, nested
    act, table = np.sin, np.asarray([1.0, 2.0])  # first named by a nested rebinding
    nested += 1
    inner = dg.grad(lambda y: (_bump_nested(), np.sum(y ** 2))[1])(x)  # a nested trace
    return _uses_assigned(x) + np.sum(inner)


def _bump_nested():
    global nested
    nested += 1


def test_globals_assigned_in_the_trace_survive_a_nested_rebinding():
    global act, table, nested
    act, table, nested = None, None, 0
    dg.clear_cache()
    x = np.array([0.1, 0.2])
    np.testing.assert_allclose(dg.grad(_assigns_then_nests)(x), np.cos(x) * [1, 2] + 2)
    assert act is np.sin and type(table) is np.ndarray  # were lost (act None)
    assert nested == 2  # the nested trace's assignment is the module's too


helper = types.ModuleType("traced_globals_helper")  # a module of the user's, reached by
helper.__file__ = __file__                           # attribute (rebound during the trace)
exec("import numpy as np\ncounter = 0\n\ndef density(x):\n    global counter\n"
     "    counter += 1\n    return np.sum(np.sin(x))\n", vars(helper))


def test_a_global_assigned_in_a_module_reached_by_attribute_reaches_that_module():
    helper.counter = 0
    dg.clear_cache()
    np.testing.assert_allclose(dg.grad(lambda x: helper.density(x) * 2)(np.zeros(2)), 2.0)
    assert helper.counter == 1  # its copy of the globals was never written back: 0


def _head_sum(x, n):
    global calls
    calls += 1
    return np.sum(x[:n] ** 2)  # n: a Python int the trace finds it needs static


def test_a_trace_retried_with_static_scalars_assigns_its_globals_once():
    global calls
    calls = 0
    dg.clear_cache()
    np.testing.assert_allclose(dg.grad(_head_sum)(np.ones(3), 2), [2.0, 2.0, 0.0])
    assert calls == 1  # the attempt with n traced was written back too: 2
