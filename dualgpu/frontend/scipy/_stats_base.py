"""What ``scipy.stats``' distributions on traced values share (:mod:`.stats`): SciPy's
argument parsing (shape parameters, then ``loc`` and ``scale``, positionally or by
keyword), freezing, and the float64 arrays every argument becomes."""
from __future__ import annotations

import math

import numpy as np

from ...errors import ArgumentTypeError, UnsupportedOpError, user_location
from ...lax import astype, dtype_of, is_tracer
from .. import numpy as dnp
from ..numpy.arguments import arraylike

LOG_2PI = math.log(2 * math.pi)
LOG_PI = math.log(math.pi)
LOG_2 = math.log(2.0)
INF, NAN = math.inf, math.nan


def float64_array(x):
    """``x`` as SciPy's distributions read it: a float64 array (traced or not)."""
    x = arraylike(x)
    if dtype_of(x).kind == "c":
        raise ArgumentTypeError(f"scipy.stats: complex arguments are not supported "
                                f"(at {user_location()})")
    if is_tracer(x) or hasattr(x, "dtype"):
        return astype(x, np.float64)
    return np.float64(x)


def all_of(*conds):
    out = conds[0]
    for c in conds[1:]:
        out = dnp.logical_and(out, c)
    return out


def positive(*xs):
    return all_of(*(dnp.greater(x, 0) for x in xs))


# ----------------------------------------------------------------------- the distributions
class Distribution:
    """What the continuous and discrete distributions share: SciPy's argument parsing and
    freezing."""

    name = ""
    methods: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    safe_shapes: tuple[float, ...] = ()  # valid values standing in for invalid parameters
    params: tuple[str, ...] = ("loc", "scale")
    defaults: tuple[object, ...] = (0.0, 1.0)
    x_name = "x"
    without_x: tuple[str, ...] = ()  # methods of the parameters alone (entropy)

    def _parse(self, method: str, args: tuple, kwds: dict) -> list:
        """The shape parameters, then loc (and scale), from SciPy's positional and keyword
        arguments, as float64 arrays."""
        names = self.shapes + self.params
        label = f"scipy.stats.{self.name}.{method}"
        if len(args) > len(names):
            raise ArgumentTypeError(
                f"{label} takes at most {len(names)} parameters after {self.x_name} "
                f"({', '.join(names)}), got {len(args)} (at {user_location()})")
        values = dict(zip(names, args))
        for key, value in kwds.items():
            if key not in names:
                raise ArgumentTypeError(
                    f"{label} got an unexpected keyword argument {key!r} (its parameters: "
                    f"{', '.join(names)}) (at {user_location()})")
            if key in values:
                raise ArgumentTypeError(f"{label} got multiple values for argument {key!r} "
                                        f"(at {user_location()})")
            values[key] = value
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise ArgumentTypeError(f"{label} is missing the shape parameter(s) "
                                    f"{', '.join(missing)} (at {user_location()})")
        defaults = dict(zip(self.params, self.defaults))
        return [float64_array(values.get(n, defaults.get(n))) for n in names]

    def _safe(self, ok, shapes):
        """The shape parameters with a valid value where ``ok`` is false, so that the
        formulas (and their derivatives) stay finite where the answer is NaN anyway."""
        return [dnp.where(ok, s, safe) for s, safe in zip(shapes, self.safe_shapes)]

    def _argcheck(self, *shapes):
        return positive(*shapes) if shapes else True

    def __call__(self, *args, **kwds) -> Frozen:
        """The frozen distribution: ``norm(loc, scale).logpdf(x)``."""
        self._parse("__call__", args, kwds)  # SciPy's errors at freezing time
        return Frozen(self, args, kwds)

    def __repr__(self) -> str:
        return f"<dualgpu's scipy.stats.{self.name} for traced values>"


class Frozen:
    """A distribution with its parameters fixed (SciPy's ``rv_frozen``): each method is the
    distribution's with those parameters.

    >>> import scipy.stats
    >>> float(dg.grad(lambda s: scipy.stats.norm(0.0, s).logpdf(2.0))(np.array(1.0)))
    3.0
    """

    def __init__(self, dist: Distribution, args: tuple, kwds: dict):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    @property
    def methods(self) -> tuple[str, ...]:
        return self.dist.methods

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.dist.methods:
            raise UnsupportedOpError(
                f"scipy.stats.{self.dist.name}(...).{name} is not supported with traced "
                f"parameters (at {user_location()}); the traced methods are "
                f"{', '.join(self.dist.methods)}")
        bound = getattr(self.dist, name)
        if name in self.dist.without_x:  # multivariate_normal(mean, cov).entropy()
            return lambda *args, **kwds: bound(*self.args, *args, **self.kwds, **kwds)

        def call(x, *args, **kwds):
            return bound(x, *self.args, *args, **self.kwds, **kwds)

        return call

    def __repr__(self) -> str:
        return f"<dualgpu's frozen scipy.stats.{self.dist.name}>"


