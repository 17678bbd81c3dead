"""The rule registry, grouped by kind of op. Importing this package registers every rule."""
from . import decompositions, elementwise, linalg, reductions, shape, sparse  # noqa: F401
