"""dualgpu: second-order automatic differentiation for NumPy and CuPy programs.

Trace a function into a graph, transform it (jvp, vjp/grad, hvp = forward-over-reverse) and
run it as generated Python on NumPy or as fused CUDA kernels on CuPy::

    import numpy as np
    import dualgpu as dg

    def loss(w, x):
        return np.sum(dg.nn.sigmoid(x @ w) ** 2)

    hv = dg.hvp(loss)(w, x, v)      # H·v with respect to w
"""
from importlib import import_module
from types import FunctionType

from . import (  # noqa: F401
    autograd_compat,  # autograd's spellings (docs/coming_from.md)
    frontend,
    nn,  # dg.nn (dualgpu/nn.py: the public path of frontend/nn.py)
    ops,  # noqa: F401  (first: every op with its rules, in the op layer's order)
    testing,  # noqa: F401
    tree_util,  # noqa: F401
)
from ._version import __version__  # noqa: F401  (the one version source)
from .api import custom_batching  # noqa: F401  (installs the batching rule of custom ops)
from .api.curvature import biharmonic, hessian_diag, hessian_trace, laplacian
from .api.custom_derivatives import custom_jvp, custom_vjp
from .api.custom_op import custom_op
from .api.differentiation import (
    ShapeDtypeStruct,
    cache_info,
    clear_cache,
    disable_jit,
    eval_shape,
    grad,
    grad_and_hvp,
    hessian,
    hvp,
    jit,
    set_cache_size,
    source,
    trace,
    value_and_grad,
)
from .api.export import export
from .api.gauss_newton import fisher, ggn
from .api.kfac import ekfac, kfac
from .api.linearization import jvp, linear_transpose, linearize, vjp
from .api.operators import HessianOperator, hessp
from .api.taylor import biharmonic_directions, differential_operator, jet
from .api.vectorize import jacfwd, jacobian, jacrev, vmap
from .autograd_compat import deriv, elementwise_grad, hessian_vector_product, make_hvp
from .base import tree  # noqa: F401  (dg.tree: the pytree functions tree_util is built on)
from .core.ir import Graph
from .core.primitives import REGISTRY, defprim
from .errors import (
    ArgumentTypeError,
    AxisError,
    BackendMismatchError,
    CodegenSafetyError,
    CupyImportError,
    DualgpuError,
    EscapedTracerError,
    IndexOutOfBoundsError,
    IntegerInputError,
    InvalidArgumentError,
    InvalidIndexError,
    MissingRuleError,
    NonScalarOutputError,
    RandomInTraceError,
    SeparabilityError,
    ShapeMismatchError,
    SparseMethodError,
    StaticArgumentError,
    TracerControlFlowError,
    UnsupportedOpError,
    UnsupportedSparseFormatError,
    install_traceback_filter,
    suggests_keywords,
)
from .lax import stop_gradient
from .runtime.executor import config
from .runtime.signature import FLOAT0 as float0

# autograd's argnum= is taken as argnums= by every transform that takes argnums
grad, value_and_grad, hvp, grad_and_hvp, hessian, hessp, jacfwd, jacrev, jacobian, \
    hessian_diag, hessian_trace = map(autograd_compat.accepts_argnum, (  # type: ignore[arg-type]
        grad, value_and_grad, hvp, grad_and_hvp, hessian, hessp, jacfwd, jacrev, jacobian,
        hessian_diag, hessian_trace))

# tracebacks that reach the top level show the user's frames, not dualgpu's
# (DUALGPU_TRACEBACK=full shows them all)
install_traceback_filter()


# imported at first use: sparse_derivatives imports the colorings and networkx (70 ms)
_LAZY = {name: "api.sparse_derivatives" for name in (
    "hessian_sparsity", "jacobian_sparsity", "sparse_hessian", "sparse_jacobian")}
_LAZY["spy"] = "api.spy_plot"


def __getattr__(name: str):
    """``dg.<name>`` of the names imported at first use (``_LAZY``); for a name JAX,
    autograd or torch.func has and dualgpu spells differently: an AttributeError that gives
    dualgpu's spelling."""
    if name in _LAZY:
        value = suggests_keywords(getattr(import_module(f".{_LAZY[name]}", __name__), name))
        globals()[name] = value
        return value
    if name in autograd_compat.FOREIGN_NAMES:
        raise autograd_compat.foreign_name_error(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "jvp", "vjp", "grad", "export", "value_and_grad", "hvp", "grad_and_hvp", "hessian", "hessp",
    "linearize", "linear_transpose",
    "HessianOperator", "trace", "eval_shape", "ShapeDtypeStruct", "source", "jit", "disable_jit",
    "nn", "tree", "tree_util", "testing", "Graph",
    "DualgpuError", "ArgumentTypeError", "InvalidArgumentError", "defprim", "custom_op",
    "custom_jvp", "custom_vjp",
    "REGISTRY", "stop_gradient", "config", "cache_info", "clear_cache", "set_cache_size",
    "BackendMismatchError", "CodegenSafetyError", "EscapedTracerError", "IntegerInputError",
    "NonScalarOutputError", "SeparabilityError", "ShapeMismatchError", "StaticArgumentError",
    "TracerControlFlowError",
    "UnsupportedOpError", "UnsupportedSparseFormatError", "AxisError", "RandomInTraceError",
    "IndexOutOfBoundsError", "InvalidIndexError", "SparseMethodError", "CupyImportError",
    "MissingRuleError",
    "vmap", "jacfwd", "jacrev", "jacobian", "laplacian", "biharmonic", "hessian_diag",
    "hessian_trace",
    "float0", "elementwise_grad", "deriv", "hessian_vector_product", "make_hvp",
    "jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian", "spy",
    "jet", "differential_operator", "biharmonic_directions",
    "ggn", "fisher", "kfac", "ekfac",
]

# a misspelled keyword of a public function gets the one it meant ("did you mean 'argnums'?")
globals().update({_name: suggests_keywords(_fn) for _name, _fn in globals().items()
                  if _name in __all__ and isinstance(_fn, FunctionType)})
del FunctionType
