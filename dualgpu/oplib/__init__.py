"""Ops that are whole in one module: the declaration, the rule of every interpreter that
does not derive it from the op's flags, the lowering, and the NumPy-compatible function.

This layer sits above :mod:`dualgpu.lax` and the rule helpers (:mod:`dualgpu.rules`), so an
op's rules are written beside its declaration; the front end (:mod:`dualgpu.frontend`)
exports the function under NumPy's name. CONTRIBUTING.md ("Adding a structured op") walks
through :mod:`~dualgpu.oplib.searchsorted`, the first op written this way.
"""
from . import argmax, searchsorted  # noqa: F401  (registers the ops)
