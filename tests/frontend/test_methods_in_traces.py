"""Methods of the user's objects reached in a traced function are rebound as its functions
are (issue 37): ``np.array`` of traced values (which no NumPy protocol dispatches) works in a
method, a static or class method, a property, a callable object's ``__call__``, a function
held by an attribute and a class of another module; ``self`` stays the user's object, the
classes are restored after the trace, cached calls see changed attributes and nothing is
kept alive."""
from __future__ import annotations

import dataclasses
import gc
import threading
import weakref

import numpy as np
import pytest
import user_layers

import dualgpu as dg

x = np.array([0.7, -1.3])


def square_all(v):
    return np.array([v[0] ** 2, v[1] ** 2])


class Model:
    scale = 2.0

    def __init__(self, c):
        self.c = c
        self.layer = user_layers.Layer(3.0)   # a callable object of another module
        self.act = square_all                 # a function held by an attribute

    def features(self, p):
        return np.array([p[0] * self.c, p[1]])

    def loss(self, p):                        # a method calling methods
        return np.sum(self.features(p) ** 2) + self.cubes(p) + self.swapped(p)

    @staticmethod
    def cubes(p):
        return np.sum(np.asarray([p[0], p[1]]) ** 3)

    @classmethod
    def swapped(cls, p):
        return cls.scale * np.sum(np.array([p[1], p[0]]) ** 2)

    @property
    def weights(self):
        return np.array([self.c, 1.0])

    def deep(self, p):
        assert isinstance(self, Model)
        return np.sum(self.layer(p) * self.weights) + np.sum(self.act(p))


MODEL = Model(1.5)


def grad_loss(c, scale, p):
    a, b = p
    return np.array([2 * c * c * a + 3 * a * a + 2 * scale * a, 2 * b + 3 * b * b + 2 * scale * b])


def test_a_loss_method_with_np_array_of_traced_scalars_under_grad_and_hvp():
    g = dg.grad(lambda p: MODEL.loss(p))(x)
    np.testing.assert_allclose(g, grad_loss(1.5, 2.0, x), rtol=1e-13)
    np.testing.assert_allclose(dg.grad(MODEL.loss)(x), g, rtol=1e-13)
    a, b = x
    hessian = np.diag([2 * 1.5 ** 2 + 6 * a + 4.0, 2 + 6 * b + 4.0])
    v = np.array([1.0, -2.0])
    np.testing.assert_allclose(dg.hvp(lambda p: MODEL.loss(p))(x, v), hessian @ v, rtol=1e-13)
    stand_ins = [k for k, v in vars(Model).items() if "dualgpu" in type(v).__module__]
    assert not stand_ins and "__setattr__" not in vars(Model)  # the class as it was


def test_callable_objects_of_another_module_properties_and_functions_held_by_attributes():
    a, b = x
    want = np.array([3.0 * 1.5 + 2 * a, 2 * b + 2 * b])
    np.testing.assert_allclose(dg.grad(lambda p: MODEL.deep(p))(x), want, rtol=1e-13)


def test_a_function_held_by_one_object_leaves_the_others_their_classs_method():
    class Base:
        def act(self, v):
            return np.array([v[0], v[1]])

    class Net(Base):
        def run(self, p):
            return np.sum(self.act(p))

    own, plain = Net(), Net()
    own.act = square_all
    want = 2 * x + 1 + 1
    np.testing.assert_allclose(dg.grad(lambda p: own.run(p) + plain.run(p) + np.sum(
        Net.act(plain, p)))(x), want)


def test_a_dataclass_model_whose_parameters_are_attributes():
    @dataclasses.dataclass
    class Quadratic:
        a: float
        b: float

        def energy(self, p):
            return np.sum(np.array([self.a * p[0], self.b * p[1]]) ** 2)

    model = Quadratic(2.0, 3.0)
    np.testing.assert_allclose(dg.grad(lambda p: model.energy(p))(x), [8 * x[0], 18 * x[1]])
    model.b = -1.0  # the cached call sees the changed parameter: as a fresh build
    fresh = dg.grad(lambda p: Quadratic(2.0, -1.0).energy(p))(x)
    np.testing.assert_array_equal(dg.grad(lambda p: model.energy(p))(x), fresh)


def test_cached_calls_see_changed_attributes_of_self_as_a_fresh_build():
    model = Model(1.5)
    cached = [dg.grad(model.loss), dg.grad(lambda p: model.deep_free(p))]
    Model.deep_free = lambda self, p: np.sum(self.layer(p)) + self.c * np.sum(self.act(p))
    try:
        for g in cached:
            g(x)
        changes = [lambda: setattr(model, "c", 4.0), lambda: setattr(model.layer, "w", -2.0),
                   lambda: setattr(Model, "scale", 0.5),
                   lambda: setattr(user_layers, "GAIN", 3.0)]
        for change in changes:
            change()
            twin = Model(model.c)
            twin.layer.w = model.layer.w
            fresh = [dg.grad(twin.loss), dg.grad(twin.deep_free)]
            for g, built in zip(cached, fresh):
                np.testing.assert_array_equal(g(x), built(x))
        np.testing.assert_allclose(cached[0](x), grad_loss(4.0, 0.5, x), rtol=1e-13)
    finally:
        Model.scale, user_layers.GAIN = 2.0, 1.0
        del Model.deep_free


def test_a_transform_first_built_inside_another_trace_sees_changed_attributes():
    model = Model(1.5)
    inner = dg.grad(model.loss)
    np.testing.assert_allclose(dg.jit(lambda p: inner(p))(x), grad_loss(1.5, 2.0, x))
    model.c = 4.0  # read by a method its guards found while the trace's stand-ins were in
    np.testing.assert_allclose(inner(x), grad_loss(4.0, 2.0, x), rtol=1e-13)


def test_library_calls_in_a_method_trace_as_in_a_function():
    """SciPy's functions and NumPy's global random state, reached from a method (they were
    refused: SciPy saw traced values, the draws would have been constants)."""
    stats = pytest.importorskip("scipy.stats")

    class Posterior:
        def sample_loss(self, p):
            return np.sum(stats.norm.logpdf(p) * np.random.normal(size=2))

    post = Posterior()
    g = dg.grad(lambda p: post.sample_loss(p))
    np.random.seed(3)
    traced = [g(x) for _ in range(2)]
    np.random.seed(3)
    np.testing.assert_allclose(traced, [-x * np.random.normal(size=2) for _ in range(2)],
                               rtol=1e-14)


def test_writes_to_self_land_on_the_object_as_the_users_own_values():
    class Recorder:
        def fit(self, p):
            self.act = square_all        # a global: the user's function, not its copy
            self.table = np.zeros(2)     # a plain array, not the trace's view of it
            self.calls = getattr(self, "calls", 0) + 1
            self.me = self               # the object itself
            return np.sum(self.act(p))   # (the attribute's function rebound in the trace)

    r = Recorder()
    np.testing.assert_allclose(dg.grad(lambda p: r.fit(p))(x), 2 * x)
    assert r.act is square_all and type(r.table) is np.ndarray and r.calls == 1 and r.me is r


def test_another_thread_sees_the_class_as_it_is_while_a_trace_runs():
    seen = {}

    class Probe:
        def method(self, p):
            return np.array([p[0], p[1]])

        def run(self, p):
            thread = threading.Thread(target=lambda: seen.update(
                f=Probe().method.__func__, out=Probe().method([1.0, 2.0])))
            thread.start()
            thread.join()
            return np.sum(self.method(p) ** 2)

    original = vars(Probe)["method"]
    np.testing.assert_allclose(dg.grad(lambda p: Probe().run(p))(x), 2 * x)
    assert seen["f"] is original and type(seen["out"]) is np.ndarray
    assert vars(Probe)["method"] is original


def _traced_model() -> weakref.ref:
    """A weak reference to a model a traced function used (a local of this frame only)."""
    model = Model(2.0)
    dg.grad(lambda p: model.loss(p) + model.deep(p))(x)
    return weakref.ref(model)


def test_a_traced_object_is_not_kept_alive():
    refs = [_traced_model() for _ in range(3)]
    for _ in range(4):
        if not gc.collect():
            break
    assert all(r() is None for r in refs)
