"""The ``scipy`` (and ``cupyx.scipy``) namespaces of traced values: ``special``, ``sparse``,
``stats`` (the distributions), ``linalg`` (SciPy's signatures and conventions), ``fft``
(NumPy's functions of that name) and ``signal`` (convolutions)."""
from . import fft, linalg, signal, sparse, special, stats
