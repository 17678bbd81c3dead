"""The generalized Gauss-Newton and the Fisher of a model and a loss, as linear operators.

``model(params, X) -> outputs`` and ``loss(outputs, Y) -> scalar``; ``J`` is the model's
Jacobian in its parameters (a pytree, flattened in :mod:`dualgpu.tree_util` order), ``H_l``
the loss Hessian in the outputs. ``ggn`` is ``G = Jᵀ H_l J``, its product one program (the
model's JVP, the loss's HVP in the outputs, the model's VJP; no Jacobian is formed).
``fisher`` replaces ``H_l`` by the expected (``kind="mc"``: sampled) or empirical outer
product of the gradients of the loss's negative log-likelihood. Both are
:class:`~dualgpu.HessianOperator`\\ s in all but the product (SciPy or cupyx
``LinearOperator``, the same algebra, ``.unravel``) with estimators and spectra on top.

Example::

    >>> model = lambda p, X: X @ p["W"] + p["b"]
    >>> params = {"W": np.ones((2, 1)), "b": np.zeros(1)}
    >>> X, Y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.zeros((2, 1))
    >>> G = ggn(model, "mse", params, X, Y)
    >>> G.toarray()                 # mse of a linear model: its Hessian, 2/(N C) [X 1]ᵀ[X 1]
    array([[10., 14.,  4.],
           [14., 20.,  6.],
           [ 4.,  6.,  2.]])
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import nn
from ..backends import array_backend, backend_of
from ..base import tree as pytree
from ..base.cache import PROGRAMS, identity_key
from ..core.trace import Tracer
from ..errors import (
    ArgumentTypeError,
    IntegerInputError,
    InvalidArgumentError,
    NonScalarOutputError,
    ShapeMismatchError,
)
from ..frontend import numpy as dnp
from .differentiation import hvp, jit
from .estimators import estimate_from_products, positive_int
from .linearization import jvp, vjp
from .operators import HessianOperator
from .vectorize import vmap

__all__ = ["CurvatureOperator", "FisherOperator", "GaussNewtonOperator", "LIKELIHOODS", "fisher",
           "ggn", "likelihood_factors"]

# the losses with a likelihood: name -> the dg.nn loss (also accepted as the function itself)
LIKELIHOODS = {"mse": nn.mse, "cross_entropy": nn.cross_entropy,
               "binary_cross_entropy_with_logits": nn.binary_cross_entropy_with_logits}


def loss_name(loss, what: str, need_likelihood: bool) -> str | None:
    """The name of ``loss`` in :data:`LIKELIHOODS` (given by name or as the ``dg.nn``
    function), None for another callable (refused when ``need_likelihood``)."""
    if isinstance(loss, str):
        if loss in LIKELIHOODS:
            return loss
        raise InvalidArgumentError(f"{what}: loss={loss!r} is not a loss with a likelihood; "
                                   f"give one of {sorted(LIKELIHOODS)} or a function")
    for name, fn in LIKELIHOODS.items():
        if loss is fn:
            return name
    if not callable(loss):
        raise ArgumentTypeError(f"{what}: loss must be a function loss(outputs, Y) -> scalar "
                                f"or one of {sorted(LIKELIHOODS)}, got {type(loss).__name__}")
    if need_likelihood:
        raise InvalidArgumentError(
            f"{what}: the Fisher needs the loss's likelihood, and a plain function "
            f"({getattr(loss, '__name__', type(loss).__name__)}) does not say it; give loss as "
            f"one of {sorted(LIKELIHOODS)} (or the dg.nn function of that name), or use "
            "dg.ggn for the Gauss-Newton matrix of any loss")
    return None


def loss_function(loss) -> Callable:
    return LIKELIHOODS[loss] if isinstance(loss, str) else loss


def _softmax(xp, z):
    e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def likelihood_factors(name: str, out, Y, kind: str, samples: int, rng):
    """``S`` of shape ``(K,) + out.shape`` with ``M_n = Σ_k S[k, n] S[k, n]ᵀ`` the Fisher's
    matrix in the outputs of sample ``n`` (axis 0), scaled as the loss (a mean): the
    gradients of the negative log-likelihood of the loss ``name`` in the outputs, at labels
    drawn from the model's distribution (``kind="mc"``, ``K = samples``) or at the true
    labels ``Y`` (``"empirical"``, ``K = 1``).

    ``mse`` is the Gaussian of variance 1/2 (``mean((f - y)²)`` is its negative
    log-likelihood over the number of entries), ``cross_entropy`` the categorical of
    ``softmax(f)``, ``binary_cross_entropy_with_logits`` the Bernoulli of ``sigmoid(f)``.
    For these the exact Fisher equals the Gauss-Newton matrix.
    """
    xp = backend_of([out], "outputs").xp
    if name == "cross_entropy":
        scale = 1.0 / max(out.shape[0], 1)  # (a batch of no rows)
        p = _softmax(xp, out)
        if kind == "empirical":
            labels = xp.asarray(Y)[None]
        else:  # one uniform per draw, against the cumulative probabilities
            u = xp.asarray(rng.random((samples,) + out.shape[:1] + (1,)), dtype=out.dtype)
            labels = xp.minimum(xp.sum(xp.cumsum(p, axis=-1)[None] < u, axis=-1),
                                out.shape[-1] - 1)
        onehot = (labels[..., None] == xp.arange(out.shape[-1])).astype(out.dtype)
        grads = p[None] - onehot
    elif name == "mse":
        scale = 1.0 / max(out.size, 1)
        if kind == "empirical":
            grads = 2.0 * (out - xp.asarray(Y, dtype=out.dtype))[None]
        else:  # y = f + z / sqrt(2): the gradient 2 (f - y) is sqrt(2) z
            grads = xp.asarray(np.sqrt(2.0) * rng.standard_normal((samples,) + out.shape),
                               dtype=out.dtype)
    else:
        scale = 1.0 / max(out.size, 1)
        p = 0.5 * (1.0 + xp.tanh(0.5 * out))          # sigmoid, no overflow
        if kind == "empirical":
            grads = (p - xp.asarray(Y, dtype=out.dtype))[None]
        else:
            u = xp.asarray(rng.random((samples,) + out.shape), dtype=out.dtype)
            grads = p[None] - (u < p[None]).astype(out.dtype)
    return grads * xp.asarray(np.sqrt(scale / grads.shape[0]), dtype=out.dtype)


def closed_form_roots(name: str, out, ns):
    """``S`` of shape ``(C,) + out.shape`` with ``Σ_k S[k, n] S[k, n]ᵀ`` exactly the Hessian
    of the likelihood loss ``name`` in the outputs of sample ``n`` (``C`` outputs per
    sample), from the outputs alone; ``ns`` the array namespace (the backend's ``xp`` on
    concrete outputs, :mod:`dualgpu.frontend.numpy` inside a traced program).

    ``mse`` (a mean over all ``M`` entries): ``(2/M) I``, its root ``√(2/M) e_k``;
    ``cross_entropy`` (a mean over ``N`` rows; ``p = softmax(f)``): ``(diag p - p pᵀ)/N =
    Σ_k s_k s_kᵀ`` with ``s_k = √(p_k/N) (e_k - p)`` (``Σ_k p_k = 1``);
    ``binary_cross_entropy_with_logits``: ``diag(p (1 - p)) / M`` (``p = sigmoid(f)``), its
    root ``√(p_k (1 - p_k) / M) e_k``."""
    n, shape, dtype = out.shape[0], tuple(out.shape), out.dtype
    c = int(np.prod(shape[1:], dtype=np.int64))
    eye = (ns.eye(c, dtype=dtype, like=out) if ns is dnp      # the trace's library
           else ns.eye(c, dtype=dtype))[:, None, :]                   # (C, 1, C)
    if name == "mse":
        S = ns.broadcast_to(eye * float(np.sqrt(2.0 / max(out.size, 1))), (c, n, c))
    elif name == "cross_entropy":
        z = out - ns.max(out, axis=-1, keepdims=True)
        e = ns.exp(z)
        p = e / ns.sum(e, axis=-1, keepdims=True)                         # (N, C)
        S = (eye - p[None]) * ns.transpose(ns.sqrt(p * (1.0 / max(n, 1))))[:, :, None]
    else:
        p = 0.5 * (1.0 + ns.tanh(0.5 * ns.reshape(out, (n, c))))          # sigmoid
        S = eye * ns.transpose(ns.sqrt(p * (1.0 - p) * (1.0 / max(out.size, 1))))[:, :, None]
    return ns.reshape(S, (c,) + shape)


def likelihood_of(loss) -> str | None:
    """The name of the likelihood loss ``loss`` is (the ``dg.nn`` function, or its name),
    whose Hessian roots have a closed form (:func:`closed_form_roots`), else None. Targets
    that broadcast the outputs wider change nothing: each output is counted ``r`` times in
    a mean over ``r`` times as many entries."""
    if isinstance(loss, str):
        return loss if loss in LIKELIHOODS else None
    return next((k for k, fn in LIKELIHOODS.items() if loss is fn), None)


def loss_hessian_roots(loss, out, Y, what: str):
    """``(S, signs)``: ``S`` of shape ``(C,) + out.shape`` and ``signs`` ``(C, N)`` with
    ``Σ_k signs[k, n] S[k, n] S[k, n]ᵀ`` the loss Hessian's block of sample ``n`` (axis 0
    of the outputs; ``C`` outputs per sample). The likelihood losses' by their closed forms
    (:func:`closed_form_roots`); any other loss's are its blocks' eigenvectors scaled by
    the roots of their eigenvalues' magnitudes, from ``C`` products with the unit vectors
    (one ``vmap``ped program). A loss whose Hessian couples samples is refused."""
    xp = backend_of([out], "outputs").xp
    n = out.shape[0]
    c = out.size // max(n, 1)
    name = likelihood_of(loss)
    if name is not None and out.shape[0] and (name != "cross_entropy" or out.ndim == 2):
        return closed_form_roots(name, out, xp), xp.ones((c, n), dtype=out.dtype)
    dirs = xp.broadcast_to(xp.eye(c, dtype=out.dtype)[:, None, :], (c, n, c))
    hd = vmap(hvp(loss), in_axes=(None, None, 0))(out, Y, dirs.reshape((c,) + out.shape))
    blocks = xp.transpose(xp.reshape(hd, (c, n, c)), (1, 2, 0))        # (N, C, C)
    probe = xp.asarray(np.random.default_rng(0).standard_normal((n, c)), dtype=out.dtype)
    full = xp.reshape(hvp(loss)(out, Y, probe.reshape(out.shape)), (n, c))
    per_sample = xp.einsum("nij,nj->ni", blocks, probe)
    tol = float(np.sqrt(np.finfo(out.dtype).eps))   # round-off of the dtype, not of float64
    if not bool(xp.allclose(full, per_sample, rtol=tol,
                            atol=tol * (float(xp.max(xp.abs(full))) + 1e-300))):
        raise InvalidArgumentError(
            f"{what}: the loss couples the samples (its Hessian in the outputs is not "
            "block-diagonal over axis 0 of model(params, X)); the per-sample curvature "
            "needs a loss that sums (or averages) per-sample terms")
    if c == 1:                                                             # its root
        lam, s = blocks[:, :, 0], xp.sqrt(xp.abs(blocks))
    else:
        lam, q = xp.linalg.eigh(blocks)
        s = q * xp.sqrt(xp.abs(lam))[:, None, :]                           # (N, C, K)
    return (xp.reshape(xp.transpose(s, (2, 0, 1)), (c,) + out.shape),
            xp.sign(lam).T.astype(out.dtype))


def loss_hessian_factors(loss, out, Y, what: str):
    """``S`` with ``Σ_k S[k, n] S[k, n]ᵀ`` the positive part of the loss Hessian's block of
    sample ``n`` (:func:`loss_hessian_roots`, the negative eigenvalues dropped)."""
    S, signs = loss_hessian_roots(loss, out, Y, what)
    return S * broadcast_rows(signs > 0, S)


def broadcast_rows(signs, S):
    """``signs`` ``(K, N)`` broadcast against ``S`` ``(K, N, ...)``."""
    return signs.reshape(signs.shape + (1,) * (S.ndim - 2)).astype(S.dtype)


def param_names(params) -> list[str]:
    """``params['W']``, ``params[0]``...: the words for each leaf, in ``tree_util`` order."""
    return ["params" + p for p in pytree.leaf_paths(pytree.structure(params))]


def check_params(params, what: str):
    """The leaves of a parameter pytree: concrete floating-point arrays of one library."""
    leaves = pytree.leaves(params)
    if not leaves:
        raise ArgumentTypeError(f"{what}: params has no arrays (got {type(params).__name__}); "
                                "give a pytree (dict, list, tuple) of floating-point arrays")
    for i, leaf in enumerate(leaves):   # the names only for a message (a tree walk each)
        if isinstance(leaf, Tracer):
            raise ArgumentTypeError(f"{what}: {param_names(params)[i]} is a traced value; the "
                                    "operator is built on concrete arrays (outside jit, grad "
                                    "and vmap)")
        if array_backend(leaf) is None or isinstance(leaf, (bool, np.bool_)) \
                or np.dtype(leaf.dtype).kind != "f":
            raise IntegerInputError(f"{what}: {param_names(params)[i]} is {type(leaf).__name__} "
                                    f"{getattr(leaf, 'dtype', '')}; the parameters must be "
                                    "floating-point arrays")
    return backend_of(leaves, f"{what} params")


def data_batches(X, Y, batches, what: str) -> list:
    """The dataset as a list of ``(X, Y)`` pairs: one batch, or ``batches`` (an iterable of
    pairs; a one-shot iterator is read once, here)."""
    if batches is None:
        if X is None or Y is None:
            raise ArgumentTypeError(f"{what}: give X and Y, or batches=[(X, Y), ...]")
        return [(X, Y)]
    if X is not None or Y is not None:
        raise ArgumentTypeError(f"{what}: give X and Y, or batches=, not both")
    try:
        out = list(batches)
    except TypeError:
        raise ArgumentTypeError(f"{what}: batches must be an iterable of (X, Y) pairs, got "
                                f"{type(batches).__name__}") from None
    if not out:
        raise InvalidArgumentError(f"{what}: batches is empty")
    for i, b in enumerate(out):
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise ArgumentTypeError(f"{what}: batches[{i}] must be an (X, Y) pair, got "
                                    f"{type(b).__name__}")
    return out


def check_outputs(model, loss_fn, params, batches, what: str, report=None,
                  forward=None) -> list:
    """The model's outputs on each batch (concrete; ``forward(params, X)`` instead of the
    model's own program when given: a program that makes them among other things), the
    loss checked to be a real scalar; ``report(stage, done, total)`` after each batch (see
    :func:`progress_reporter`)."""
    outs = []
    for i, (X, Y) in enumerate(batches):
        out = (forward or jit(model))(params, X)
        value = loss_fn(out, Y)
        if np.ndim(value) != 0 or np.dtype(getattr(value, "dtype", float)).kind != "f":
            raise NonScalarOutputError(
                f"{what}: loss(model(params, X), Y) must be a real scalar, got "
                f"{type(value).__name__} of shape {tuple(np.shape(value))} (batch {i})")
        outs.append(out)
        if report is not None:
            report("outputs", i + 1, len(batches))
    return outs


def progress_reporter(progress, what: str):
    """``progress=`` as a function ``(stage, done, total) -> None`` called after each batch
    of a pass over the data (``stage``: ``"outputs"``, ``"factors"``, ``"product"``,
    ``"per-sample diagonal"``), or None: ``True`` prints ``<what> <stage>: batch 3/10``
    on one line of standard error, a function is called as it is, ``None`` or ``False``
    says nothing."""
    if progress is None or progress is False:
        return None
    if progress is True:
        def report(stage: str, done: int, total: int) -> None:
            print(f"\r{what} {stage}: batch {done}/{total}", end="\n" if done == total else "",
                  file=sys.stderr, flush=True)
        return report
    if not callable(progress):
        raise ArgumentTypeError(f"{what}: progress must be True, False, None or a function "
                                f"(stage, done, total), got {type(progress).__name__}")
    return progress


def single_output(out, what: str):
    if array_backend(out) is None or np.ndim(out) < 1:
        raise ShapeMismatchError(f"{what}: model(params, X) must return one array whose axis 0 "
                                 f"runs over the samples, got {type(out).__name__} of shape "
                                 f"{tuple(np.shape(out))}")
    return out


def flat(tree):
    """The leaves of a (traced) pytree as one vector, in ``tree_util`` order."""
    return dnp.concatenate([dnp.reshape(leaf, (-1,)) for leaf in pytree.leaves(tree)])


class CurvatureOperator(HessianOperator):
    """A symmetric curvature matrix of a model's parameters (``n × n``, ``n`` their total
    size) as a SciPy (cupyx on CuPy) ``LinearOperator`` with the algebra of
    :class:`~dualgpu.HessianOperator`, its products summed over the batches of the data,
    and ``unravel``, :meth:`trace`, :meth:`diagonal`, :meth:`eigenvalues`. A subclass says
    what a product over one batch is (:meth:`batch_product`, for ``(n, k)`` columns)."""

    kind = "curvature"
    model: Callable                  # set by a subclass: the model and its outputs per batch
    outputs: list

    def __new__(cls, *args, **kwargs):
        backend = check_params(args[2] if len(args) > 2 else kwargs.get("params"), cls.kind)
        key = (cls, backend.name)
        sub = _CLASSES.get(key)
        if sub is None:
            sub = _CLASSES[key] = type(cls.__name__, (cls, backend.linear_operator_class()),
                                       {"__module__": cls.__module__, "__doc__": cls.__doc__})
        op = object.__new__(sub)
        op.backend = backend            # the parameters are checked: setup takes it
        return op

    def setup(self, params, batches, progress=None, like=None) -> None:
        """The state every product reads: the point, its flat vector, the batches (and how
        a pass over them reports its progress); ``like``: an operator at the same point
        and batches whose checked parameters and flat vector are taken over."""
        self.report = progress_reporter(progress, self.kind)
        self.batches = batches
        if like is None:
            self.backend = self.__dict__.get("backend") or check_params(params, self.kind)
            self.x, self.unravel = pytree.ravel(params)
            # the point's own copy: parameters the caller updates in place later (an
            # optimizer's step) would mix into the products of factors computed here
            self.params = self.unravel(self.x)
        else:
            self.backend, self.x, self.unravel = like.backend, like.x, like.unravel
            self.params = like.params
        self.args, self.argnums = (), 0
        self.n = int(self.x.size)
        self.nprod = 0
        self.backend.linear_operator_class().__init__(self, np.dtype(self.x.dtype),
                                                      (self.n, self.n))

    def batch_product(self, i: int, V):
        raise NotImplementedError

    def batch_weights(self, average: bool) -> list:
        """Each batch's weight in the sum: 1, or with ``average`` its share of the samples
        (axis 0 of its outputs), ``N_b / N``."""
        if not isinstance(average, (bool, np.bool_)):
            raise ArgumentTypeError(f"{self.kind}: average must be True or False, got "
                                    f"{average!r}")
        if not average:
            return [1.0] * len(self.batches)
        sizes = [single_output(out, self.kind).shape[0] for out in self.outputs]
        return [size / sum(sizes) for size in sizes]

    # the products HessianOperator's matvec and matmat call: x is the flat point; a
    # subclass's batch_product takes a vector (n,) or columns (n, k)
    def _hvp(self, x, v):
        return self._hvp_columns(x, v.reshape(-1))

    def _hvp_columns(self, x, V):
        total = None
        for i in range(len(self.batches)):
            part = self.batch_product(i, V)
            total = part if total is None else total + part
            if self.report is not None:
                self.report("product", i + 1, len(self.batches))
        return total

    def sample_factors(self, i: int):
        """``(S, signs)`` of batch ``i``: ``Σ_k signs[k, n] S[k, n] S[k, n]ᵀ`` is the
        curvature in the outputs of its sample ``n`` (``S``: ``(K,) + outputs' shape``)."""
        raise NotImplementedError

    def per_sample_diagonal(self, chunk: int | None = None):
        """The diagonal of each sample's term of the matrix, ``(N, n)``: one row per sample
        of the batches in order, summing to :meth:`diagonal` (each sample's term carries
        the loss's scale). Per sample ``n``, ``Σ_k signs_k (J_nᵀ s_nk)²`` from ``K`` VJPs of
        the model on that sample alone (``vmap`` over the samples, ``chunk`` samples a
        program call; by default as many as keep ``chunk·K·n`` under 2²⁴ entries); ``K``
        is the outputs per sample for :func:`ggn`, ``samples`` for :func:`fisher`. The
        model must treat its samples independently (row ``n`` of ``model(params, X)`` is
        ``model(params, X[n:n+1])``): checked, and refused otherwise."""
        if chunk is not None:
            positive_int(chunk, "chunk", f"{self.kind}.per_sample_diagonal")
        xp = self.backend.xp
        program = per_sample_program(self.model)
        rows = []
        for i, (X, _) in enumerate(self.batches):
            S, signs = self.sample_factors(i)
            N = S.shape[1]
            step = chunk or max(1, (1 << 24) // max(S.shape[0] * self.n, 1))
            for lo in range(0, N, step):
                d, out = program(self.params, take_rows(X, lo, lo + step), S[:, lo:lo + step],
                                 signs[:, lo:lo + step])
                check_per_sample(out, self.outputs[i][lo:lo + step], f"{self.kind}"
                                 ".per_sample_diagonal", i)
                rows.append(d)
            if self.report is not None:
                self.report("per-sample diagonal", i + 1, len(self.batches))
        return xp.concatenate(rows, axis=0)

    def products(self, V, chunk: int = 64):
        """``V @ M`` for ``(k, n)`` rows (the estimators' form), ``chunk`` columns a program."""
        xp = self.backend.xp
        V = xp.asarray(V)
        return xp.concatenate([self.matmat(V[lo:lo + chunk].T).T
                               for lo in range(0, V.shape[0], chunk)], axis=0)

    def trace(self, method: str = "hutch++", num_samples: int = 30, seed: int | None = 0):
        """The trace: ``method="exact"`` (``n`` products) or estimated from ``num_samples``
        products (``"hutchinson"``, ``"hutch++"``; :mod:`dualgpu.api.estimators`)."""
        if method == "exact":
            return self.backend.xp.sum(self.diagonal("exact"))
        self._check_estimate(method, ("hutchinson", "hutch++"), num_samples, "trace")
        return estimate_from_products(method, self.products, self.n, self.dtype,
                                      self.backend.xp, num_samples, seed)

    def diagonal(self, method: str = "exact", num_samples: int = 30, seed: int | None = 0):
        """The diagonal as a flat vector (``unravel`` gives the pytree): ``"exact"`` (``n``
        products, in chunks) or Hutchinson's estimate from ``num_samples`` products."""
        xp = self.backend.xp
        if method == "exact":
            eye = xp.eye(self.n, dtype=self.dtype)
            return xp.concatenate([xp.diagonal(self.products(eye[lo:lo + 64])[:, lo:lo + 64])
                                   for lo in range(0, self.n, 64)]) if self.n else eye[0]
        self._check_estimate(method, ("hutchinson",), num_samples, "diagonal")
        return estimate_from_products("diag", self.products, self.n, self.dtype, xp,
                                      num_samples, seed)

    def eigenvalues(self, k: int = 1, which: str = "LA", **eigsh_options):
        """The ``k`` largest (``which="LA"``) eigenvalues, ascending, by Lanczos
        (``eigsh`` of SciPy or cupyx on the operator)."""
        positive_int(k, "k", f"{self.kind}.eigenvalues")
        if k >= self.n:
            raise InvalidArgumentError(f"{self.kind}.eigenvalues: k={k} must be below n="
                                       f"{self.n}; for all of them use np.linalg.eigvalsh("
                                       "op.toarray())")
        vals = self.backend.sparse_linalg.eigsh(self, k=k, which=which,
                                                return_eigenvectors=False, **eigsh_options)
        return self.backend.xp.sort(vals)

    def _check_estimate(self, method, allowed, num_samples, name) -> None:
        if method not in allowed:
            raise InvalidArgumentError(f"{self.kind}.{name}: method must be 'exact' or one of "
                                       f"{list(allowed)}, got {method!r}")
        positive_int(num_samples, "num_samples", f"{self.kind}.{name}")

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.n}x{self.n} {self.dtype} on "
                f"{self.backend.name}, {len(self.batches)} batch(es), {self.nprod} products>")


_CLASSES: dict = {}


def unravel_like(params, d):
    """The pytree of ``params``'s structure whose leaves are the pieces of the flat (traced)
    vector ``d`` (``tree_util`` order)."""
    leaves, tree = pytree.flatten(params)
    parts, start = [], 0
    for leaf in leaves:
        size = int(np.prod(leaf.shape, dtype=np.int64))
        parts.append(dnp.reshape(d[start:start + size], tuple(leaf.shape)))
        start += size
    return pytree.unflatten(tree, parts)


PRODUCT_PROGRAMS = "curvature product programs"   # their kind in the one cache


def columns_program(kind: str, model, loss, make):
    """``make(model, loss)``'s ``(*fixed, d)`` as one program for a vector ``d`` and one for
    all the columns of a matrix ``d`` (mapped over its last axis), made once per model,
    loss and kind and kept in the one cache (a new operator at new parameters reuses them;
    the program cache retraces them on new shapes)."""
    def build():
        fn = make(model, loss)
        return Programs(jit(fn), jit(vmap(fn, in_axes=(None, None, None, -1), out_axes=-1)))

    key = (PRODUCT_PROGRAMS, kind, identity_key(model),
           loss if isinstance(loss, str) else identity_key(loss))
    return PROGRAMS.get_or_build(key, build)


class Programs:
    """A product's program for one vector and for the columns of a matrix."""

    def __init__(self, vector, columns):
        self.vector, self.columns = vector, columns

    def __call__(self, *args):
        return (self.vector if args[-1].ndim == 1 else self.columns)(*args)


class GaussNewtonOperator(CurvatureOperator):
    """The generalized Gauss-Newton matrix ``G = Jᵀ H_l J`` (see :func:`ggn`)."""

    kind = "ggn"

    def __init__(self, model, loss, params, X=None, Y=None, *, batches=None, progress=None,
                 average=False, forward=None):
        self.loss_kind = loss_name(loss, self.kind, need_likelihood=False)
        self.model, self.loss = model, loss_function(loss)
        if not callable(model):
            raise ArgumentTypeError(f"ggn: model must be a function model(params, X), got "
                                    f"{type(model).__name__}")
        self.setup(params, data_batches(X, Y, batches, self.kind), progress)
        self.outputs = check_outputs(model, self.loss, params, self.batches, self.kind,
                                     self.report, forward)
        self._program = columns_program("ggn", model, self.loss, ggn_product)
        self.weights = self.batch_weights(average)
        self._roots: dict = {}

    def sample_factors(self, i):
        if i not in self._roots:      # the loss Hessian's per-sample roots, signed
            out = single_output(self.outputs[i], "ggn.per_sample_diagonal")
            S, signs = loss_hessian_roots(self.loss, out, self.batches[i][1],
                                          "ggn.per_sample_diagonal")
            self._roots[i] = S * float(np.sqrt(self.weights[i])), signs
        return self._roots[i]

    def batch_product(self, i, V):
        X, Y = self.batches[i]
        part = self._program(self.params, X, Y, V)
        return part if self.weights[i] == 1.0 else part * self.weights[i]


class FisherOperator(CurvatureOperator):
    """The Fisher of a loss with a likelihood, Monte-Carlo or empirical (see
    :func:`fisher`)."""

    kind = "fisher"

    def __init__(self, model, loss, params, X=None, Y=None, *, kind="mc", samples=1,
                 seed=None, batches=None, progress=None, average=False):
        if kind not in ("mc", "empirical"):
            raise InvalidArgumentError(f"fisher: kind must be 'mc' or 'empirical', got {kind!r}")
        positive_int(samples, "samples", "fisher")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ArgumentTypeError(f"fisher: seed must be an int or None, got {seed!r}")
        self.fisher_kind, self.samples, self.seed = kind, int(samples), seed
        self.loss_kind = loss_name(loss, "fisher", need_likelihood=True)
        if not callable(model):
            raise ArgumentTypeError(f"fisher: model must be a function model(params, X), got "
                                    f"{type(model).__name__}")
        self.model, self.loss = model, loss_function(loss)
        self.setup(params, data_batches(X, Y, batches, "fisher"), progress)
        self.outputs = check_outputs(model, self.loss, params, self.batches, "fisher",
                                     self.report)
        rng = np.random.default_rng(seed)
        self.weights = self.batch_weights(average)
        self.factors = [likelihood_factors(self.loss_kind, single_output(out, "fisher"), Y,
                                           kind, self.samples, rng) * float(np.sqrt(w))
                        for out, (_, Y), w in zip(self.outputs, self.batches, self.weights)]
        self._program = columns_program("fisher", model, None, factor_product)

    def batch_product(self, i, V):
        return self._program(self.params, self.batches[i][0], self.factors[i], V)

    def sample_factors(self, i):
        S = self.factors[i]
        return S, self.backend.xp.ones(S.shape[:2], dtype=S.dtype)


def ggn_product(model, loss):
    """``(params, X, Y, d) -> Jᵀ H_l J d``: the model's JVP, the loss's HVP in the outputs,
    the model's VJP."""
    def product(params, X, Y, d):
        out, jd = jvp(lambda q: model(q, X), (params,), (unravel_like(params, d),))
        hjd = hvp(loss)(out, Y, jd)
        return flat(vjp(lambda q: model(q, X), params)[1](hjd)[0])

    product.__name__ = f"ggn_{getattr(model, '__name__', 'model')}"
    return product


def factor_product(model, loss=None):
    """``(params, X, S, d) -> Jᵀ M J d`` with ``M_n = Σ_k S[k, n] S[k, n]ᵀ`` per sample."""
    def product(params, X, S, d):
        out, jd = jvp(lambda q: model(q, X), (params,), (unravel_like(params, d),))
        axes = tuple(range(2, S.ndim))
        w = dnp.sum(S * jd, axis=axes) if axes else S * jd          # (K, N)
        u = dnp.sum(S * dnp.reshape(w, w.shape + (1,) * len(axes)), axis=0)
        return flat(vjp(lambda q: model(q, X), params)[1](u)[0])

    product.__name__ = f"fisher_{getattr(model, '__name__', 'model')}"
    return product


def per_sample_program(model):
    """``(params, X, S, signs) -> (d, out)``: per sample ``n`` (axis 0 of ``X``, ``S``'s
    axis 1) ``d[n] = Σ_k signs[k, n] (J_nᵀ S[k, n])²`` and ``out[n]``, the model on that
    sample alone; one program (``vmap`` over the samples of the model's VJP on one, ``vmap``
    over ``k``), made once per model and kept in the one cache."""
    def one(params, x, s, w):
        x1 = pytree.tree_map(lambda leaf: leaf[None], x)
        out, pull = vjp(lambda q: model(q, x1)[0], params)
        g = vmap(lambda sk: flat(pull(sk)[0]))(s)                       # (K, n)
        return dnp.sum(dnp.reshape(w, (-1, 1)) * g * g, axis=0), out

    def build():
        return jit(vmap(one, in_axes=(None, 0, 1, 1)))

    return PROGRAMS.get_or_build((PRODUCT_PROGRAMS, "per-sample diagonal",
                                  identity_key(model)), build)


def take_rows(X, lo: int, hi: int):
    """Rows ``lo:hi`` (axis 0) of each array of the data ``X`` (an array or a pytree)."""
    return pytree.tree_map(lambda leaf: leaf[lo:hi], X)


def check_per_sample(out, want, what: str, batch: int) -> None:
    """The model on its samples one by one gave its outputs on the batch, or a refusal."""
    xp = backend_of([want], "outputs").xp
    tol = float(np.sqrt(np.finfo(want.dtype).eps))
    if out.shape != want.shape or not bool(xp.allclose(
            out, want, rtol=tol, atol=tol * (float(xp.max(xp.abs(want))) + 1e-300))):
        raise InvalidArgumentError(
            f"{what}: the model does not treat its samples independently (row n of "
            f"model(params, X) differs from model(params, X[n:n+1]), batch {batch}); the "
            "per-sample curvature is not defined for it")


def ggn(model: Callable, loss: Any, params: Any, X: Any = None, Y: Any = None, *,
        batches=None, progress=None, average: bool = False) -> GaussNewtonOperator:
    """The generalized Gauss-Newton matrix ``G = Jᵀ H_l J`` of ``loss(model(params, X), Y)``
    in ``params`` (a pytree of floating-point arrays, flattened in ``tree_util`` order;
    ``G.unravel(v)`` gives the pytree of a vector), as a SciPy (cupyx on CuPy)
    ``LinearOperator``. Each product ``G @ v`` (``G @ V``: one program for all the columns)
    is one program: the JVP of the model, the HVP of the loss in the outputs, the VJP of
    the model. ``loss`` is a function ``loss(outputs, Y) -> scalar`` or the name of a
    ``dg.nn`` loss (``"mse"``, ``"cross_entropy"``). With ``batches=[(X, Y), ...]`` the
    operator is the exact sum of the batches' matrices (``average=True``: weighted by
    their shares of the samples, the matrix of the dataset's mean loss when the loss is a
    mean over its batch); ``progress=True`` (or a function ``(stage, done, total)``)
    reports each batch of a pass (:func:`progress_reporter`).

    Example::

        >>> model = lambda p, X: np.tanh(X @ p["W"])
        >>> p = {"W": np.array([[0.5], [-0.5]])}
        >>> G = dg.ggn(model, dg.nn.mse, p, np.eye(2), np.zeros((2, 1)))
        >>> np.round(G @ np.ones(2), 6)
        array([0.6185, 0.6185])
        >>> np.allclose(G.toarray(), G.toarray().T), G.unravel(np.ones(2))["W"].shape
        (True, (2, 1))
    """
    return GaussNewtonOperator(model, loss, params, X, Y, batches=batches, progress=progress,
                               average=average)


def fisher(model: Callable, loss: Any, params: Any, X: Any = None, Y: Any = None, *,
           kind: str = "mc", samples: int = 1, seed: int | None = None,
           batches=None, progress=None, average: bool = False) -> FisherOperator:
    """The Fisher matrix of ``loss(model(params, X), Y)`` in ``params``, for a loss with a
    likelihood (``loss``: ``"mse"``, ``"cross_entropy"``,
    ``"binary_cross_entropy_with_logits"`` or the ``dg.nn`` function): ``Jᵀ M J`` with
    ``M`` the mean over ``samples`` labels drawn from the model's distribution
    (``kind="mc"``, ``numpy.random.default_rng(seed)``; drawn once, so the operator is one
    fixed matrix) or at the true labels (``kind="empirical"``) of the outer products of the
    gradients of the negative log-likelihood in the outputs, scaled as the loss (a mean).
    Its expectation is the Gauss-Newton matrix (:func:`ggn`). The same operator as
    :func:`ggn` otherwise.

    Example::

        >>> model = lambda p, X: X @ p["W"]
        >>> p = {"W": np.zeros((2, 3))}
        >>> X, Y = np.eye(2), np.array([0, 2])
        >>> F = dg.fisher(model, "cross_entropy", p, X, Y, kind="empirical")
        >>> F.toarray().shape, round(float(F.trace("exact")), 6)
        ((6, 6), 0.666667)
    """
    return FisherOperator(model, loss, params, X, Y, kind=kind, samples=samples, seed=seed,
                          batches=batches, progress=progress, average=average)
