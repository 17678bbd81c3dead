"""The Taylor-mode peers of the per-point network of ``laplacian.py`` (issue 40): folx and
jet-for-pytorch, each through its own public API.

* **folx** (JAX; the forward Laplacian of Li et al., as a Jaxpr interpreter):
  ``folx.forward_laplacian(f)(x).laplacian`` of the network at one point, under
  ``jax.vmap`` over the points and ``jax.jit``, dense (``sparsity_threshold=0``: the
  network has no sparsity to exploit);
* **jet-for-pytorch** (collapsed Taylor mode, Dangel et al., NeurIPS 2025; the module is
  ``jet``): ``jet.laplacian(f, (x0,))`` and ``jet.bilaplacian(f, (x0,))`` of the network on
  one point (a ``torch.nn.Sequential`` of ``Linear`` and ``Tanh`` holding our weights),
  captured as an FX graph with common subexpressions eliminated and ``torch.func.vmap``-ed
  over the points, as the library's own Laplacian benchmark does.

Neither is on the GPU machine, which has no network: their wheels travel in the git-ignored
``.wheels/`` of the checkout and are installed at first use into ``benchmarks/peer/``
(:func:`benchmarks.common.import_from_wheels`)::

    pip download --no-deps --python-version 3.12 --only-binary=:all: folx \\
        jet-for-pytorch -d .wheels/

folx needs JAX and jaxtyping, jet-for-pytorch torch (>= 2.10) and SciPy, all on the GPU
machine; jet-for-pytorch needs Python >= 3.12. A peer that cannot be had is a skipped row
that says why.
"""
from __future__ import annotations

from .common import Context, Skip, import_from_wheels, import_jax, import_torch
from .laplacian import _at_precision, _jax_u

HOW = "benchmarks/taylor_peers.py says how to download it"


def import_folx():
    import_jax()
    return import_from_wheels("folx", ("folx-",), site="folx", python=(3, 10), how=HOW)


def import_jet(ctx: Context):
    import_torch(ctx)
    return import_from_wheels("jet", ("jet_for_pytorch-",), site="jet", python=(3, 12),
                              how=HOW)


def build_folx_laplacian(ctx: Context, precision: str | None = "highest"):
    """``jit(X, *params -> vmap(forward_laplacian(u(., params)))(X).laplacian)``."""
    jax = import_jax()
    folx = import_folx()
    ju = _jax_u(jax.numpy)

    def laplacians(X, *params):
        def one(x):
            return folx.forward_laplacian(lambda y: ju(y, *params),
                                          sparsity_threshold=0)(x).laplacian
        return jax.vmap(one)(X)

    return _at_precision(jax, jax.jit(laplacians), precision)


def torch_network(torch, params):
    """The network of ``laplacian.u`` as ``torch.nn.Sequential`` of ``Linear`` and ``Tanh``
    on one point, holding ``params`` (``W`` of shape ``(in, out)``, as ``u`` takes them)."""
    layers = []
    for i in range(0, len(params), 2):
        W, b = params[i], params[i + 1]
        linear = torch.nn.Linear(W.shape[0], W.shape[1], device=W.device, dtype=W.dtype)
        with torch.no_grad():
            linear.weight.copy_(W.T)
            linear.bias.copy_(b)
        linear.requires_grad_(False)
        layers += [linear, torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1])


def build_jet(ctx: Context, sets, operator: str):
    """jet-for-pytorch's collapsed ``operator`` (``"laplacian"`` or ``"bilaplacian"``) of
    the network holding the weights of ``sets()[0]``, vmapped over the points. The weights
    are baked into the captured graph: a call with other weights is refused, not answered
    for the old ones."""
    torch = import_torch(ctx)
    jet = import_jet(ctx)
    X, *params = sets()[0]
    net = torch_network(torch, params)
    x0 = torch.zeros_like(X[0])
    graph, _ = jet.capture_graph(getattr(jet, operator)(net, (x0,)), (x0,))
    jet.common_subexpression_elimination(graph.graph)
    graph.recompile()
    batched = torch.func.vmap(graph)
    baked = [id(p) for p in params]

    def call(X, *params):
        if [id(p) for p in params] != baked:
            raise Skip("jet-for-pytorch row called with weights it was not built for")
        return batched(X)[:, 0]

    return call
