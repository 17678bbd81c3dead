"""Pytree utilities under JAX's names (``jax.tree_util``), on :mod:`dualgpu.base.tree`.

A pytree is a nest of tuples, lists, dicts (keys in sorted order), ``OrderedDict`` (keys in
insertion order), ``defaultdict``, namedtuples and ``None`` (an empty node); anything else
is a leaf, unless its class is registered here. Every transform walks arguments and results
with these rules, so a registered class can be a parameter of ``dg.grad``, ``dg.vmap``,
``dg.hessian``... and its gradient comes back as an instance of the class.

Example::

    >>> import dataclasses, numpy as np, dualgpu as dg
    >>> @dg.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Linear:
    ...     w: np.ndarray
    ...     b: np.ndarray
    >>> p = Linear(np.array([1.0, 2.0]), np.array(0.5))
    >>> dg.grad(lambda p: np.sum(p.w ** 2) + p.b)(p)
    Linear(w=array([2., 4.]), b=array(1.))
    >>> dg.tree_util.tree_map(np.shape, p)
    Linear(w=(2,), b=())
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .base import tree as pytree
from .errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map", "register_pytree_node", "register_pytree_node_class",
           "register_dataclass", "keystr_of_leaves", "Partial"]

PyTreeDef = pytree.TreeDef


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list, pytree.TreeDef]:
    """``(leaves, treedef)``: the leaves of ``tree``, left to right, and its structure.

    Example::

        >>> leaves, treedef = dg.tree_util.tree_flatten({"b": 1.0, "a": (2.0, None)})
        >>> leaves
        [2.0, 1.0]
        >>> dg.tree_util.tree_unflatten(treedef, [20.0, 10.0])
        {'a': (20.0, None), 'b': 10.0}
    """
    return pytree.flatten(tree, is_leaf)


def tree_unflatten(treedef: pytree.TreeDef, leaves: Iterable) -> Any:
    """The tree of structure ``treedef`` holding ``leaves`` (a ``ValueError`` when their
    number is not the structure's)."""
    if not isinstance(treedef, pytree.TreeDef):
        raise ArgumentTypeError(f"tree_unflatten: treedef must come from tree_flatten or "
                                f"tree_structure, got {type(treedef).__name__}")
    return pytree.unflatten(treedef, list(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree``, left to right.

    Example::

        >>> dg.tree_util.tree_leaves([1.0, {"x": 2.0, "y": None}])
        [1.0, 2.0]
    """
    return pytree.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> pytree.TreeDef:
    """The structure of ``tree`` (hashable, comparable; ``num_leaves`` counts its leaves).

    Example::

        >>> dg.tree_util.tree_structure((1.0, [2.0, 3.0])).num_leaves
        3
    """
    return pytree.flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied to each leaf of ``tree`` and the matching leaves (or subtrees) of
    ``rest``, which have ``tree``'s structure (or it as a prefix).

    Example::

        >>> dg.tree_util.tree_map(lambda p, g: p - 0.1 * g, {"w": 1.0}, {"w": 2.0})
        {'w': 0.8}
        >>> dg.tree_util.tree_map(len, [(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple))
        [2, 1]
    """
    return pytree.tree_map(f, tree, *rest, is_leaf=is_leaf)


def keystr_of_leaves(tree: Any) -> list[str]:
    """Words for each leaf's place in ``tree``, as JAX's ``keystr``: ``['W']``, ``[0]``,
    ``.b``.

    Example::

        >>> dg.tree_util.keystr_of_leaves({"W": [1.0, 2.0], "b": 3.0})
        ["['W'][0]", "['W'][1]", "['b']"]
    """
    return pytree.leaf_paths(pytree.structure(tree))


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable
                         ) -> None:
    """Make instances of ``nodetype`` pytree nodes: ``flatten_func(x) -> (children, aux)``
    (``aux`` hashable static data), ``unflatten_func(aux, children) -> x``. A class is
    registered once (a ``ValueError`` otherwise).

    Example::

        >>> class Point:
        ...     def __init__(self, x, y):
        ...         self.x, self.y = x, y
        >>> dg.tree_util.register_pytree_node(
        ...     Point, lambda p: ((p.x, p.y), None), lambda aux, xy: Point(*xy))
        >>> g = dg.grad(lambda p: p.x * p.y)(Point(np.array(2.0), np.array(3.0)))
        >>> float(g.x), float(g.y)
        (3.0, 2.0)
    """
    pytree.register_node(nodetype, flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten(self) -> (children, aux)`` and the classmethod
    ``cls.tree_unflatten(aux, children)`` make it a pytree node. Returns ``cls``.

    Example::

        >>> @dg.tree_util.register_pytree_node_class
        ... class Scaled:
        ...     def __init__(self, value, scale):
        ...         self.value, self.scale = value, scale
        ...     def tree_flatten(self):
        ...         return (self.value,), self.scale
        ...     @classmethod
        ...     def tree_unflatten(cls, scale, children):
        ...         return cls(children[0], scale)
        >>> g = dg.grad(lambda s: s.scale * np.sum(s.value ** 2))(Scaled(np.ones(2), 3))
        >>> g.value, g.scale
        (array([6., 6.]), 3)
    """
    for name in ("tree_flatten", "tree_unflatten"):
        if not callable(getattr(cls, name, None)):
            raise ArgumentTypeError(f"register_pytree_node_class: {cls.__qualname__} has no "
                                    f"method {name}; define tree_flatten(self) -> (children, "
                                    "aux) and the classmethod tree_unflatten(aux, children)")
    pytree.register_node(cls, lambda x: x.tree_flatten(),
                         cls.tree_unflatten)  # type: ignore[attr-defined]  # checked above
    return cls


def register_dataclass(nodetype: type | None = None, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()):
    """Make a dataclass a pytree node: its ``data_fields`` are children (arrays,
    differentiated), its ``meta_fields`` static data (hashable, part of the structure).
    Without both lists, as JAX: fields declared with ``field(metadata={"static": True})``
    are meta fields, the others data fields. Returns ``nodetype`` (a class decorator).

    Example::

        >>> @dg.tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Affine:
        ...     a: np.ndarray
        ...     name: str = dataclasses.field(default="f", metadata={"static": True})
        >>> dg.grad(lambda p: np.sum(p.a ** 3))(Affine(np.array([1.0, 2.0])))
        Affine(a=array([ 3., 12.]), name='f')
    """
    if nodetype is None:
        return lambda cls: register_dataclass(cls, data_fields, meta_fields, drop_fields)
    if not isinstance(nodetype, type):
        raise ArgumentTypeError(f"register_dataclass: expected a class, got {nodetype!r}")
    data: Sequence[str]  # the names of the data fields, then of the meta fields
    meta: Sequence[str]
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise ArgumentTypeError(
                f"register_dataclass: {nodetype.__qualname__} is not a dataclass; decorate it "
                "with @dataclasses.dataclass first, or give data_fields and meta_fields")
        data_list: list[str] = []
        meta_list: list[str] = []
        for f in dataclasses.fields(nodetype):
            if f.name in drop_fields:
                continue
            (meta_list if f.metadata.get("static", False) else data_list).append(f.name)
        data, meta = data_list, meta_list
    elif data_fields is None or meta_fields is None:
        raise ArgumentTypeError("register_dataclass: give both data_fields and meta_fields, "
                                "or neither (then fields marked static are meta fields)")
    else:
        data, meta = _names(data_fields, "data_fields"), _names(meta_fields, "meta_fields")
    data, meta = tuple(data), tuple(meta)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init}
        missing = sorted(init - set(data) - set(meta) - set(drop_fields))
        if missing:
            raise InvalidArgumentError(
                f"register_dataclass: the fields {missing} of {nodetype.__qualname__} are "
                "neither data nor meta fields (nor dropped); name every field the "
                "constructor takes")

    def flatten(x):
        return (tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta))

    def unflatten(aux, children):
        return nodetype(**dict(zip(data, children)), **dict(zip(meta, aux)))

    pytree.register_node(nodetype, flatten, unflatten, lambda aux, i: f".{data[i]}")
    return nodetype


def _names(fields, what: str) -> list[str]:
    if isinstance(fields, str) or not all(isinstance(n, str) for n in fields):
        raise ArgumentTypeError(f"register_dataclass: {what} must be a list of field names, "
                                f"got {fields!r}")
    return list(fields)


class Partial(functools.partial):
    r"""JAX's ``tree_util.Partial``: a ``functools.partial`` that is a pytree. Its arguments
    are its children (arrays: they become inputs of a traced program), its function is
    static (part of the structure, keyed by identity), so a ``Partial`` can be an argument
    or a result of ``dg.jit``, ``dg.grad``, ``dg.vmap``... The linear functions that
    ``dg.vjp``, ``dg.linearize`` and ``dg.linear_transpose`` return are ``Partial``\ s whose
    leaves are their residual arrays.

    Example::

        >>> add = dg.tree_util.Partial(np.add, np.array([1.0, 2.0]))
        >>> dg.tree_util.tree_leaves(add)
        [array([1., 2.])]
        >>> dg.jit(lambda f, x: f(x))(add, np.ones(2))
        array([2., 3.])
    """

    def __new__(cls, func, *args, **keywords):
        if isinstance(func, functools.partial):  # not merged: its arguments stay static
            func = _Opaque(func)
        return super().__new__(cls, func, *args, **keywords)


class _Opaque:
    """A ``functools.partial`` given to :class:`Partial`, hidden from ``functools.partial``
    (which would merge its arguments with the new ones, making them children)."""

    __slots__ = ("fn",)

    def __init__(self, fn: functools.partial):
        self.fn = fn

    def __call__(self, *args, **keywords):
        return self.fn(*args, **keywords)

    def __repr__(self) -> str:
        return repr(self.fn)


pytree.register_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))
