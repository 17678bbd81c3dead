"""``dg.eval_shape`` (JAX's): the shapes and dtypes of a function's outputs, in their
structure, from a trace alone; arguments given as arrays or as shapes and dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import dualgpu as dg
from dualgpu.errors import ArgumentTypeError


class Spec:  # what JAX's ShapeDtypeStruct looks like to us
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def test_the_outputs_structure_shapes_and_dtypes_without_computing():
    big = dg.ShapeDtypeStruct((10 ** 6, 10 ** 6), np.float32)  # 4 TB: never allocated

    def f(x, w, scale=2.0):
        return {"y": np.tanh(x @ w) * scale, "n": (np.sum(x), x.shape[0])}

    out = dg.eval_shape(f, big, np.ones(10 ** 6), scale=3.0)
    assert out == {"y": dg.ShapeDtypeStruct((10 ** 6,), np.float64),
                   "n": (dg.ShapeDtypeStruct((), np.float32),
                         dg.ShapeDtypeStruct((), np.int64))}
    assert out["y"].ndim == 1 and out["y"].size == 10 ** 6
    assert repr(out["n"][0]) == "ShapeDtypeStruct(shape=(), dtype=float32)"


def test_a_foreign_shape_dtype_object_and_a_transformed_function():
    x = Spec((4, 3), np.dtype(np.float64))
    loss = lambda x: np.sum(np.sin(x) ** 2)
    assert dg.eval_shape(dg.grad(loss), x) == dg.ShapeDtypeStruct((4, 3), np.float64)
    assert dg.eval_shape(dg.vmap(lambda r: r @ r), x) == dg.ShapeDtypeStruct((4,), "float64")


def test_a_shape_mismatch_is_the_traces_error_and_a_non_function_is_refused():
    with pytest.raises(dg.ShapeMismatchError):
        dg.eval_shape(lambda a, b: a @ b, dg.ShapeDtypeStruct((2, 3), float),
                      dg.ShapeDtypeStruct((2, 3), float))
    with pytest.raises(ArgumentTypeError, match="eval_shape expects a function"):
        dg.eval_shape(np.ones(3), np.ones(3))
