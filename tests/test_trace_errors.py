"""Issue 23, raw or unclear errors while tracing: each one either works (checked against
NumPy, closed forms or finite differences) or raises one DualgpuError that names the
user's source line (or the argument) and the fix -- never a raw ValueError, TypeError or
RecursionError from NumPy or from deep inside dualgpu.
"""
import numpy as np
import pytest

import dualgpu as dg

THIS_FILE = __file__
x3 = np.array([0.5, -1.0, 2.0])


def _line_of(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source that contains ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return f"{THIS_FILE}:{start + k}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


# ----------------------------------------------------------------- deeply nested outputs
def _nested(value, depth: int):
    for _ in range(depth):
        value = (value,)
    return value


def _innermost(tree, depth: int):
    for _ in range(depth):
        assert type(tree) is tuple and len(tree) == 1
        tree = tree[0]
    return tree


@pytest.mark.parametrize("depth", [2000])
def test_outputs_nested_thousands_deep(depth):
    f = lambda a: _nested(a * 2.0, depth)  # noqa: E731
    out = dg.jit(f)(x3)
    np.testing.assert_array_equal(_innermost(out, depth), x3 * 2.0)
    ans, ans_dot = dg.jvp(f, (x3,), (np.ones(3),))
    np.testing.assert_array_equal(_innermost(ans_dot, depth), np.full(3, 2.0))
    ans, pullback = dg.vjp(f, x3)
    (ct,) = pullback(_nested(np.array([1.0, 2.0, 3.0]), depth))
    np.testing.assert_array_equal(ct, [2.0, 4.0, 6.0])
    loss, aux = dg.grad(lambda a: (np.sum(a ** 2), _nested(a, depth)), has_aux=True)(x3)
    np.testing.assert_array_equal(loss, 2 * x3)
    np.testing.assert_array_equal(_innermost(aux, depth), x3)


def test_tree_flatten_unflatten_nested_thousands_deep():
    tree = _nested({"w": np.ones(2), "b": [1.0, None]}, 3000)
    leaves, treedef = dg.tree.flatten(tree)
    assert len(leaves) == 2 and treedef.num_leaves == 2
    assert treedef == dg.tree.structure(_nested({"w": 0, "b": [0, None]}, 3000))
    assert treedef != dg.tree.structure(_nested({"w": 0, "b": [0, 0]}, 3000))
    back = dg.tree.unflatten(treedef, leaves)
    assert _innermost(back, 3000)["b"] == [1.0, None]
    assert str(treedef).startswith("a tuple ((((")
