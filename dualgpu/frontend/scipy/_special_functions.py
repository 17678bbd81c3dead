"""The functions of ``scipy.special`` that are more than an elementwise op under another name
(the namespace, :mod:`.special`, only imports)."""
from __future__ import annotations

from ...ops import elementwise as _ew


def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function I_x(a, b),
    differentiable in ``x`` (``x**(a-1) (1-x)**(b-1) / B(a, b)``); derivatives in ``a`` and
    ``b`` are refused, as JAX has none.

    >>> import scipy.special
    >>> dg.grad(lambda x: scipy.special.betainc(2.0, 3.0, x))(np.array(0.5))
    array(1.5)
    """
    return _ew.betainc.bind(a, b, x)
