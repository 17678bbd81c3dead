"""The ``scipy`` (and ``cupyx.scipy``) namespaces of traced values: ``special``, ``sparse``,
``stats`` (the distributions), ``linalg`` (SciPy's signatures and conventions) and ``fft``
(NumPy's functions of that name)."""
from . import fft, linalg, sparse, special, stats
