"""The public functions, one module per family: what ``dg.<name>`` is.

``differentiation`` (grad, value_and_grad, hvp, grad_and_hvp, hessian, jit, trace, source),
``linearization`` (jvp, vjp, linearize, linear_transpose), ``vectorize`` (vmap and the
Jacobians), ``curvature`` (Laplacian, biharmonic, Hessian diagonal and trace), ``taylor``
(jet, differential operators), ``operators`` and ``estimators`` (Hessian operators and their
estimators), ``gauss_newton`` and ``kfac`` (curvature operators of training),
``sparse_derivatives`` and ``sparse_plan`` (sparse Jacobians and Hessians), ``custom_op`` and
``custom_derivatives`` (user rules), ``export`` and ``spy_plot``. Each is imported by
``dualgpu/__init__.py``, which is the public surface; the modules below this layer
(``runtime``, ``transforms``, ``frontend``, ``ops``, ``core``, ...) are internals.
"""
