__all__ = ["__version__", "function", "manifolds", "optimizers", "Problem"]

import os

from pymanopt import function, manifolds, optimizers
from pymanopt.core.problem import Problem

from ._version import __version__


os.environ["TF_CPP_MIN_LOG_LEVEL"] = os.getenv("TF_CPP_MIN_LOG_LEVEL", "2")
