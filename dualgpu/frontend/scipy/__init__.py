"""The ``scipy`` (and ``cupyx.scipy``) namespaces of traced values: ``special``, ``sparse``,
``stats`` (the distributions), and ``linalg``/``fft``, which are NumPy's functions of those
names."""
from . import fft, linalg, sparse, special, stats
