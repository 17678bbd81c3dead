"""``dualgpu.nn`` (``dg.nn``): the neural-network functions, under the import path they have
always had (``from dualgpu.nn import sigmoid``). They are defined in
:mod:`dualgpu.frontend.nn`, beside the other namespaces a traced function sees.

    >>> from dualgpu.nn import sigmoid
    >>> dg.grad(lambda x: sigmoid(x))(np.array(0.0))
    array(0.25)
"""
from .frontend.nn import *  # noqa: F403  (the public names, listed in its __all__)
from .frontend.nn import __all__  # noqa: F401
