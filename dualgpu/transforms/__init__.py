"""Graph-to-graph transforms: jvp, vjp, hvp (forward-over-reverse), simplification and the
separability check of batched HVPs. Each transform traces a new graph by evaluating the old
one with rules written in registry ops, so transforms compose."""
from .hvp import grad_graph, hvp_graph  # noqa: F401
from .jvp import jvp_graph  # noqa: F401
from .simplify import simplify  # noqa: F401
from .stack_gemms import stack_gemms  # noqa: F401
from .vjp import vjp_graph  # noqa: F401
