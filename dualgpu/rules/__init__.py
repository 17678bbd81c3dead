"""The rule registry, grouped by kind of op. Importing this package registers every rule."""
from . import elementwise, linalg, reductions, shape  # noqa: F401
