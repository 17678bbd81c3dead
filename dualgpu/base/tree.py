"""Pytrees: nested tuples, lists, dicts and namedtuples of arrays, with JAX's conventions.

Containers are nodes, ``None`` is an empty node, and everything else is a leaf. Dict keys
are visited in sorted order (insertion order when they cannot be sorted, and for an
``OrderedDict``), so a gradient comes back with the same keys as the parameters. A user's
class becomes a node with :func:`register_node` (``dg.tree_util.register_pytree_node``,
``register_pytree_node_class``, ``register_dataclass``). ``ravel`` flattens a tree of arrays
into one vector, for optimisers and SciPy.

Example::

    >>> import numpy as np, dualgpu as dg
    >>> leaves, treedef = dg.tree.flatten({"b": np.zeros(2), "W": (np.ones(1), None)})
    >>> [x.shape for x in leaves]
    [(1,), (2,)]
    >>> dg.tree.unflatten(treedef, [1.0, 2.0])
    {'W': (1.0, None), 'b': 2.0}
"""
from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import backend_of
from ..errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["TreeDef", "flatten", "unflatten", "leaves", "structure", "tree_map", "ravel",
           "register_node", "leaf_paths", "flatten_up_to", "node_parts"]


class _Node:
    """How a registered class is taken apart and put back together: ``flatten(x) ->
    (children, aux)``, ``unflatten(aux, children) -> x``, and ``path(aux, i)``, the words
    for child ``i`` in a leaf's path (``['W']``, ``.a``, ``[0]``)."""

    __slots__ = ("flatten", "unflatten", "path")

    def __init__(self, flatten, unflatten, path):
        self.flatten, self.unflatten, self.path = flatten, unflatten, path


_NODES: dict[type, _Node] = {}  # registered classes (exact types, as JAX), builtins first


def _index_path(aux, i: int) -> str:
    return f"[{i}]"


def register_node(cls: type, flatten: Callable, unflatten: Callable,
                  path: Callable[[Any, int], str] = _index_path) -> None:
    """Make ``cls`` a pytree node: ``flatten(x) -> (children, aux)`` (``aux`` hashable, the
    static part of the structure) and ``unflatten(aux, children) -> x``. Instances of exactly
    ``cls`` are then walked by every transform; ``path(aux, i)`` names child ``i`` in
    pictures and errors. :mod:`dualgpu.tree_util` has JAX's names for this.

    Example::

        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> dg.tree.register_node(Pair, lambda p: ((p.a, p.b), None),
        ...                       lambda aux, ch: Pair(*ch))
        >>> dg.tree.leaves(Pair(1.0, (2.0, 3.0)))
        [1.0, 2.0, 3.0]
    """
    if not isinstance(cls, type):
        raise ArgumentTypeError(f"register a pytree node: expected a class, got {cls!r}")
    if cls in _NODES or cls in _CONTAINERS or cls is type(None):
        raise InvalidArgumentError(
            f"the class {cls.__qualname__} is already a pytree node; a class is registered "
            "once (register a subclass for another layout)")
    for name, fn in (("flatten", flatten), ("unflatten", unflatten), ("path", path)):
        if not callable(fn):
            raise ArgumentTypeError(f"register a pytree node ({cls.__qualname__}): {name} must "
                                    f"be a function, got {type(fn).__name__}")
    _NODES[cls] = _Node(flatten, unflatten, path)


def _key_path(aux, i: int) -> str:
    return f"[{aux[i]!r}]"


def _defaultdict_path(aux, i: int) -> str:
    return f"[{aux[1][i]!r}]"


_NODES[collections.OrderedDict] = _Node(
    lambda d: (tuple(d.values()), tuple(d)),
    lambda keys, children: collections.OrderedDict(zip(keys, children)), _key_path)
def _flatten_defaultdict(d: collections.defaultdict) -> tuple:
    keys = _dict_keys(d)
    return tuple(d[k] for k in keys), (d.default_factory, keys)


_NODES[collections.defaultdict] = _Node(
    _flatten_defaultdict,
    lambda aux, children: collections.defaultdict(aux[0], zip(aux[1], children)),
    _defaultdict_path)


class TreeDef:
    """The structure of a pytree, without its leaves. Hashable and comparable.

    ``kind`` is ``"*"`` for a leaf, or one of ``"tuple"``, ``"list"``, ``"dict"``,
    ``"none"``, a namedtuple class and a registered class; ``meta`` holds a dict's keys, or
    a registered class's aux data.
    """

    __slots__ = ("kind", "meta", "children", "num_leaves", "_hash")

    def __init__(self, kind, meta, children: tuple):
        self.kind = kind
        self.meta = meta
        self.children = children
        self.num_leaves = 1 if kind == "*" else sum(c.num_leaves for c in children)
        self._hash = hash((kind, meta, children))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, TreeDef):
            return False
        pairs = [(self, other)]  # a loop, not recursion: trees may be thousands deep
        while pairs:
            a, b = pairs.pop()
            if a is b:
                continue
            if (a._hash != b._hash or a.kind != b.kind or a.meta != b.meta
                    or len(a.children) != len(b.children)):
                return False
            pairs.extend(zip(a.children, b.children))
        return True

    def __repr__(self) -> str:
        return f"TreeDef({_describe(self)})"

    def __str__(self) -> str:
        """Words for error messages: ``a tuple (*, *)``; ``*`` marks a leaf."""
        if self.kind == "*":
            return "a single array (a leaf)"
        kind = self.kind if isinstance(self.kind, str) else self.kind.__name__
        return f"a {kind} {_describe(self)}"

    @property
    def is_leaf(self) -> bool:
        return self.kind == "*"


LEAF = TreeDef("*", None, ())
_NONE = TreeDef("none", None, ())


def _describe(t: TreeDef) -> str:
    return postorder(t, lambda t: (t, t.children), _describe_node)


def _describe_node(t: TreeDef, inner: list) -> str:
    if t.kind == "*":
        return "*"
    if t.kind == "none":
        return "None"
    if t.kind == "tuple":
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    if t.kind == "list":
        return "[" + ", ".join(inner) + "]"
    if t.kind == "dict":
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(t.meta, inner)) + "}"
    return f"{t.kind.__name__}(" + ", ".join(inner) + ")"


def postorder(root, expand: Callable, combine: Callable):
    """Fold a tree bottom-up with an explicit stack, not recursion (outputs nested thousands
    deep are fine). ``expand(node) -> (tag, children)``; the result for a node is
    ``combine(tag, [results of its children, left to right])``."""
    results: list = []
    stack: list = [(root, None, None)]
    while stack:
        node, tag, kids = stack.pop()
        if kids is None:
            tag, kids = expand(node)
            if kids:
                stack.append((node, tag, kids))
                stack.extend((k, None, None) for k in reversed(kids))
                continue
        n = len(kids)
        inner = results[len(results) - n:]
        del results[len(results) - n:]
        results.append(combine(tag, inner))
    return results[0]


def _dict_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        return tuple(d)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """The leaves of ``tree`` (left to right) and its structure."""
    if is_leaf is None and type(tree) not in _CONTAINERS and tree is not None \
            and type(tree) not in _NODES and not _is_namedtuple(tree):
        return [tree], LEAF  # one array: the common case, without the walk
    out: list = []
    return out, _flatten(tree, out, is_leaf)


_CONTAINERS = frozenset({tuple, list, dict})


def _flatten(tree: Any, out: list, is_leaf) -> TreeDef:
    """The structure of ``tree``; its leaves are appended to ``out``."""

    def expand(x):
        if is_leaf is not None and is_leaf(x):
            return ("*", None, x), ()
        parts = node_parts(x)
        if parts is None:
            return ("*", None, x), ()
        kind, meta, children = parts
        return (kind, meta, None), children

    def combine(tag, inner):
        kind, meta, leaf = tag
        if kind == "*":
            out.append(leaf)
            return LEAF
        if kind == "none":
            return _NONE
        return TreeDef(kind, meta, tuple(inner))

    return postorder(tree, expand, combine)


def node_parts(x) -> tuple | None:
    """``(kind, meta, children)`` of a node of a pytree (as in its :class:`TreeDef`), or
    ``None`` for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t.__name__, None, tuple(x)
    if t is dict:
        keys = _dict_keys(x)
        return "dict", keys, tuple(x[k] for k in keys)
    if x is None:
        return "none", None, ()
    node = _NODES.get(t)
    if node is not None:
        children, aux = node.flatten(x)
        return t, _hashable(aux, t), tuple(children)
    if _is_namedtuple(x):
        return t, None, tuple(x)
    return None


def _hashable(aux, cls: type):
    """``aux``, checked: it becomes part of the structure, which is hashed (the cache key)."""
    try:
        hash(aux)
    except TypeError:
        raise ArgumentTypeError(
            f"the pytree node {cls.__qualname__} flattens with aux data {aux!r:.80}, which is "
            "not hashable; return a tuple (not a list or dict) of hashable static values, and "
            "put arrays among the children") from None
    return aux


def unflatten(treedef: TreeDef, leaves) -> Any:
    """The tree of structure ``treedef`` holding ``leaves``."""
    if treedef.kind == "*" and type(leaves) in (list, tuple) and len(leaves) == 1:
        return leaves[0]  # one array: the common case, without the walk
    it = iter(leaves)
    tree = _build(treedef, it)
    if next(it, _END) is not _END:
        raise InvalidArgumentError(f"unflatten: more leaves than the structure "
                                   f"{_describe(treedef)} holds ({treedef.num_leaves})")
    return tree


_END = object()


def _build(treedef: TreeDef, it):
    def combine(t: TreeDef, children: list):
        kind = t.kind
        if kind == "*":
            leaf = next(it, _END)
            if leaf is _END:
                raise InvalidArgumentError("unflatten: fewer leaves than the structure holds")
            return leaf
        if kind == "none":
            return None
        if kind == "tuple":
            return tuple(children)
        if kind == "list":
            return children
        if kind == "dict":
            return dict(zip(t.meta, children))
        node = _NODES.get(kind)
        if node is not None:
            return node.unflatten(t.meta, children)
        return kind(*children)

    return postorder(treedef, lambda t: (t, t.children), combine)


def leaf_paths(treedef: TreeDef) -> list[str]:
    """Words for the place of each leaf of ``treedef``, as JAX's ``keystr``: ``['W']`` in a
    dict, ``[0]`` in a sequence, ``.a`` in a namedtuple or dataclass; ``""`` for a tree
    that is one leaf.

    Example::

        >>> dg.tree.leaf_paths(dg.tree.structure({"W": [1.0, 2.0], "b": 3.0}))
        ["['W'][0]", "['W'][1]", "['b']"]
    """
    def child_paths(t: TreeDef, i: int) -> str:
        if t.kind == "dict":
            return f"[{t.meta[i]!r}]"
        node = _NODES.get(t.kind) if not isinstance(t.kind, str) else None
        if node is not None:
            return node.path(t.meta, i)
        if not isinstance(t.kind, str):  # a namedtuple
            return f".{t.kind._fields[i]}"
        return f"[{i}]"

    def combine(t: TreeDef, inner: list) -> list[str]:
        if t.is_leaf:
            return [""]
        return [child_paths(t, i) + p for i, paths in enumerate(inner) for p in paths]

    return postorder(treedef, lambda t: (t, t.children), combine)


def leaves(tree: Any) -> list:
    """The leaves of ``tree``, left to right."""
    return flatten(tree)[0]


def structure(tree: Any) -> TreeDef:
    """The structure of ``tree``."""
    return flatten(tree)[1]


def tree_map(fn: Callable, tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``fn`` applied leaf by leaf to ``tree`` and trees of the same structure (or with
    ``tree``'s structure as a prefix: ``fn`` then gets their subtrees), as JAX's.
    ``is_leaf(x)`` True stops the walk of ``tree`` at ``x``.

    Example::

        >>> dg.tree.tree_map(lambda a, b: a + b, {"w": 1.0}, {"w": 2.0})
        {'w': 3.0}
    """
    flat, treedef = flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r, f"tree_map: tree {i + 1}")
              for i, r in enumerate(rest)]
    return unflatten(treedef, [fn(*xs) for xs in zip(flat, *others)])


def flatten_up_to(treedef: TreeDef, tree: Any, what: str) -> list:
    """The subtrees of ``tree`` at the leaves of ``treedef``, a prefix of its structure
    (a clear ``ValueError`` naming ``what`` where it is not)."""
    out: list = []
    stack = [(treedef, tree, "")]
    while stack:
        t, x, path = stack.pop()
        if t.is_leaf:
            out.append(x)
            continue
        parts = node_parts(x)
        if parts is None or parts[0] != t.kind or parts[1] != t.meta \
                or len(parts[2]) != len(t.children):
            found = "a leaf" if parts is None else str(structure(x))
            raise InvalidArgumentError(
                f"pytree structure error: {what} has {found} at {path or 'its root'}, where "
                f"the first tree has {t}: the trees must have the same structure")
        paths = leaf_paths(TreeDef(t.kind, t.meta, (LEAF,) * len(t.children)))
        stack.extend((c, v, path + p) for c, v, p in
                     reversed(list(zip(t.children, parts[2], paths))))
    return out


def ravel(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """One flat vector of every leaf of ``tree`` (in the leaves' common dtype), and the
    function that turns such a vector back into the tree (shapes and dtypes restored).

    Example::

        >>> flat, unravel = dg.tree.ravel({"W": np.ones((2, 2)), "b": np.zeros(2)})
        >>> flat.shape
        (6,)
        >>> unravel(flat)["W"].shape
        (2, 2)
    """
    flat, treedef = flatten(tree)
    xp = backend_of(flat, "leaves of the tree").xp
    arrays = [xp.asarray(a) for a in flat]
    shapes = [tuple(a.shape) for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [int(np.prod(s)) for s in shapes]
    dtype = np.result_type(*dtypes) if dtypes else np.float64
    vector = (xp.concatenate([a.reshape(-1).astype(dtype) for a in arrays])
              if arrays else xp.zeros(0, dtype))
    total = sum(sizes)

    def unravel(v):
        if tuple(getattr(v, "shape", ())) != (total,):
            raise InvalidArgumentError(f"unravel: expected a vector of shape ({total},), got "
                                       f"{tuple(getattr(v, 'shape', ()))}")
        parts, start = [], 0
        for shape, dt, size in zip(shapes, dtypes, sizes):
            parts.append(v[start:start + size].reshape(shape).astype(dt))
            start += size
        return unflatten(treedef, parts)

    return vector, unravel


def map(fn: Callable, tree: Any, *rest: Any,  # noqa: A001  (JAX's jax.tree.map)
        is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """:func:`tree_map` by the name of JAX's ``jax.tree.map`` (defined last: no function of
    this module calls the builtin ``map``).

    Example::

        >>> dg.tree.map(lambda a: 2 * a, {"w": 1.0, "b": [2.0]})
        {'b': [4.0], 'w': 2.0}
    """
    return tree_map(fn, tree, *rest, is_leaf=is_leaf)
