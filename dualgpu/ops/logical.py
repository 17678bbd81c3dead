"""The elementwise ops whose outputs carry no derivative, one row each: the sign, rounding,
comparisons, logic, the floating-point predicates, ``nextafter``, and the bitwise ops and
shifts (on bools and integers only, as in NumPy). Each row is the op's whole block: its value,
dtype rule and C forms; every interpreter treats it by its flags (no derivative).

>>> from dualgpu.ops import logical
>>> logical.less.c, bool(logical.less(1.0, 2.0))
('({0} < {1})', True)
"""
from __future__ import annotations

import numpy as np

from ..core.ir import Aval
from ..core.primitives import Primitive
from ..errors import ArgumentTypeError
from ..rules.elementwise_rules import elementwise, shape_rule

# --------------------------------------------------------------------------- sign, rounding,
# comparisons, logic (their outputs carry no derivative)
_SIGN_INT = "((({0}) > 0) - (({0}) < 0))"
sign: Primitive = elementwise(
    "sign", "sign", 1, c=f"((({{0}}) != ({{0}})) ? ({{0}}) : {_SIGN_INT})",
    c_int=_SIGN_INT, differentiable=False)  # NaN: NaN
floor = elementwise("floor", "floor", 1, c="floor({0})", c_int="({0})", differentiable=False)
ceil = elementwise("ceil", "ceil", 1, c="ceil({0})", c_int="({0})", differentiable=False)
rint = elementwise("rint", "rint", 1, c="rint({0})", c_int="({0})", differentiable=False)
trunc = elementwise("trunc", "trunc", 1, c="trunc({0})", c_int="({0})", differentiable=False)
less = elementwise("less", "less", 2, c="({0} < {1})", result="bool", differentiable=False)
less_equal = elementwise("less_equal", "less_equal", 2, c="({0} <= {1})", result="bool",
                         differentiable=False)
greater = elementwise("greater", "greater", 2, c="({0} > {1})", result="bool",
                      differentiable=False)
greater_equal = elementwise("greater_equal", "greater_equal", 2, c="({0} >= {1})",
                            result="bool", differentiable=False)
equal = elementwise("equal", "equal", 2, c="({0} == {1})", result="bool", differentiable=False)
not_equal = elementwise("not_equal", "not_equal", 2, c="({0} != {1})", result="bool",
                        differentiable=False)
logical_and = elementwise("logical_and", "logical_and", 2, c="({0} && {1})", result="bool",
                          differentiable=False)
logical_or = elementwise("logical_or", "logical_or", 2, c="({0} || {1})", result="bool",
                         differentiable=False)
logical_not = elementwise("logical_not", "logical_not", 1, c="(!{0})", result="bool",
                          differentiable=False)
# CUDA's isnan/isinf/signbit take floating types only (an integer argument is ambiguous
# between their overloads): integer and bool forms of their own
isnan = elementwise("isnan", "isnan", 1, c="isnan({0})", c_int="(({0}) != ({0}))",
                    result="bool", differentiable=False)
isfinite = elementwise("isfinite", "isfinite", 1, c="(!isnan({0}) && !isinf({0}))",
                       c_int="(({0}) == ({0}))", result="bool", differentiable=False)
isinf = elementwise("isinf", "isinf", 1, c="isinf({0})", c_int="(({0}) != ({0}))",
                    result="bool", differentiable=False)
signbit = elementwise("signbit", "signbit", 1, c="signbit({0})", c_int="(({0}) < 0)",
                      result="bool", differentiable=False)
# the next representable value after x toward y: a step of one ulp, no derivative
nextafter = elementwise("nextafter", "nextafter", 2, c="nextafter({0}, {1})", result="float",
                        differentiable=False)

# --------------------------------------------------------------------------- bitwise
# On bools and integers only, as in NumPy (a float operand is refused), with NumPy's promotion
# (bool & int8 is int8, a Python int weak); the shifts compute bools as int8, as NumPy does.
# No float C form: the kernels compute them by the integer forms (``{T}``: the C type). C's
# ~ of a uint8 is a negative int, and of a bool true again: ~x is x ^ (T)-1. C's shifts by a
# count < 0 or >= the width are undefined, and a left shift of a negative value too: the
# count is tested first (NumPy's values: 0, or -1 for a negative value shifted right) and the
# left shift is made in 64-bit unsigned arithmetic.
_WEAK_NAMES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}
def _bitwise_shape(name: str, shift: bool = False):
    same = shape_rule(name, "same")

    def rule(avals, **params):
        aval = same(avals)
        if aval.dtype.kind not in "biu":
            types = ", ".join(f"Python {_WEAK_NAMES[a.dtype.kind]}" if a.weak else a.dtype.name
                              for a in avals)
            mixed = (" (signed and unsigned integers promote to a float)"
                     if all(a.dtype.kind in "biu" for a in avals) else "")
            raise ArgumentTypeError(
                f"np.{name}: ufunc '{name}' not supported for the input types ({types}), as in "
                f"NumPy: it takes integers and bools{mixed}; cast the operands, e.g. "
                f"x.astype(np.int64)")
        if shift and aval.dtype.kind == "b":
            return Aval(aval.shape, np.dtype(np.int8), aval.weak)
        return aval

    return rule
_BITWISE = "On bools and integers (floats are refused, as in NumPy)."
_SHIFTS = "On integers (bools as int8, floats refused, as in NumPy)."
_COUNT_IN_RANGE = "((unsigned long long)({1}) < 8 * sizeof({T}))"
bitwise_and = elementwise("bitwise_and", "bitwise_and", 2, c=None,
                          c_int="(({T})(({0}) & ({1})))", differentiable=False,
                          abstract_eval=_bitwise_shape("bitwise_and"), doc=_BITWISE)
bitwise_or = elementwise("bitwise_or", "bitwise_or", 2, c=None,
                         c_int="(({T})(({0}) | ({1})))", differentiable=False,
                         abstract_eval=_bitwise_shape("bitwise_or"), doc=_BITWISE)
bitwise_xor = elementwise("bitwise_xor", "bitwise_xor", 2, c=None,
                          c_int="(({T})(({0}) ^ ({1})))", differentiable=False,
                          abstract_eval=_bitwise_shape("bitwise_xor"), doc=_BITWISE)
invert = elementwise("invert", "invert", 1, c=None, c_int="(({T})(({0}) ^ (({T})-1)))",
                     differentiable=False, abstract_eval=_bitwise_shape("invert"),
                     doc=_BITWISE + " ~ of a bool is its logical not, as in NumPy.")
left_shift = elementwise(
    "left_shift", "left_shift", 2, c=None, differentiable=False,
    c_int=f"({_COUNT_IN_RANGE} ? ({{T}})((unsigned long long)({{0}}) << ({{1}})) : ({{T}})0)",
    abstract_eval=_bitwise_shape("left_shift", shift=True),
    doc=_SHIFTS + " A count < 0 or >= the width gives 0.")
right_shift = elementwise(
    "right_shift", "right_shift", 2, c=None, differentiable=False,
    c_int=f"({_COUNT_IN_RANGE} ? ({{T}})(({{0}}) >> ({{1}})) : ({{T}})(({{0}}) < 0 ? -1 : 0))",
    abstract_eval=_bitwise_shape("right_shift", shift=True),
    doc=_SHIFTS + " A count < 0 or >= the width gives 0, or -1 for a negative value.")
