"""Error types a JAX or NumPy user catches: every refusal is a dg.DualgpuError and also the
built-in exception JAX raises in that case (``except TypeError`` keeps working)."""
import re
from pathlib import Path

import numpy as np
import pytest

import dualgpu as dg
from dualgpu import errors

x = np.array([0.5, -1.0, 2.0])


def test_every_error_class_is_also_a_builtin_exception():
    builtins = (TypeError, ValueError, RuntimeError, IndexError, AttributeError, ImportError)
    for name, cls in vars(errors).items():
        if isinstance(cls, type) and issubclass(cls, dg.DualgpuError) \
                and cls is not dg.DualgpuError:
            assert issubclass(cls, builtins), f"{name} derives from no built-in error"


def _grad(f, *args):
    return dg.grad(lambda *a: np.sum(f(*a)))(*args)


def test_every_error_class_is_in_the_table_of_docs_api():
    table = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    for name, cls in vars(errors).items():
        if isinstance(cls, type) and issubclass(cls, dg.DualgpuError) \
                and cls is not dg.DualgpuError:
            assert re.search(rf"^\|.*`{name}`.*\|", table, re.M), f"{name}: not in docs/api.md"


# (what, call, the built-in JAX raises, the DualgpuError subclass, words in the message)
CASES = [
    ("grad of a non-scalar output", lambda: dg.grad(np.sin)(x), TypeError,
     dg.NonScalarOutputError, "scalar"),
    ("grad of a complex output", lambda: dg.grad(lambda z: np.sum(z ** 2))(x * 1j),
     TypeError, dg.NonScalarOutputError, "holomorphic"),
    ("grad of an integer array", lambda: dg.grad(lambda v: np.sum(v * 1.0))(np.arange(3)),
     TypeError, dg.IntegerInputError, "int64"),
    ("a transform of a non-function", lambda: dg.grad(3), TypeError, dg.ArgumentTypeError,
     "expects a function"),
    ("has_aux not a bool", lambda: dg.grad(np.sum, has_aux=1), TypeError,
     dg.ArgumentTypeError, "has_aux"),
    ("argnums of the wrong type", lambda: dg.grad(np.sum, argnums="0"), TypeError,
     dg.ArgumentTypeError, "argnums"),
    ("argnums out of range", lambda: dg.grad(lambda a: np.sum(a), argnums=1)(x), TypeError,
     dg.ArgumentTypeError, "argnums"),
    ("arguments that do not fit the function", lambda: dg.grad(lambda a: np.sum(a))(x, x),
     TypeError, dg.ArgumentTypeError, "cannot take these arguments"),
    ("has_aux without a pair", lambda: dg.grad(lambda a: np.sum(a), has_aux=True)(x),
     TypeError, dg.ArgumentTypeError, "pair"),
    ("jacfwd of a complex input", lambda: dg.jacfwd(lambda z: z * 2)(x * 1j), TypeError,
     dg.ArgumentTypeError, "holomorphic=True"),
    ("holomorphic with real inputs",
     lambda: dg.grad(lambda z: np.sum(z) * 1j, holomorphic=True)(x), TypeError,
     dg.ArgumentTypeError, "holomorphic=True"),
    ("vmap in_axes of the wrong type", lambda: dg.vmap(np.sin, in_axes="0"), TypeError,
     dg.ArgumentTypeError, "in_axes"),
    ("vmap in_axes out of range", lambda: dg.vmap(np.sin, in_axes=2)(x), ValueError,
     dg.InvalidArgumentError, "out of range"),
    ("vmap in_axes not a prefix", lambda: dg.vmap(lambda p: p[0], in_axes=((0, 0, 0),))((x, x)),
     ValueError, dg.InvalidArgumentError, "does not match"),
    ("vmap in_axes of the wrong length", lambda: dg.vmap(np.add, in_axes=(0,))(x, x),
     ValueError, dg.InvalidArgumentError, "len(in_axes)=1"),
    ("vmap of mapped sizes that disagree",
     lambda: dg.vmap(np.add)(np.ones((2, 1)), np.ones((3, 1))), ValueError,
     dg.ShapeMismatchError, "inconsistent sizes"),
    ("vmap with nothing mapped", lambda: dg.vmap(np.sin, in_axes=None)(x), ValueError,
     dg.InvalidArgumentError, "no argument is mapped"),
    ("hvp naming an argument twice", lambda: dg.hvp(np.sum, argnums=(0, 0)), ValueError,
     dg.InvalidArgumentError, "twice"),
    ("tree_unflatten with extra leaves",
     lambda: dg.tree_util.tree_unflatten(dg.tree_util.tree_structure((1, 2)), [1, 2, 3]),
     ValueError, dg.InvalidArgumentError, "more leaves"),
    ("tree_map of different structures",
     lambda: dg.tree_util.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}), ValueError,
     dg.InvalidArgumentError, "same structure"),
    ("laplacian chunk_size below 1", lambda: dg.laplacian(np.sum, chunk_size=0), ValueError,
     dg.InvalidArgumentError, "chunk_size"),
    ("laplacian chunk_size not an int", lambda: dg.laplacian(np.sum, chunk_size=1.5),
     TypeError, dg.ArgumentTypeError, "chunk_size"),
    ("laplacian sigma of a wrong shape", lambda: dg.laplacian(np.sum, sigma=np.ones((2, 1)))(
        np.ones(3)), ValueError, dg.ShapeMismatchError, "sigma"),
    ("laplacian sigma of integers", lambda: dg.laplacian(np.sum, sigma=np.ones((3, 1), int)),
     TypeError, dg.ArgumentTypeError, "sigma"),
    ("biharmonic num_samples below 1", lambda: dg.biharmonic(np.sum, method="hutchinson",
                                                            num_samples=0), ValueError,
     dg.InvalidArgumentError, "num_samples"),
    ("set_cache_size below 0", lambda: dg.set_cache_size(-1), ValueError,
     dg.InvalidArgumentError, "set_cache_size"),
    ("HessianOperator of a non-function", lambda: dg.HessianOperator(3, x), TypeError,
     dg.ArgumentTypeError, "function"),
    # shape errors in traced functions: the ValueError (TypeError, IndexError) NumPy raises
    ("matmul of mismatched shapes", lambda: _grad(lambda a, b: a @ b, np.ones((2, 3)),
                                                 np.ones((4, 5))),
     ValueError, dg.ShapeMismatchError, "inner dimensions differ"),
    ("shapes that do not broadcast", lambda: _grad(np.add, np.ones(2), np.ones(3)),
     ValueError, dg.ShapeMismatchError, "broadcast"),
    ("reshape to another size", lambda: _grad(lambda a: a.reshape(4, 2), np.ones(6)),
     ValueError, dg.ShapeMismatchError, "reshape"),
    ("concatenate of mismatched shapes", lambda: _grad(
        lambda a, b: np.concatenate([a, b], axis=1), np.ones((2, 2)), np.ones((3, 2))),
     ValueError, dg.ShapeMismatchError, "concatenate"),
    ("einsum of mismatched sizes", lambda: _grad(lambda a, b: np.einsum("ij,jk->ik", a, b),
                                                 np.ones((2, 3)), np.ones((4, 5))),
     ValueError, dg.ShapeMismatchError, "einsum"),
    ("solve of mismatched shapes", lambda: _grad(np.linalg.solve, np.eye(3), np.ones(4)),
     ValueError, dg.ShapeMismatchError, "solve"),
    ("tensordot of axes of other lengths", lambda: _grad(
        lambda a, b: np.tensordot(a, b, axes=([0, 1], [0])), np.ones((2, 3)), np.ones((2, 3))),
     ValueError, dg.ShapeMismatchError, "tensordot"),
    ("reshape to a float size", lambda: _grad(lambda a: a.reshape(2.0, 3), np.ones(6)),
     TypeError, dg.ArgumentTypeError, "integers"),
    ("an index of two ellipses", lambda: _grad(lambda a: a[..., ...], np.ones(6)),
     IndexError, dg.InvalidIndexError, "ellipsis"),
    ("an index array of floats", lambda: _grad(lambda a: a[np.array([0.0])], np.ones(6)),
     IndexError, dg.InvalidIndexError, "integers"),
]


@pytest.mark.parametrize("what, call, builtin, cls, words", CASES, ids=[c[0] for c in CASES])
def test_refusals_are_the_builtin_jax_raises(what, call, builtin, cls, words):
    with pytest.raises(builtin) as info:
        call()
    assert isinstance(info.value, cls) and isinstance(info.value, dg.DualgpuError)
    assert words in str(info.value)
