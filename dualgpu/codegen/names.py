"""Every name that generated code uses comes from here, and every user-supplied name or C
expression is checked here before it can reach generated source."""
from __future__ import annotations

import keyword
import re

from ..errors import CodegenSafetyError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Tokens a user C expression may contain: numbers, operators, parentheses, commas,
# placeholders {0} {1} ..., and identifiers from a fixed whitelist of math functions.
_C_TOKEN = re.compile(r"\s*(\{\d\}|[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?f?|[A-Za-z_][A-Za-z0-9_]*"
                      r"|\*\*|<=|>=|==|!=|&&|\|\||[-+*/%<>?:(),!])")
C_FUNCTIONS = frozenset("""
exp exp2 expm1 log log2 log10 log1p sqrt cbrt rsqrt sin cos tan asin acos atan atan2 sinh cosh
tanh asinh acosh atanh pow fabs fmax fmin floor ceil round rint trunc erf erfc erfinv erfcinv
lgamma tgamma hypot copysign fma isnan isinf signbit normcdf normcdfinv
""".split())


def check_identifier(name: str, what: str = "name") -> str:
    """Accept ``name`` only if it is a plain identifier that cannot inject code."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name):
        raise CodegenSafetyError(
            f"{what} {name!r} is not allowed: use letters, digits and '_', "
            "starting with a letter, at most 64 characters")
    return name


def check_c_expression(expr: str, arity: int) -> str:
    """Accept a C expression template only if it is made of whitelisted tokens.

    Placeholders ``{0}``..``{arity-1}`` stand for the operands.
    """
    if not isinstance(expr, str) or len(expr) > 400:
        raise CodegenSafetyError("a C expression must be a string of at most 400 characters")
    pos = 0
    while pos < len(expr):
        m = _C_TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise CodegenSafetyError(
                f"C expression {expr!r}: character {expr[pos]!r} at {pos} is not allowed")
        tok = m.group(1)
        if tok[0] == "{" and int(tok[1]) >= arity:
            raise CodegenSafetyError(f"C expression {expr!r}: placeholder {tok} out of range")
        if (tok[0].isalpha() or tok[0] == "_") and tok not in C_FUNCTIONS:
            raise CodegenSafetyError(
                f"C expression {expr!r}: identifier {tok!r} is not a whitelisted math function")
        pos = m.end()
    return expr


# Templates of generated names, in one place.
def var_name(index: int) -> str:
    return f"t{index}"


def input_name(index: int) -> str:
    return f"in{index}"


def const_name(index: int) -> str:
    return f"c{index}"


def kernel_name(prefix: str, digest: str) -> str:
    return f"dg_{prefix}_{digest}"


def function_name(raw: str) -> str:
    """A safe Python identifier derived from a graph or function name."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", raw or "f").strip("_") or "f"
    if cleaned[0].isdigit() or keyword.iskeyword(cleaned):
        cleaned = "f_" + cleaned
    return cleaned[:64]
