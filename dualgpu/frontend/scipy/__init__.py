"""The ``scipy`` (and ``cupyx.scipy``) namespaces of traced values: ``special``, ``sparse``,
``linalg`` (SciPy's signatures and conventions) and ``fft`` (NumPy's functions of those
names)."""
from . import fft, linalg, sparse, special
