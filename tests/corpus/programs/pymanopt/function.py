__all__ = ["autograd", "jax", "numpy", "pytorch", "tensorflow"]

from pymanopt.autodiff.backends import (
    autograd,
    jax,
    numpy,
    pytorch,
    tensorflow,
)
