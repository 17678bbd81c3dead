"""The NumPy-, SciPy- and CuPy-compatible functions of traced values, laid out like the
namespaces a traced function calls them in: :mod:`.numpy` (with ``numpy.linalg`` and
``numpy.fft``), :mod:`.scipy` (``scipy.special``, ``scipy.sparse``, ``scipy.linalg``,
``scipy.fft``), :mod:`.nn` (``dg.nn``) and :mod:`.array_api` (the array API's spellings).

:mod:`dualgpu.frontend.namespace` resolves ``np.linalg.norm`` (or ``cupy.linalg.norm``) to
``frontend.numpy.linalg.norm`` and ``scipy.special.expit`` (or ``cupyx.scipy.special.expit``)
to ``frontend.scipy.special.expit`` by walking this package.
"""
from ..core.trace import register_front_end
from . import array_api, nn, numpy, scipy

# The Tracer's operators and ndarray methods (core/trace.py) call the functions of these
# names in the numpy namespace.
register_front_end(numpy)
