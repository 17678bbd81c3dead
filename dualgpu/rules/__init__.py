"""The rule kits: what the op blocks of :mod:`dualgpu.ops` write their rules with, one
module per interpreter (``batching_rules``, ``separability_rules``, ``laplacian_rules``,
``taylor_rules``, ``sparsity_rules``) and the helpers the derivatives share (``common``).
No op's rule is here: each sits in its op's block."""
from .. import ops  # noqa: F401  (the op layer loads in one order: dualgpu/ops/__init__.py)
