"""More ports of JAX's own transformation tests: the in-scope ones no other file ported yet.

Source: jax-ml/jax ``tests/api_test.py`` (``JitTest``, ``APITest``) and
``tests/custom_api_test.py`` (``CustomJVPTest``, ``CustomVJPTest``) at cec06d1 (2026-08-08),
translated: ``jnp`` -> ``np``, ``jax.X`` -> ``dg.X``, JAX's assertions and the exception types
JAX raises kept (JAX's ``UnexpectedTracerError`` is ``dg.EscapedTracerError``, its
``TracerBoolConversionError`` / ``ConcretizationTypeError`` are ``TypeError``\\ s). Each test
names the JAX test it mirrors. JAX is Copyright the JAX authors, licensed under the Apache
License 2.0 (http://www.apache.org/licenses/LICENSE-2.0); these are translations, not copies.

The census (TRIAGE below) lists every test method of those four classes that no file in
tests/ ported before, by the out-of-scope rules of the existing ports' headers (devices,
sharding, pmap, donation, lowering/compiled text, jaxprs, lax.scan/cond/while_loop, random
keys, the leak checker, remat, x64/dtype config, profiler, async dispatch) and these
further one-word causes: ``internals`` (a private JAX module or helper: ``api._std_basis``,
``jtu.count_*``, ``core.*``), ``logging`` (JAX's compile logs and cache-miss
explanations), ``types`` (``jax.Array`` / ``ArrayImpl`` identity, ``__jax_array__``,
buffer pointers), ``repr`` (JAX's class names), ``tokens``, ``refs`` (``jax.new_ref``),
``symbolic`` (symbolic zeros, ``custom_gradient``, ``closure_convert``,
``defvjp_with_logs``), ``skipped`` (JAX skips the test itself), ``design`` (dualgpu
traces NumPy calls, which JAX refuses).
"""
import collections
import concurrent.futures
import copy
import dataclasses
import enum
import functools
import gc
import weakref
from functools import partial

import numpy as np
import pytest

import dualgpu as dg


def close(a, b, **kw):
    la, lb = dg.tree_util.tree_leaves(a), dg.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), **kw)


INTS_STATIC = pytest.mark.xfail(
    strict=True, reason="design: Python ints are static under dg.jit (tests/api/"
    "test_conformance_scalars.py), so the function runs on the int: nothing is traced to refuse")


# ------------------------------------------------------------------------------ JitTest
@pytest.mark.xfail(strict=True, reason="design: a Python int is static under dg.jit, so a "
                   "new int value (2, then 3) is a new program and retraces")
def test_jit_global_cache():
    python_should_be_executing = True

    def f(x):
        assert python_should_be_executing
        return x

    dg.jit(f)(2)
    python_should_be_executing = False
    dg.jit(f)(3)


def test_jit_shallow_copy():
    dg.jit(lambda x: copy.copy(x))(1)


def test_jit_deep_copy():
    dg.jit(lambda x: copy.deepcopy(x))(1)


def test_static_argnum_on_static_method_is_not_supported():
    with pytest.raises(TypeError, match="Expected a callable value"):
        class A:
            @dg.jit(static_argnums=(0,))
            @classmethod
            def my_classmethod_jit(cls, x):
                return x + 2


def test_concurrent_jit():
    @dg.jit
    def f(x):
        return x + x - 3.

    xs = [rng.standard_normal(i) for i in range(10)]
    with concurrent.futures.ThreadPoolExecutor() as executor:
        futures = [executor.submit(partial(f, x)) for x in xs]
        ys = [f.result() for f in futures]
    for x, y in zip(xs, ys):
        close(x * 2 - 3., y)


def test_jit_masked_array():
    x = np.ma.array([1, 2, 3], mask=[True, False, True])
    f = dg.jit(lambda x: x)
    with pytest.raises(ValueError, match="numpy masked arrays are not supported"):
        f(x)


def test_jit_reference_dropping():
    x = np.ones(10)
    f = (lambda x: lambda: x)(x)  # reference to x in f's closure
    g = dg.jit(f)
    x = weakref.ref(x)      # no more strong ref to x in this scope
    assert x() is not None  # x is still around
    f()                     # f runs
    g()                     # g runs
    g()                     # g runs a second time
    del f                   # delete the raw callable
    assert x() is not None  # x is still around
    g()                     # g still runs
    del g                   # no more references to x
    gc.collect()
    assert x() is None      # x is gone


def test_new_static_argnum_with_default_arguments():
    f = dg.jit(lambda x=4: x, static_argnums=0)
    y = f()
    assert y == 4


@pytest.mark.parametrize("num_args", [2, 3, 4])
def test_jit_with_pruned_args(num_args):
    def f(*args):
        used = np.array(2)
        return args[1] + used
    f_pruned = dg.jit(f)
    args = range(num_args)
    np.testing.assert_allclose(f_pruned(*args), 3)


@pytest.mark.xfail(strict=True, reason="design: dualgpu orders the keys of a dict whose "
                   "keys do not sort by insertion (dualgpu/base/tree.py), where JAX refuses")
def test_jit_enum_as_dict_keys_fails():
    class E(enum.Enum):
        A = 0
        B = 1

    @dg.jit
    def f(d) -> float:
        return d[E.A]

    with pytest.raises((TypeError, ValueError),
                       match="('<' not supported|Comparator raised exception).*"):
        f({E.A: 1.0, E.B: 2.0})


# ------------------------------------------------------------------------------ APITest
@INTS_STATIC
def test_list_index_err():
    L = [1, 2, 3]

    def f(n):
        return L[n]

    assert dg.jit(f, static_argnums=(0,))(0) == L[0]
    with pytest.raises(TypeError, match=r"The __index__\(\) method was called on traced array"):
        dg.jit(f)(0)


@INTS_STATIC
def test_range_err():
    def f(x, n):
        for i in range(n):
            x = x + i
        return x

    assert dg.jit(f, static_argnums=(1,))(0, 5) == 10
    with pytest.raises(TypeError, match=r"The __index__\(\) method was called on traced array"):
        dg.jit(f)(0, 5)


@INTS_STATIC
def test_cast_int():
    f = lambda x: int(x)  # noqa: E731
    with pytest.raises(TypeError, match="object cannot be interpreted as an integer"
                                        "|Abstract tracer value encountered where concrete"):
        dg.jit(f)(0)


@INTS_STATIC
@pytest.mark.parametrize("castfun", [hex, oct])
def test_casts(castfun):
    f = lambda x: castfun(x)  # noqa: E731
    with pytest.raises(TypeError, match=r"The __index__\(\) method was called on traced array"):
        dg.jit(f)(0)


def test_vmap_inconsistent_sizes_constructs_proper_error_message():
    def f(x1, x2, g):
        return g(x1, x2)

    with pytest.raises(ValueError, match="vmap got inconsistent sizes for array axes to be mapped:"):
        dg.vmap(f, (0, 0, None))(np.ones(2), np.ones(3), np.add)


def test_vmap_inconsistent_sizes_constructs_proper_error_message_kwargs():
    def f(x1, x2, a3):
        return x1 + x2 + a3

    with pytest.raises(
            ValueError,
            match="vmap got inconsistent sizes for array axes to be mapped:\n"
                  r"  \* most axes \(2 of them\) had size 2, e.g. axis 0 of argument x1 of type "
                  r"float32\[2\];\n"
                  r"  \* one axis had size 1: axis 0 of kwargs\['a3'\] of type float32\[1\]"):
        dg.vmap(f)(np.ones(2, dtype=np.float32), a3=np.ones(1, dtype=np.float32),
                   x2=np.ones(2, dtype=np.float32))


def test_vmap_inconsistent_sizes_constructs_proper_error_message_starargs():
    def f(x, *args):
        return x - sum(args)

    with pytest.raises(ValueError, match="vmap got inconsistent sizes for array axes to be mapped:"):
        dg.vmap(f)(np.ones(4), np.ones(2), np.ones(2))


def test_large_device_constant():
    ans = dg.jit(lambda x: 2 * x)(np.ones(int(2e6)))  # doesn't crash
    close(ans, np.ones(int(2e6)) * 2.)


def test_shape_dtype_struct_invalid_shape():
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        dg.ShapeDtypeStruct(shape=4, dtype='float32')


def test_shape_dtype_struct_dtype_none():
    with pytest.raises(ValueError, match="dtype must be specified"):
        dg.ShapeDtypeStruct(shape=(), dtype=None)


def test_shape_dtype_struct_non_jax_dtypes():
    bytes_spec = dg.ShapeDtypeStruct((), np.bytes_)
    assert bytes_spec.dtype == np.dtype(np.bytes_)
    obj_spec = dg.ShapeDtypeStruct((), np.object_)
    assert obj_spec.dtype == np.dtype(np.object_)


@pytest.mark.xfail(strict=True, reason="a jit function called on a ShapeDtypeStruct inside "
                   "eval_shape's trace refuses it (dualgpu/runtime/signature.py): only "
                   "eval_shape's own arguments may be ShapeDtypeStructs")
def test_eval_shape_nested_jit_sds():
    @dg.jit
    def inner(x):
        return x + 1

    def outer():
        sds = dg.ShapeDtypeStruct((), np.float32)
        return inner(sds)

    out_shape = dg.eval_shape(outer)
    assert out_shape.shape == ()


def test_eval_shape_tuple_itemgetting():
    def fun(x, y):
        return x[0] + x[1] + y

    x = (np.ones(2), np.ones(2))
    out_shape = dg.eval_shape(fun, x, 3.)
    assert out_shape.shape == (2,)


def test_eval_shape_output_dict():
    def fun(x, y):
        return {'hi': x[0] + x[1] + y}

    x = (np.ones(2), np.ones(2))
    out_shape = dg.eval_shape(fun, x, 3.)
    out_shape = dg.tree.map(np.shape, out_shape)
    assert out_shape == {'hi': (2,)}


def test_eval_shape_error_bad_output():
    def f(x):
        return (2.0, f)

    with pytest.raises(TypeError, match=r'function f at .*returned a value.*'
                                        r'at output component \[1\], which is not a valid'):
        dg.eval_shape(f, 1)


def test_float0_error():
    float0_array = dg.grad(lambda x: x + 0., allow_int=True)(1)
    assert float0_array.dtype == dg.float0
    with pytest.raises(TypeError, match="float0s do not support any operations by design"):
        dg.jit(lambda a: a + np.zeros(()))(float0_array)


def test_basic_vjp3():
    f = dg.jit(lambda x: np.sin(np.sin(x)))
    _, f_vjp = dg.vjp(f, 1.)
    g, = f_vjp(1.0)
    close(g, np.cos(np.sin(1.)) * np.cos(1.))


def test_vmap_in_axes_tuple_with_kwonly_error():
    def g(a, *, b):
        return a @ b

    with pytest.raises(ValueError, match=re_escape(
            "but got len(in_axes)=2, len(args)=1. Note that the function was called with "
            "keyword arguments ['b']")):
        dg.vmap(g, in_axes=(None, 0))(np.ones((2, 4)), b=np.ones((10, 4, 2)))


def test_arange_jit():
    def fun(x):
        return np.arange(x.shape[0])[x]

    dg.jit(fun)(np.array([0, 1, 2], dtype=np.int32))  # doesn't crash


def test_tree_map_rest_prefix_err():
    x = {"a": 1, "b": 2, "c": [1, 2], "d": 4}
    y = {"a": 1, "b": 2, "c": None, "d": {"d1": 4.1, "d2": 4.2}}
    with pytest.raises(ValueError, match="pytree structure error"):
        dg.tree.map(lambda x, y: (x, y), x, y, is_leaf=lambda x: x is None)
    with pytest.raises(ValueError, match="pytree structure error"):
        dg.tree_util.tree_map(lambda x, y: (x, y), x, y, is_leaf=lambda x: x is None)
    # left out: tree_map_with_path (dualgpu has no key-path objects)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                   np.float64, np.complex64, np.complex128])
def test_constant_handlers(dtype):
    @dg.jit
    def f():
        return np.exp(dtype(0))
    f()  # doesn't error


def test_backward_pass_ref_dropping():
    refs = []

    @dg.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return x, None

    def f_rev(_, g):
        assert len(refs) != 2 or refs[0]() is None
        zero = np.zeros(())
        refs.append(weakref.ref(zero))
        return (zero,)
    f.defvjp(f_fwd, f_rev)

    dg.grad(lambda x: f(f(f(x))))(1.)


def test_scalar_conversion_errors():
    array_int = np.arange(10, dtype=int)
    scalar_float = np.float32(0)
    scalar_int = np.int32(0)
    empty_int = np.arange(0, dtype='int32')

    def raises(exc, func, arg, match=None):
        with pytest.raises(exc, match=match):
            func(arg)

    # left out: JAX's calls on concrete arrays outside jit (NumPy's own errors), and
    # dg.jit(func)(scalar_int): an integer scalar is static under dg.jit (a documented
    # design choice), so func runs on the value
    int_msg = "Only integer scalar arrays can be converted to a scalar index."
    for func in [hex, oct]:  # JAX: also operator.index
        raises(TypeError, dg.jit(func), array_int, int_msg)
        raises(TypeError, dg.jit(func), empty_int, int_msg)
        raises(TypeError, dg.jit(func), scalar_float, int_msg)
        _ = func(scalar_int)  # no error

    scalar_msg = "Only scalar arrays can be converted to Python scalars."
    for func in [int, float, complex]:
        raises(TypeError, dg.jit(func), array_int, scalar_msg)
        _ = func(scalar_int)  # no error

    raises(ValueError, dg.jit(bool), empty_int, "The truth value of an empty array is ambiguous.")
    raises(ValueError, dg.jit(bool), array_int,
           "The truth value of an array with more than one element is ambiguous.")
    _ = bool(scalar_int)  # no error


@INTS_STATIC
def test_no_double_dots_in_error_message():
    @dg.jit
    def f(x):
        return 1 if x > 0 else 0

    with pytest.raises(TypeError, match=r"with shape bool\[\]\.[^\.]"):
        f(0)


def test_inline_return_twice():
    @dg.jit
    def add_one(x: int) -> int:
        return x + 1

    def add_one_and_dupe(x: int) -> tuple[int, int]:
        y = add_one(x)
        return (y, y)

    jit_add_one_dupe = dg.jit(add_one_and_dupe)  # JAX: inline=True
    dg.eval_shape(jit_add_one_dupe, 0)  # don't crash


def test_returned_non_jaxtype():
    class TestEnum(enum.Enum):
        A = enum.auto()

    @dg.tree_util.register_dataclass
    @dataclasses.dataclass
    class TestClass3:
        test_enum_field: TestEnum = dataclasses.field(metadata=dict(static=True))
        test_data_field: int

    def test_jax_function(test_class: TestClass3) -> TestEnum:
        return test_class.test_enum_field

    jitted_test_function = dg.jit(test_jax_function)
    with pytest.raises(TypeError, match="returned a value of type"):
        jitted_test_function(TestClass3(test_data_field=1, test_enum_field=TestEnum.A))


rng = np.random.default_rng(0)


def re_escape(s):
    import re
    return re.escape(s)


def test_jit_boundmethod_reference_cycle():
    class A:
        def __init__(self):
            self._foo = dg.jit(self.foo)

        def foo(self):
            pass
    a = weakref.ref(A())
    gc.collect()
    assert a() is None


@pytest.mark.xfail(strict=True, reason="design: a jit function's constant output is a "
                   "concrete value inside an enclosing trace (folded), so Python branches on "
                   "it as NumPy does; JAX traces it")
def test_inlined_literals_with_error():
    @dg.jit
    def f():
        @dg.jit  # JAX: inline=True
        def g():
            return np.sin(1.)
        if g() > 0:
            return 1.
        return 0.

    with pytest.raises(TypeError, match="Attempted boolean"):
        f()
