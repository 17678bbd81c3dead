"""Every name that generated code uses comes from here, and every user-supplied name or C
expression is checked here before it can reach generated source."""
from __future__ import annotations

import keyword
import re

from ..errors import CodegenSafetyError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Tokens a user C expression may contain: numbers, operators, parentheses, commas,
# placeholders {0} {1} ..., and identifiers from a fixed whitelist of math functions.
_C_TOKEN = re.compile(r"\s*(\{\d\}|\{[A-Za-z][A-Za-z0-9_]*\}"
                      r"|[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?f?|[A-Za-z_][A-Za-z0-9_]*"
                      r"|\*\*|<=|>=|==|!=|&&|\|\||[-+*/%<>?:(),!])")
C_FUNCTIONS = frozenset("""
exp exp2 expm1 log log2 log10 log1p sqrt cbrt rsqrt sin cos tan asin acos atan atan2 sinh cosh
tanh asinh acosh atanh pow fabs fmax fmin floor ceil round rint trunc erf erfc erfinv erfcinv
lgamma tgamma hypot copysign fma fmod isnan isinf signbit normcdf normcdfinv nextafter ldexp
""".split())


def check_identifier(name: str, what: str = "name") -> str:
    """Accept ``name`` only if it is a plain identifier that cannot inject code.

    ASCII letters, digits and ``_``, starting with a letter, at most 64 characters, not a
    Python keyword. (A leading underscore is refused: ``ops.__init__`` or ``ops._xp`` in
    generated code would reach the namespace object's own attributes.)
    """
    if (not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name)
            or name.startswith("_")):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:77] + "..."
        raise CodegenSafetyError(
            f"{what} {shown!r} is not allowed: use letters, digits and '_', "
            "starting with a letter, at most 64 characters")
    return name


def check_c_expression(expr: str, arity: int) -> str:
    """Accept a C expression template only if it is made of whitelisted tokens.

    Placeholders ``{0}``..``{arity-1}`` stand for the operands.
    """
    if not isinstance(expr, str) or len(expr) > 400:
        raise CodegenSafetyError("a C expression must be a string of at most 400 characters")
    if not expr.isascii() or any(ch in expr for ch in "\n\r;#\\'\""):
        raise CodegenSafetyError(f"C expression {expr[:80]!r}: only ASCII, no ';', '#', "
                                 "quotes, backslashes or line breaks")
    pos = 0
    while pos < len(expr):
        m = _C_TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise CodegenSafetyError(
                f"C expression {expr!r}: character {expr[pos]!r} at {pos} is not allowed")
        tok = m.group(1)
        if tok[0] == "{" and tok[1].isdigit() and int(tok[1:-1]) >= arity:
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


def kernel_name(prefix: str, digest: str) -> str:
    return f"dg_{prefix}_{digest}"


def host_entry_name(kernel: str) -> str:
    """The host library's entry point that calls ``kernel`` on NumPy array objects."""
    return f"{kernel}_host"


# Names the generated Python source uses for itself: the array module, the registry's
# implementations, the builtins of literals; and the patterns of generated variables.
RESERVED_NAMES = frozenset({"xp", "ops", "float", "True", "False", "None"})
_GENERATED = re.compile(r"^(?:t|c|in|i)[0-9]+$")


def function_name(raw: str) -> str:
    """A safe Python identifier derived from a graph or function name.

    Anything that is not an ASCII letter, digit or ``_`` becomes ``_``; keywords, reserved
    names (``xp``, ``ops``...) and generated-variable names (``t0``, ``c1``) get an ``f_``
    prefix, so a user's ``__name__`` can neither inject code nor shadow what the generated
    code reads.
    """
    if not isinstance(raw, str):
        raw = "f"
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", raw).strip("_") or "f"
    if (cleaned[0].isdigit() or keyword.iskeyword(cleaned) or cleaned in RESERVED_NAMES
            or _GENERATED.match(cleaned)):
        cleaned = "f_" + cleaned
    return cleaned[:64]


def safe_input_names(labels) -> list:
    """Distinct parameter names for generated code from input labels (the user's argument
    names, and ``x_dot``/``out0_bar`` derived from them): each is made a safe identifier,
    and one that is reserved, looks like a generated name or repeats an earlier one gets a
    suffix."""
    out: list = []
    taken: set = set()
    for label in labels:
        name = function_name(label) if label != function_name(label) else label
        if name in RESERVED_NAMES or _GENERATED.match(name):
            name = name + "_"
        base, k = name, 1
        while name in taken:
            name = f"{base}_{k}"
            k += 1
        taken.add(name)
        out.append(name)
    return out


_PY_TOKEN = re.compile(r"\s*(\.?\{[A-Za-z0-9_]*\}|\.?[A-Za-z_][A-Za-z0-9_]*"
                       r"|[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?"
                       r"|\*\*|==|!=|<=|>=|//|[-+*/@%<>=(),\[\]:~&|^])")
_PY_ROOTS = frozenset({"xp", "ops", "True", "False", "None"})


def check_py_template(tpl: str, what: str = "Python template") -> str:
    """Accept a primitive's Python source template only if it is an expression over its
    placeholders (``{0}``, ``{axis}``), ``xp.<name>`` and ``ops.<name>`` calls, numbers,
    operators and keyword arguments -- no other names, no strings, no statements."""
    if not isinstance(tpl, str) or len(tpl) > 400:
        raise CodegenSafetyError(f"a {what} must be a string of at most 400 characters")
    if not tpl.isascii() or any(ch in tpl for ch in "\n\r;#\\'\""):
        raise CodegenSafetyError(f"{what} {tpl[:80]!r}: only ASCII, no ';', '#', quotes, "
                                 "backslashes or line breaks")
    tokens = []
    pos = 0
    while pos < len(tpl):
        m = _PY_TOKEN.match(tpl, pos)
        if m is None or m.end() == pos:
            if tpl[pos:].strip() == "":
                break
            raise CodegenSafetyError(f"{what} {tpl!r}: {tpl[pos]!r} at {pos} is not allowed")
        tokens.append(m.group(1))
        pos = m.end()
    for k, tok in enumerate(tokens):
        prev = tokens[k - 1] if k else ""
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
        bare = tok.lstrip(".")
        if tok.startswith(".{"):  # xp.{dtype}: a parameter printed as an attribute name
            if prev != "xp":
                raise CodegenSafetyError(f"{what} {tpl!r}: {tok!r} must follow 'xp'")
            continue
        if not (bare[:1].isalpha() or bare[:1] == "_"):
            if tok == "=" and not (prev[:1].isalpha() and prev not in _PY_ROOTS):
                raise CodegenSafetyError(f"{what} {tpl!r}: '=' outside a keyword argument")
            continue
        if bare.startswith("_"):
            raise CodegenSafetyError(f"{what} {tpl!r}: name {bare!r} is not allowed")
        if tok.startswith("."):
            # xp.f, xp.linalg.f, xp.fft.f, ops.f, and one method or attribute of a value:
            # x.astype(...)
            if not (prev in ("xp", "ops") or prev.startswith("{") or prev in (")", "]")
                    or (prev in (".linalg", ".fft") and k >= 2 and tokens[k - 2] == "xp")):
                raise CodegenSafetyError(f"{what} {tpl!r}: attribute {tok!r} is not allowed")
            continue
        if nxt == "=" or tok in _PY_ROOTS:
            continue
        raise CodegenSafetyError(
            f"{what} {tpl!r}: name {tok!r} is not allowed (use xp.<function>, ops.<primitive> "
            "or a placeholder)")
    return tpl

