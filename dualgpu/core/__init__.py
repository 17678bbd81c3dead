"""The core: the graph IR and its printer, dtype/axis/index-key rules, the primitive
registry, the tracer and the encoder of values into generated source. Nothing here imports
from the layers above (ops, lax, rules, frontend, transforms, ...).
"""
from . import pprint  # noqa: F401  (installs str(), pictures and DOT on Graph)
