"""A module of the user's for tests: a layer class whose methods build arrays with np.array
from traced scalars (which no NumPy protocol dispatches), reached from another module."""
import numpy as np

GAIN = 1.0


class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, p):
        return GAIN * np.array([self.w * p[0], p[1] ** 2])
