"""K-FAC and EK-FAC: Kronecker-factored Gauss-Newton and Fisher matrices, the layers found in
the traced model.

A parameter ``W`` (2-D) that enters the model's graph as one operand of one product
(``Flag.MULTILINEAR`` and not elementwise: ``matmul``, ``einsum``; directly or through a
transpose) whose other operand is a batch of activations ``a`` computed from the data, is
a *layer*: the product's output ``s`` is ``a W`` over the rows of ``a`` (its axes other
than the contracted one). Its block of the curvature ``Σ_n Σ_k (a_n ⊗ g_nk)(a_n ⊗ g_nk)ᵀ``
(``g_nk`` the ``k``-th factor of the loss's curvature in the outputs of sample ``n``,
carried back to ``s``) is approximated by ``A ⊗ G``, ``A = mean_rows a aᵀ``,
``G = Σ_rows Σ_k g gᵀ``: exact for one sample. EK-FAC keeps the eigenvectors of ``A ⊗ G``
and refits its eigenvalues to the curvature's (George et al. 2018). Every other parameter
gets its exact block (``dense_limit`` entries at most); a weight used more than once is
refused.

Example::

    >>> model = lambda p, X: X @ p["W"]
    >>> p = {"W": np.ones((2, 1))}
    >>> K = kfac(model, "mse", p, np.array([[1.0, 0.0]]), np.zeros((1, 1)))
    >>> K.toarray()                       # one sample: A ⊗ G is the Gauss-Newton block
    array([[2., 0.],
           [0., 0.]])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import tree as pytree
from ..base.cache import PROGRAMS, identity_key
from ..core.flags import Flag
from ..core.interpret import read, walk
from ..core.ir import Aval, Eqn, Graph, Var
from ..core.trace import trace_to_graph
from ..errors import InvalidArgumentError, ShapeMismatchError, UnsupportedOpError
from ..frontend import numpy as dnp
from ..runtime.transformed import Transformed
from ..transforms import simplify
from .differentiation import grad
from .estimators import positive_int
from .gauss_newton import (
    CurvatureOperator,
    FisherOperator,
    GaussNewtonOperator,
    closed_form_roots,
    data_batches,
    likelihood_of,
    loss_hessian_factors,
    param_names,
    progress_reporter,
    single_output,
)
from .vectorize import vmap

__all__ = ["KFACOperator", "ekfac", "find_layers", "kfac"]

_BATCH_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Layer:
    """A parameter that is the weight of one product with a batch of activations."""

    param: int            # its leaf index
    eqn: Eqn              # the product
    act: int              # the position of the activations among the product's operands
    a_perm: tuple         # the activations' axes: rows..., then the contracted one
    s_perm: tuple         # the product's axes: rows..., then the weight's output axis
    in_out: bool          # W's axes are (d_in, d_out) (else (d_out, d_in))
    d_in: int
    d_out: int


def product_spec(eqn: Eqn) -> str | None:
    """The einsum subscripts of a two-operand product (its declared element form: a row
    times a column, or a sum over the contracted letters), None for anything else."""
    prim = eqn.prim
    if not prim.has(Flag.MULTILINEAR) or prim.has(Flag.ELEMENTWISE) or len(eqn.inputs) != 2:
        return None
    form = prim.lowerings.get("tiny")
    if form == "einsum":
        return eqn.params.get("spec")
    if form != "matmul":
        return None
    ra, rb = (len(a.aval.shape) for a in eqn.inputs)
    nb = max(ra, rb) - 2
    batch = _BATCH_LETTERS[:max(nb, 0)]
    if ra == 1:
        return f"k,{batch}kn->{batch}n"
    if rb == 1:
        return f"{batch}mk,k->{batch}m"
    return f"{batch[nb - (ra - 2):]}mk,{batch[nb - (rb - 2):]}kn->{batch}mn"


def find_layers(graph: Graph, n_params: int, names: list[str], what: str = "kfac"):
    """The layers of ``graph`` (whose first ``n_params`` inputs are the parameters, the
    others the data), and the indices of the other parameters. A weight of a product that
    is also used elsewhere is refused (:class:`~dualgpu.UnsupportedOpError`)."""
    param_of = {v.id: i for i, v in enumerate(graph.inputs[:n_params])}
    readers: dict[int, list[Eqn]] = {}
    for eqn in graph.eqns:
        for a in eqn.inputs:
            if isinstance(a, Var):
                readers.setdefault(a.id, []).append(eqn)
    outputs = {a.id for a in graph.outputs if isinstance(a, Var)}
    data = {v.id for v in graph.inputs[n_params:]}
    for eqn in graph.eqns:  # the values computed from the data
        if any(isinstance(a, Var) and a.id in data for a in eqn.inputs):
            data.update(v.id for v in eqn.outs)
    layers = {}
    for v in graph.inputs[:n_params]:
        i = param_of[v.id]
        uses = readers.get(v.id, [])
        found = _weight_use(v, uses, readers, outputs, data)
        if found is None:
            if len(uses) > 1 and any(product_spec(e) is not None for e in uses):
                where = ", ".join(sorted({e.source or "?" for e in uses}))
                raise UnsupportedOpError(
                    f"{what}: {names[i]} is the weight of a matrix product and is used "
                    f"{len(uses)} times in the model (at {where}); K-FAC needs each weight in "
                    "one product: give each use its own parameter, or use dg.ggn / dg.fisher")
            continue
        layers[i] = found
    for i, layer in layers.items():
        layer.param = i
    ordered = list(layers.values())
    biases = {}
    for v in graph.inputs[:n_params]:
        i = param_of[v.id]
        k = _bias_of(v, readers.get(v.id, []), ordered, readers, outputs)
        if i not in layers and k is not None:
            biases[i] = k
    return ordered, biases, [i for i in range(n_params) if i not in layers and i not in biases]


def _bias_of(v: Var, uses, layers: list[Layer], readers, outputs) -> int | None:
    """The layer whose product's output ``v`` is added to (its one use, broadcast along the
    weight's output axis, the product's output read nowhere else), or None."""
    if len(uses) != 1 or v.id in outputs or not uses[0].prim.has(Flag.ADDITIVE):
        return None
    eqn = uses[0]
    for k, layer in enumerate(layers):
        s = layer.eqn.outs[0]
        if [a.id if isinstance(a, Var) else None for a in eqn.inputs].count(s.id) != 1 \
                or len(readers.get(s.id, [])) != 1 or s.id in outputs:
            continue
        rank, axis = len(s.aval.shape), layer.s_perm[-1]
        shape = (1,) * (rank - len(v.aval.shape)) + tuple(v.aval.shape)
        if len(shape) == rank and all(d == (layer.d_out if a == axis else 1)
                                      for a, d in enumerate(shape)):
            return k
    return None


def _weight_use(v: Var, uses, readers, outputs, data) -> Layer | None:
    """``v``'s one use as a product's weight (through one transpose at most), or None."""
    if len(uses) != 1 or v.id in outputs:
        return None
    eqn, perm = uses[0], None
    operand = v
    if eqn.prim.lowerings.get("view") == "permute" and len(eqn.outs) == 1:
        perm = tuple(eqn.params["perm"])
        operand = eqn.outs[0]
        if operand.id in outputs or len(readers.get(operand.id, [])) != 1:
            return None
        eqn = readers[operand.id][0]
    spec = product_spec(eqn)
    if spec is None or len(v.aval.shape) != 2:
        return None
    w_pos = [k for k, a in enumerate(eqn.inputs) if a is operand]
    if len(w_pos) != 1:
        return None
    act = 1 - w_pos[0]
    if not isinstance(eqn.inputs[act], Var) or eqn.inputs[act].id not in data:
        return None
    ins, out = spec.split("->")
    a_letters, t_letters = ins.split(",")[act], ins.split(",")[w_pos[0]]
    w_letters = t_letters if perm is None else "".join(
        t_letters[perm.index(k)] for k in range(2))
    inner = [c for c in w_letters if c in a_letters and c not in out]
    outer = [c for c in w_letters if c in out and c not in a_letters]
    rows = [c for c in out if c in a_letters]
    if len(inner) != 1 or len(outer) != 1 or len(set(a_letters)) != len(a_letters) \
            or set(a_letters) != set(rows) | set(inner) or set(out) != set(rows) | set(outer) \
            or len(out) != len(set(out)):
        return None
    shape = v.aval.shape
    in_out = w_letters == inner[0] + outer[0]
    return Layer(
        param=-1, eqn=eqn, act=act,
        a_perm=tuple(a_letters.index(c) for c in rows + inner),
        s_perm=tuple(out.index(c) for c in rows + outer),
        in_out=in_out, d_in=shape[0] if in_out else shape[1],
        d_out=shape[1] if in_out else shape[0])


def _gram(m):
    """``mᵀ m`` (one GEMM)."""
    return m.T @ m


def _weighted(m, w: float):
    """``m`` times a batch's weight ``w`` (a Python float: the dtype stays)."""
    return m if w == 1.0 else m * float(w)


def _rows(x, perm, width):
    """``x`` with its axes ``perm`` (rows..., then one), as ``(rows, width)``."""
    return dnp.reshape(dnp.transpose(x, perm), (-1, width))


def tapped_graph(graph: Graph, layers: list[Layer], s_aval: Aval | None,
                 roots: str | None = None) -> Graph:
    """``(*inputs of graph, S) -> (activations..., gradients...)``: per layer its activations
    as ``(rows, d_in)``, and the factors ``S`` (``(K,) + outputs' shape``) of the curvature in
    the outputs carried back to its output, ``(K, rows, d_out)``: the gradients of
    ``Σ S[k] * outputs`` in a zero added to the product's output. With ``roots`` (the name
    of a likelihood loss, ``s_aval`` None) ``S`` is no input: the closed-form roots of that
    loss's Hessian at the outputs (:func:`closed_form_roots`), computed in the program from
    its own forward, whose outputs come last (the model runs once)."""
    taps = {id(layer.eqn): k for k, layer in enumerate(layers)}

    def forward(leaves, perturbations):
        acts: dict[int, Any] = {}

        def rule(eqn, values, states):
            outs = eqn.prim.bind(*values, **eqn.params)
            outs = list(outs) if eqn.prim.multiple_results else [outs]
            k = taps.get(id(eqn))
            if k is not None:
                acts[k] = values[layers[k].act]
                outs[0] = outs[0] + perturbations[k]
            return outs, [None] * len(outs)

        env, _ = walk(graph, leaves, None, rule)
        return read(env, graph.outputs[0]), [acts[k] for k in range(len(layers))]

    def run(*inputs):
        leaves = list(inputs[:len(graph.inputs)])
        zeros = [dnp.broadcast_to(graph.xp.zeros((), layer.eqn.outs[0].aval.dtype),
                                  layer.eqn.outs[0].aval.shape) for layer in layers]
        out, acts = forward(leaves, zeros)
        S = inputs[-1] if roots is None else closed_form_roots(roots, out, dnp)
        tail = [] if roots is None else [out]
        if not layers:
            return tail
        gs = vmap(grad(lambda e, u: dnp.sum(forward(leaves, e)[0] * u)),
                  in_axes=(None, 0))(zeros, S)
        return ([_rows(a, layer.a_perm, layer.d_in) for a, layer in zip(acts, layers)]
                + [dnp.reshape(dnp.transpose(g, (0,) + tuple(p + 1 for p in layer.s_perm)),
                               (g.shape[0], -1, layer.d_out)) for g, layer in zip(gs, layers)]
                + tail)

    avals = [v.aval for v in graph.inputs] + ([] if s_aval is None else [s_aval])
    tapped, _ = trace_to_graph(run, avals, graph.xp, name=f"kfac_{graph.name}")
    return simplify(tapped)


class _KroneckerFactors(Transformed):
    """``factors(params, X, S) -> (layers, biases, others, activations, gradients, None)``:
    the layers of ``model`` (:func:`find_layers`, on the traced model) and, from one
    program, their activations and the factors ``S`` carried back to their outputs
    (:func:`tapped_graph`). With ``samples`` the name of a likelihood loss,
    ``factors(params, X)``: the factors are that loss's Hessian roots, made in the program,
    and the model's outputs come last. Cached like every transform (per model, call
    signature, and the number of factors ``K`` (or the loss) and of parameter leaves, its
    options)."""

    kind = "kfac"

    def __init__(self, model, n_params: int, samples: int | str, what: str):
        super().__init__(model, argnums=())
        self.n_params, self.samples, self.what = n_params, samples, what
        self.roots = samples if isinstance(samples, str) else None

    def options(self) -> dict:
        return {"n_params": self.n_params, "samples": self.samples}

    def split(self, args):
        return args[:2], (None if self.roots else args[2])

    def extra_inputs(self, sig, S):
        return [] if self.roots else [S]

    def build(self, traced, sig):
        graph = traced.graph
        if len(graph.outputs) != 1:
            raise ShapeMismatchError(f"{self.what}: model(params, X) must return one array, "
                                     f"got {len(graph.outputs)} outputs")
        names = graph.input_names or [f"input {i}" for i in range(len(graph.inputs))]
        layers, biases, others = find_layers(graph, self.n_params, names, self.what)
        out = graph.outputs[0].aval
        if self.roots == "cross_entropy" and len(out.shape) != 2:
            raise ShapeMismatchError(f"{self.what}: cross_entropy needs model(params, X) of "
                                     f"shape (n, k), got {tuple(out.shape)}")
        s_aval = None if self.roots else Aval((self.samples,) + tuple(out.shape), out.dtype)
        return tapped_graph(graph, layers, s_aval, self.roots), (layers, biases, others)

    def finish(self, compiled, sig, outs):
        layers, biases, others = compiled.trees
        n = len(layers)
        return (layers, biases, others, list(outs[:n]), list(outs[n:2 * n]),
                outs[-1] if self.roots else None)


def kronecker_factors(model, n_params: int, samples: int | str,
                      what: str) -> _KroneckerFactors:
    """The factors transform of ``model`` (one per model, parameter count and ``K``, kept in
    the one cache)."""
    return PROGRAMS.get_or_build(
        (KRONECKER_FACTORS, identity_key(model), n_params, samples, what),
        lambda: _KroneckerFactors(model, n_params, samples, what))


KRONECKER_FACTORS = "K-FAC factor transforms"   # their kind in the one cache


class KFACOperator(CurvatureOperator):
    """K-FAC (or EK-FAC) of the Gauss-Newton or Fisher matrix (see :func:`kfac`): a
    block-diagonal operator, one block per parameter, stored by its matrix (a layer's as
    its two Kronecker factors: K-FAC's products are ``A W G``); the blocks' eigenvectors and
    eigenvalues are computed on first use (:meth:`inverse`, exact and by them, the spectra,
    EK-FAC, whose eigenvalues are refitted when it is built) and kept.
    ``factors`` maps each layer's name to its ``(A, G)``, ``structure`` each parameter's
    name to how its block is made (``"kronecker"``, ``"bias of <weight>"``, ``"exact
    block"``)."""

    kind = "kfac"

    def __init__(self, model, loss, params, X=None, Y=None, *, fisher_type="ggn", samples=1,
                 seed=None, batches=None, dense_limit=1024, corrected=False, progress=None,
                 average=False):
        what = "ekfac" if corrected else "kfac"
        if fisher_type not in ("ggn", "mc", "empirical"):
            raise InvalidArgumentError(f"{what}: fisher_type must be 'ggn', 'mc' or "
                                       f"'empirical', got {fisher_type!r}")
        positive_int(dense_limit, "dense_limit", what)
        leaves = pytree.leaves(params)
        data = data_batches(X, Y, batches, what)
        runs: list = []      # per batch: (layers, biases, others, activations, gradients, out)
        forward = None
        if fisher_type == "ggn" and likelihood_of(loss) is not None:
            # the loss's roots made in the factors program from its forward: the model runs
            # once, the Gauss-Newton base takes its outputs from there
            transform = kronecker_factors(model, len(leaves), likelihood_of(loss), what)
            report = progress_reporter(progress, what)

            def forward(params, X):
                runs.append(transform(params, X))
                if report is not None:
                    report("factors", len(runs), len(data))
                return runs[-1][5]
        if fisher_type == "ggn":
            base: CurvatureOperator = GaussNewtonOperator(model, loss, params, batches=data,
                                                          progress=progress, average=average,
                                                          forward=forward)
        else:
            base = FisherOperator(model, loss, params, kind=fisher_type, samples=samples,
                                  seed=seed, batches=data, progress=progress, average=average)
        self.kind, self.base, self.fisher_type = what, base, fisher_type
        self.setup(params, base.batches, progress, like=base)
        outs = [single_output(out, what) for out in base.outputs]
        weights = base.weights if runs else [1.0] * len(outs)  # else inside the factors S
        if not runs:
            if fisher_type == "ggn":
                factors = [loss_hessian_factors(base.loss, out, Y, what) * float(np.sqrt(w))
                           for out, (_, Y), w in zip(outs, self.batches, base.weights)]
            else:
                factors = base.factors
            transform = kronecker_factors(model, len(leaves), int(factors[0].shape[0]), what)
            for (X, _), S in zip(self.batches, factors):
                runs.append(transform(params, X, S))
                if self.report is not None:
                    self.report("factors", len(runs), len(self.batches))
        self.names = names = param_names(params)
        self.layers, biases, others = runs[0][:3]
        for run in runs[1:]:
            if [(la.param, la.in_out) for la in run[0]] != [
                    (la.param, la.in_out) for la in self.layers] or run[1] != biases:
                raise InvalidArgumentError(f"{what}: the batches' models have different "
                                           "layers (batches of different structure)")
        too_big = [f"{names[i]} ({leaves[i].size} entries)" for i in others
                   if leaves[i].size > dense_limit]
        if too_big:
            raise UnsupportedOpError(
                f"{what}: {', '.join(too_big)} has no Kronecker structure (it is not the weight "
                "of one matrix product with a batch of activations) and its exact block would "
                f"be over dense_limit={dense_limit} rows; raise dense_limit or use dg.ggn")
        self._blocks(leaves, biases, others, [run[3:5] for run in runs], weights, corrected)

    def _blocks(self, leaves, biases, others, outs, weights, corrected):
        """The blocks from the activations and gradients ``outs`` of each batch (its
        gradients' squares weighted by ``weights``): each block's matrix (a layer's
        ``(A, G)``, a bias's ``G``, an exact block), no eigenvectors unless ``corrected``
        (EK-FAC's eigenvalues are refitted on the data, which is not kept)."""
        xp = self.backend.xp
        offsets = np.cumsum([0] + [leaf.size for leaf in leaves])
        self.blocks: list = []           # (start, stop, layer or None, (A, G) or matrix)
        self.factors = {}
        self.corrected = corrected
        self.eigen_cache: list = []      # [[(eigvecs, eigvals) per block]] once computed
        refits: dict[int, Any] = {}      # EK-FAC: a block's index -> its refitted eigenvalues
        if self.layers:
            rows = sum(a[0].shape[0] for a, _ in outs)
            for k, layer in enumerate(self.layers):
                A = sum(_gram(a[k]) for a, _ in outs) / rows
                G = sum(_weighted(_gram(g[k].reshape(-1, layer.d_out)), w)
                        for (_, g), w in zip(outs, weights))
                self.factors[self.names[layer.param]] = (A, G)
                self.blocks.append((offsets[layer.param], offsets[layer.param + 1], layer,
                                    (A, G)))
                if corrected:  # the curvature's own variance along each eigenvector
                    qa, qg = xp.linalg.eigh(A)[1], xp.linalg.eigh(G)[1]
                    refits[len(self.blocks) - 1] = ((qa, qg), sum(
                        _weighted(((a[k] @ qa) ** 2).T @ xp.sum((g[k] @ qg) ** 2, axis=0), w)
                        for (a, g), w in zip(outs, weights)))
                for i in (i for i, j in biases.items() if j == k):  # its bias: A = 1
                    self.blocks.append((offsets[i], offsets[i + 1], None, G))
                    if corrected:
                        refits[len(self.blocks) - 1] = (qg, sum(
                            _weighted(xp.sum((g[k] @ qg) ** 2, axis=(0, 1)), w)
                            for (_, g), w in zip(outs, weights)))
        rows = [np.arange(offsets[i], offsets[i + 1]) for i in others]
        if others:  # the exact blocks: the products with their unit vectors, one program
            eye = xp.eye(self.n, dtype=self.dtype)[xp.asarray(np.concatenate(rows))]
            dense = self.base.products(eye) if eye.shape[0] else eye
        at = 0
        for i, r in zip(others, rows):
            block = dense[at:at + r.size, offsets[i]:offsets[i + 1]]
            at += r.size
            self.blocks.append((offsets[i], offsets[i + 1], None, (block + block.T) / 2))
        order = sorted(range(len(self.blocks)), key=lambda b: self.blocks[b][0])
        self.blocks = [self.blocks[b] for b in order]
        if corrected:
            self.eigen_cache.append([refits.get(b) or self.eigen_of(self.blocks[j])
                                     for j, b in enumerate(order)])
        self.structure = {self.names[layer.param]: "kronecker" for layer in self.layers}
        self.structure.update({self.names[i]: "bias of " + self.names[self.layers[k].param]
                               for i, k in biases.items()})
        self.structure.update({self.names[i]: "exact block" for i in others})
        self.spectrum = None                 # a function of the eigenvalues (inverse)

    def eigen_of(self, block, done: dict | None = None) -> tuple:
        """``(eigenvectors, eigenvalues)`` of one block: a layer's ``((qa, qg), la ⊗ lg)``
        (``done``: the decompositions made so far by matrix, a bias's ``G`` its layer's)."""
        done = {} if done is None else done

        def eigh(m):
            if id(m) not in done:
                done[id(m)] = (m, self.backend.xp.linalg.eigh(m))   # m kept: ids stay valid
            return done[id(m)][1]

        _, _, layer, m = block
        if layer is None:
            lam, q = eigh(m)
            return q, lam
        (la, qa), (lg, qg) = eigh(m[0]), eigh(m[1])
        return (qa, qg), la[:, None] * lg[None, :]

    def eigen(self) -> list:
        """Each block's ``(eigenvectors, eigenvalues)``: computed on first use (by the
        inverse, the spectra, EK-FAC's products), then kept (shared with the inverses)."""
        if not self.eigen_cache:
            done: dict = {}
            self.eigen_cache.append([self.eigen_of(block, done) for block in self.blocks])
        return self.eigen_cache[0]

    def by_matrices(self) -> bool:
        """Whether products and diagonals come from the blocks' matrices (K-FAC itself:
        ``A W G``, exact and cheaper) rather than from their eigenvectors."""
        return self.spectrum is None and not self.corrected

    def _hvp(self, x, v):
        return self._hvp_columns(x, v.reshape(-1, 1)).reshape(v.shape)

    def _hvp_columns(self, x, V):
        xp = self.backend.xp
        pieces = []
        direct = self.by_matrices()
        eig = [None] * len(self.blocks) if direct else self.eigen()
        for (start, stop, layer, m), qlam in zip(self.blocks, eig):   # coordinates' order
            block = V[start:stop]
            if qlam is not None:
                q, lam = qlam
                lam = lam if self.spectrum is None else self.spectrum(lam)
            if layer is None:
                pieces.append(m @ block if direct else q @ (lam[:, None] * (q.T @ block)))
                continue
            k = V.shape[1]
            W = block.reshape((layer.d_in, layer.d_out, k) if layer.in_out
                              else (layer.d_out, layer.d_in, k))
            W = xp.transpose(W, (2, 0, 1) if layer.in_out else (2, 1, 0))  # (k, d_in, d_out)
            if direct:
                r = m[0] @ W @ m[1]                            # (A ⊗ G) vec W = A W G
            else:
                qa, qg = q
                r = qa @ ((qa.T @ W @ qg) * lam) @ qg.T
            r = xp.transpose(r, (1, 2, 0) if layer.in_out else (2, 1, 0))
            pieces.append(r.reshape(stop - start, k))
        return xp.concatenate(pieces, axis=0)

    def spectra(self):
        """Each block's eigenvalues (after :meth:`inverse`'s map, if any), computed on first
        use."""
        return [lam if self.spectrum is None else self.spectrum(lam)
                for _, lam in self.eigen()]

    def diagonal(self, method: str = "exact", num_samples: int = 30, seed: int | None = 0):
        """The diagonal (flat; ``unravel`` gives the pytree): ``"exact"`` from the blocks, no
        product (``diag(A ⊗ G) = diag(A) ⊗ diag(G)`` for K-FAC; in the eigenbasis for EK-FAC
        and the inverse), or Hutchinson's estimate."""
        if method != "exact":
            return super().diagonal(method, num_samples, seed)
        xp = self.backend.xp
        pieces = []
        if self.by_matrices():
            for _, _, layer, m in self.blocks:
                if layer is None:
                    pieces.append(xp.diagonal(m))
                    continue
                d = xp.diagonal(m[0])[:, None] * xp.diagonal(m[1])[None, :]  # (d_in, d_out)
                pieces.append((d if layer.in_out else d.T).reshape(-1))
        else:
            for (_, _, layer, _), (q, _), lam in zip(self.blocks, self.eigen(), self.spectra()):
                if layer is None:
                    pieces.append((q * q) @ lam)
                    continue
                qa, qg = q
                d = (qa * qa) @ lam @ (qg * qg).T                    # (d_in, d_out)
                pieces.append((d if layer.in_out else d.T).reshape(-1))
        return xp.concatenate(pieces) if pieces else xp.zeros(0, dtype=self.dtype)

    def trace(self, method: str = "exact", num_samples: int = 30, seed: int | None = 0):
        """The trace: ``"exact"`` (the default here: the sum of the diagonal or of the
        eigenvalues, no product) or estimated (``"hutchinson"``, ``"hutch++"``)."""
        if method != "exact":
            return super().trace(method, num_samples, seed)
        xp = self.backend.xp
        if self.by_matrices():
            return xp.sum(self.diagonal()) if self.blocks else xp.zeros((), dtype=self.dtype)
        return sum((xp.sum(lam) for lam in self.spectra()), xp.zeros((), dtype=self.dtype))

    def eigenvalues(self, k: int = 1, which: str = "LA", **eigsh_options):
        """The ``k`` largest (``which="LA"``) or smallest (``"SA"``) eigenvalues, ascending:
        exact, from the blocks' eigenvalues (no Lanczos; ``k`` may be ``n``)."""
        positive_int(k, "k", f"{self.kind}.eigenvalues")
        if which not in ("LA", "SA") or eigsh_options:
            raise InvalidArgumentError(f"{self.kind}.eigenvalues: takes which='LA' or 'SA' "
                                       f"and no eigsh options (its eigenvalues are exact), got "
                                       f"which={which!r} {sorted(eigsh_options)}")
        if k > self.n:
            raise InvalidArgumentError(f"{self.kind}.eigenvalues: k={k} is over n={self.n}")
        xp = self.backend.xp
        lam = xp.sort(xp.concatenate([s.reshape(-1) for s in self.spectra()]))
        return lam[-k:] if which == "LA" else lam[:k]

    def per_sample_diagonal(self, chunk: int | None = None):
        raise UnsupportedOpError(
            f"{self.kind}.per_sample_diagonal: the Kronecker factors are sums over the samples "
            "and K-FAC has no per-sample terms; use the per-sample diagonal of the matrix it "
            f"approximates, {self.kind}.base.per_sample_diagonal()")

    def inverse(self, damping: float = 0.0) -> KFACOperator:
        """``(K + damping I)⁻¹`` as an operator of the same blocks, exact (by the
        eigenvectors; a Kronecker block's ``(A ⊗ G + damping I)⁻¹`` is no product of two
        inverses)."""
        if not isinstance(damping, (int, float, np.floating, np.integer)) \
                or isinstance(damping, bool) or damping < 0:
            raise InvalidArgumentError(f"{self.kind}.inverse: damping must be a non-negative "
                                       f"number, got {damping!r}")
        for lam in self.spectra():   # this operator's eigenvalues (an inverse's: inverted)
            if damping == 0 and float(self.backend.xp.min(lam)) <= 0:
                raise InvalidArgumentError(f"{self.kind}.inverse: the operator is singular "
                                           "(an eigenvalue <= 0); give damping > 0")
        inv = object.__new__(type(self))
        inv.__dict__.update(self.__dict__)
        inv.nprod = 0
        own = self.spectrum   # an inverse's inverse maps the eigenvalues of the inverse
        inv.spectrum = (lambda lam: 1.0 / (lam + damping)) if own is None else \
            (lambda lam: 1.0 / (own(lam) + damping))
        return inv


def kfac(model, loss, params, X=None, Y=None, *, fisher_type: str = "ggn", samples: int = 1,
         seed: int | None = None, batches=None, dense_limit: int = 1024,
         progress=None, average: bool = False) -> KFACOperator:
    """The K-FAC approximation of the Gauss-Newton (``fisher_type="ggn"``, the loss
    Hessian's per-sample factors) or Fisher (``"mc"``, ``"empirical"``, as :func:`fisher`)
    matrix of ``loss(model(params, X), Y)``: for each layer found in the traced model (a
    weight of one matrix product with a batch of activations) ``A ⊗ G``, for each other
    parameter its exact block (``dense_limit`` entries at most). A SciPy (cupyx)
    ``LinearOperator`` like :func:`ggn`'s, with ``.factors`` (``{name: (A, G)}``) and
    ``.inverse(damping)``, the exact ``(K + damping I)⁻¹``.

    Example::

        >>> model = lambda p, X: np.tanh(X @ p["W1"]) @ p["W2"]
        >>> p = {"W1": np.full((3, 4), 0.1), "W2": np.full((4, 2), 0.1)}
        >>> X, Y = np.ones((5, 3)), np.zeros((5, 2))
        >>> K = dg.kfac(model, "mse", p, X, Y)
        >>> sorted(K.factors), [f.shape for f in K.factors["params['W1']"]]
        (["params['W1']", "params['W2']"], [(3, 3), (4, 4)])
        >>> v = np.ones(K.n)
        >>> np.allclose(K.inverse(0.1) @ (K @ v + 0.1 * v), v)
        True
    """
    return KFACOperator(model, loss, params, X, Y, fisher_type=fisher_type, samples=samples,
                        seed=seed, batches=batches, dense_limit=dense_limit, progress=progress,
                        average=average)


def ekfac(model, loss, params, X=None, Y=None, *, fisher_type: str = "ggn", samples: int = 1,
          seed: int | None = None, batches=None, dense_limit: int = 1024,
          progress=None, average: bool = False) -> KFACOperator:
    """EK-FAC: :func:`kfac`'s eigenvectors with the eigenvalues refitted to the
    curvature (per row of activations: exact for a product over one row per sample).

    Example::

        >>> model = lambda p, X: X @ p["W"]
        >>> p = {"W": np.array([[1.0], [2.0]])}
        >>> X, Y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros((2, 1))
        >>> np.allclose(dg.ekfac(model, "mse", p, X, Y).toarray(), np.eye(2))  # = G here
        True
    """
    return KFACOperator(model, loss, params, X, Y, fisher_type=fisher_type, samples=samples,
                        seed=seed, batches=batches, dense_limit=dense_limit, corrected=True,
                        progress=progress, average=average)
