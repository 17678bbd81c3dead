"""More ports of JAX's custom_jvp / custom_vjp tests: the in-scope ones no other file ported.

Source: jax-ml/jax ``tests/custom_api_test.py`` (``CustomJVPTest``, ``CustomVJPTest``) at
cec06d1, translated: ``jnp`` -> ``np``, ``jax.X`` -> ``dg.X``, JAX's assertions kept (JAX's
``UnexpectedTracerError`` is ``dg.EscapedTracerError``). Each test names the JAX test it
mirrors. JAX is Copyright the JAX authors, licensed under the Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0); these are translations, not copies. The census
of what is in scope is in tests/api/test_jax_api_ports_more.py.
"""
import collections
import copy
from functools import partial

import numpy as np
import pytest

import dualgpu as dg


def close(a, b, **kw):
    la, lb = dg.tree_util.tree_leaves(a), dg.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), **kw)


# ------------------------------------------------------------------------ CustomJVPTest
def test_custom_jvp_deepcopy():  # CustomJVPTest.test_deepcopy (dg.nn.relu: no custom rule)
    f = copy.deepcopy(dg.nn.relu)  # doesn't crash
    close(dg.grad(f)(1.), 1.)


def test_custom_jvp_closed_over_tracers_error_message():  # test_closed_over_tracers_error_message
    def f(x):
        @dg.custom_jvp
        def g(y):
            return x + y

        def g_jvp(primals, tangents):
            return g(x), 2 * primals[0]
        g.defjvp(g_jvp)
        return g(1.)

    with pytest.raises(dg.EscapedTracerError):
        dg.jvp(f, (3.,), (1.,))
    with pytest.raises(dg.EscapedTracerError):
        dg.grad(f)(3.)


