"""The ``scipy`` (and ``cupyx.scipy``) namespaces of traced values: ``special``, ``sparse``,
``stats`` (the distributions), ``linalg`` (SciPy's signatures and conventions), ``fft``
(NumPy's functions of that name), ``signal`` (convolutions) and ``integrate`` (``odeint``)."""
from . import fft, integrate, linalg, signal, sparse, special, stats
