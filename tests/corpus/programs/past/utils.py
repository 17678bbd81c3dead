# See past/__init__.py.
import numbers


def old_div(a, b):
    """Python 2's ``a / b``: floor division of two integers, true division otherwise."""
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return a // b
    return a / b
