"""dg.tree_util: JAX's pytree API (jax.tree_util), and user classes as pytrees in every
transform. Reference values are closed forms or NumPy."""
import collections
import dataclasses

import numpy as np
import pytest

import dualgpu as dg
from dualgpu import tree_util as tu

x = np.array([0.5, -1.0, 2.0])
y = np.array([1.5, 0.25])


def loss_terms(a, b):
    """sum(a**2 * sum(b)) + sum(b**3): gradients 2a*sum(b) and sum(a**2) + 3b**2."""
    return np.sum(a ** 2) * np.sum(b) + np.sum(b ** 3)


def expected_grads(a, b):
    return 2 * a * np.sum(b), np.sum(a ** 2) + 3 * b ** 2


# ------------------------------------------------------------------------------ the API
def test_flatten_orders_dict_keys_sorted_and_ordered_dict_keys_as_inserted():
    assert tu.tree_leaves({"b": 1, "a": 2}) == [2, 1]
    assert tu.tree_leaves(collections.OrderedDict([("b", 1), ("a", 2)])) == [1, 2]
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    back = tu.tree_unflatten(treedef, [20, 10])
    assert type(back) is collections.defaultdict and back == {"a": 20, "b": 10}
    assert back.default_factory is list


def test_none_is_an_empty_node_not_a_leaf():
    leaves, treedef = tu.tree_flatten([1.0, None, (None, 2.0)])
    assert leaves == [1.0, 2.0] and treedef.num_leaves == 2
    assert tu.tree_unflatten(treedef, [3.0, 4.0]) == [3.0, None, (None, 4.0)]


def test_structures_compare_and_hash():
    a = tu.tree_structure({"w": 1.0, "b": (2.0, 3.0)})
    b = tu.tree_structure({"b": (0.0, 0.0), "w": 9.0})
    c = tu.tree_structure({"w": 1.0, "b": [2.0, 3.0]})
    assert a == b and hash(a) == hash(b) and a != c
    assert tu.tree_structure(collections.OrderedDict(a=1, b=2)) != \
        tu.tree_structure(collections.OrderedDict(b=2, a=1))   # order is structure


def test_unflatten_with_the_wrong_number_of_leaves_is_a_value_error():
    treedef = tu.tree_structure((1.0, 2.0))
    with pytest.raises(ValueError, match="more leaves"):
        tu.tree_unflatten(treedef, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="fewer leaves"):
        tu.tree_unflatten(treedef, [1.0])
    with pytest.raises(TypeError, match="tree_flatten"):
        tu.tree_unflatten("not a treedef", [1.0])


def test_tree_map_with_is_leaf_and_with_a_prefix_structure():
    tree = {"a": (1, 2), "b": (3,)}
    lengths = tu.tree_map(len, tree, is_leaf=lambda v: isinstance(v, tuple))
    assert lengths == {"a": 2, "b": 1}
    # the second tree has the first's structure as a prefix: f gets its subtrees
    out = tu.tree_map(lambda s, sub: s * sum(sub), {"a": 10, "b": 100}, {"a": (1, 2), "b": [3]})
    assert out == {"a": 30, "b": 300}


def test_tree_map_of_trees_that_differ_is_a_value_error_naming_the_place():
    with pytest.raises(ValueError, match=r"tree 1.*\['b'\]"):
        tu.tree_map(lambda a, b: a + b, {"a": 1, "b": (1, 2)}, {"a": 1, "b": (1, 2, 3)})
    with pytest.raises(dg.DualgpuError):
        tu.tree_map(lambda a, b: a + b, [1, 2], (1, 2))


def test_keystr_of_leaves_uses_jax_key_paths():
    Pt = collections.namedtuple("Pt", "u v")
    assert tu.keystr_of_leaves({"W": [1.0, Pt(2.0, 3.0)], "b": 4.0}) == [
        "['W'][0]", "['W'][1].u", "['W'][1].v", "['b']"]


# ------------------------------------------------------------------------------ registration
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))


@tu.register_pytree_node_class
class Scaled:
    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    a: np.ndarray
    b: np.ndarray
    name: str = dataclasses.field(default="net", metadata={"static": True})


@dataclasses.dataclass
class Explicit:
    a: np.ndarray
    power: int


tu.register_dataclass(Explicit, data_fields=["a"], meta_fields=["power"])


def test_grad_of_a_registered_class_returns_an_instance_of_it():
    g = dg.grad(lambda p: loss_terms(p.a, p.b))(Pair(x, y))
    ga, gb = expected_grads(x, y)
    assert type(g) is Pair
    np.testing.assert_allclose(g.a, ga)
    np.testing.assert_allclose(g.b, gb)


def test_register_pytree_node_class_keeps_aux_data_static():
    g = dg.grad(lambda s: s.scale * np.sum(s.value ** 2))(Scaled(x, 3.0))
    assert type(g) is Scaled and g.scale == 3.0
    np.testing.assert_allclose(g.value, 6.0 * x)
    # a new static value is a new program (part of the structure), not a stale result
    g = dg.grad(lambda s: s.scale * np.sum(s.value ** 2))(Scaled(x, 5.0))
    np.testing.assert_allclose(g.value, 10.0 * x)


def test_register_dataclass_with_static_fields_inferred_and_given():
    g = dg.grad(lambda p: loss_terms(p.a, p.b))(Params(x, y, name="mlp"))
    ga, gb = expected_grads(x, y)
    assert g.name == "mlp"
    np.testing.assert_allclose(g.a, ga)
    np.testing.assert_allclose(g.b, gb)
    assert tu.tree_leaves(Params(1.0, 2.0)) == [1.0, 2.0]
    g = dg.grad(lambda e: np.sum(e.a ** e.power))(Explicit(x, 3))
    assert g.power == 3
    np.testing.assert_allclose(g.a, 3 * x ** 2)


def test_ordered_dict_defaultdict_namedtuple_and_none_leaves_in_grad():
    od = collections.OrderedDict([("z", x), ("a", y)])
    g = dg.grad(lambda p: loss_terms(p["z"], p["a"]))(od)
    ga, gb = expected_grads(x, y)
    assert type(g) is collections.OrderedDict and list(g) == ["z", "a"]
    np.testing.assert_allclose(g["z"], ga)
    np.testing.assert_allclose(g["a"], gb)
    dd = collections.defaultdict(float, {"a": x, "b": y})
    g = dg.grad(lambda p: loss_terms(p["a"], p["b"]))(dd)
    assert type(g) is collections.defaultdict
    np.testing.assert_allclose(g["b"], gb)
    g = dg.grad(lambda p: loss_terms(p["a"], p["b"]))({"a": x, "b": y, "unused": None})
    assert g["unused"] is None


def test_jacobian_and_vmap_walk_registered_classes():
    J = dg.jacrev(lambda p: p.a * np.sum(p.b))(Params(x, y))
    np.testing.assert_allclose(J.a, np.diag(np.full(3, np.sum(y))))
    np.testing.assert_allclose(J.b, np.outer(x, np.ones(2)))
    batch = Params(np.stack([x, 2 * x]), y)
    out = dg.vmap(lambda p: np.sum(p.a) * p.b, in_axes=(Params(0, None),))(batch)
    np.testing.assert_allclose(out, np.stack([np.sum(x) * y, 2 * np.sum(x) * y]))
    with pytest.raises(ValueError, match="in_axes"):
        dg.vmap(lambda p: p.a, in_axes=(Pair(0, None),))(batch)


def test_leaves_keep_their_names_in_pictures():
    text = str(dg.trace(lambda p: np.sum(p["W1"] * p["b"]), {"W1": x, "b": x}))
    assert "p['W1']" in text and "p_0" not in text
    text = str(dg.trace(lambda p: np.sum(p.a) * np.sum(p.b), Params(x, y)))
    assert "p.a" in text and "p.b" in text


def test_registering_twice_or_builtins_is_a_value_error():
    with pytest.raises(ValueError, match="already a pytree node"):
        tu.register_pytree_node(Pair, lambda p: ((), None), lambda aux, ch: Pair(1, 2))
    with pytest.raises(ValueError, match="already a pytree node"):
        tu.register_pytree_node(dict, lambda p: ((), None), lambda aux, ch: {})
    with pytest.raises(TypeError, match="tree_unflatten"):
        tu.register_pytree_node_class(type("NoMethods", (), {}))


def test_unhashable_aux_data_is_a_type_error_naming_the_class():
    class Bad:
        pass

    tu.register_pytree_node(Bad, lambda b: ((), [1, 2]), lambda aux, ch: Bad())
    with pytest.raises(TypeError, match="Bad.*not hashable"):
        tu.tree_flatten(Bad())


def test_an_unregistered_class_as_a_differentiated_argument_says_how_to_register_it():
    @dataclasses.dataclass
    class Plain:
        a: np.ndarray

    with pytest.raises(TypeError, match="register_dataclass"):
        dg.grad(lambda p: np.sum(p.a))(Plain(x))


def test_register_dataclass_refuses_fields_left_out():
    @dataclasses.dataclass
    class Two:
        a: np.ndarray
        b: np.ndarray

    with pytest.raises(ValueError, match=r"\['b'\]"):
        tu.register_dataclass(Two, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(Pair)
