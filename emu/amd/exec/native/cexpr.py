"""The semantics table's numpy expressions as C: one expression, two backends.

Each node's type is the type numpy gives it, found by evaluating that sub-expression with numpy on values of the
operands' dtypes (so numpy's promotion rules, weak Python scalars included, are never restated here); the C for the
node then computes in that type as numpy's ufunc loop does: every operand converted to it, one operation, the result
rounded to it. Calls go to C helpers named h_<function>_<first argument's dtype> (helpers.h); a construct or
helper with no C form raises Untranslatable, and the instruction runs on the reference backend instead.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

from usergpu.emu.amd.exec.helpers import DTYPES, NAMESPACE

CTYPE = {"bool": "_Bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
         "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "float16": "_Float16",
         "float32": "float", "float64": "double"}
SHORT = {"bool": "b1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
         "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32", "float64": "f64"}
BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitAnd: "&", ast.BitOr: "|",
          ast.BitXor: "^", ast.LShift: "shl", ast.RShift: "shr"}
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
# numpy functions of one dtype -> the helper that computes them (h_<name>_<dtype>)
NP_FUNCS = {"minimum": "npmin", "maximum": "npmax", "abs": "abs", "sqrt": "sqrt",
            "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint", "copysign": "copysign",
            "ldexp": "ldexp", "isnan": "isnan", "clip": "clip"}
HELPERS_H = Path(__file__).parents[3] / "native" / "helpers.h"


class Untranslatable(Exception):
    """An expression (or a part of one) with no C form; the instruction runs on the reference backend."""


@cache
def c_helpers() -> frozenset[str]:
    """The helper functions helpers.h defines, its macros expanded by the preprocessor (only asked when a kernel is
    translated, which compiles anyway)."""
    from usergpu.emu.native.build import compiler

    done = subprocess.run([compiler(), "-E", "-P", "-x", "c", str(HELPERS_H)], capture_output=True, text=True,
                          check=True)
    return frozenset(re.findall(r"\b(h_\w+)\s*\(", done.stdout + HELPERS_H.read_text()))


def short(dtype: np.dtype | str) -> str:
    return SHORT[np.dtype(dtype).name]


def ctype(dtype: np.dtype | str) -> str:
    return CTYPE[np.dtype(dtype).name]


class _Weak:
    """A Python scalar in the expression (W - 1, 0.5): numpy treats it as weak, taking the other operand's type."""

    def __init__(self, value):
        self.value = value


def _typeof(value) -> np.dtype | _Weak:
    if isinstance(value, bool | int | float):
        return _Weak(value)
    return np.asarray(value).dtype


class Translator:
    """C for the expressions of one instruction, its operands named a, b, c, d, k (C variables of their dtypes)
    and mask / scc (booleans); W and L are the instruction's constants."""

    def __init__(self, types: dict[str, str], consts: dict[str, int]):
        self.types = {n: np.dtype(DTYPES.get(t, t)) if t != "bool" else np.dtype(bool) for n, t in types.items()}
        self.consts = consts
        self.env = {**NAMESPACE, **consts, **{n: np.zeros(1, t) for n, t in self.types.items()}}

    def __call__(self, expr: str) -> tuple[str, np.dtype]:
        node = ast.parse(expr, mode="eval").body
        code, typ = self.node(node)
        if isinstance(typ, _Weak):
            raise Untranslatable(f"{expr}: a constant expression")
        return code, typ

    # ---- types ---------------------------------------------------------------------------------------------
    def infer(self, node: ast.expr):
        try:
            with np.errstate(all="ignore"):
                value = eval(compile(ast.Expression(node), "<semantics>", "eval"), self.env)  # noqa: S307
        except Exception as e:  # noqa: BLE001 (any failure: numpy cannot type it either)
            raise Untranslatable(f"{ast.unparse(node)}: {e}") from None
        return value

    def _names(self, node: ast.expr) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in self.types}

    # ---- nodes ---------------------------------------------------------------------------------------------
    def node(self, node: ast.expr) -> tuple[str, np.dtype | _Weak]:
        if not self._names(node):  # no operand in it: numpy works out the constant
            value = self.infer(node)
            if not isinstance(value, bool | int | float | np.generic):
                raise Untranslatable(f"{ast.unparse(node)}: not a number")
            typ = _typeof(value)
            if isinstance(typ, _Weak):
                return self.literal(value, None), typ
            if np.asarray(value).ndim:
                raise Untranslatable(f"{ast.unparse(node)}: an array constant")
            return self.literal(value.item() if hasattr(value, "item") else value, typ), typ
        result = self.infer(node)
        typ = _typeof(result)
        if isinstance(typ, _Weak):
            raise Untranslatable(f"{ast.unparse(node)}: not an array")
        if isinstance(node, ast.Name):
            return node.id, self.types[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            return self.binop(BINOPS[type(node.op)], node.left, node.right, typ), typ
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMPOPS:
            common = self.common(node.left, node.comparators[0])
            a, b = self.cast(node.left, common), self.cast(node.comparators[0], common)
            return f"({a} {CMPOPS[type(node.ops[0])]} {b})", typ
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.cast(node.operand, typ)
            return (self.helper("neg", typ, [inner]) if typ.kind == "f" else f"(({ctype(typ)})(-{inner}))"), typ
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            inner = self.cast(node.operand, typ)
            return (f"(!{inner})" if typ == np.dtype(bool) else f"(({ctype(typ)})~{inner})"), typ
        if isinstance(node, ast.Call):
            return self.call(node, typ), typ
        raise Untranslatable(f"{ast.unparse(node)}: no C form")

    def common(self, x: ast.expr, y: ast.expr) -> np.dtype:
        tx, ty = self.node(x)[1], self.node(y)[1]
        vals = [t.value if isinstance(t, _Weak) else t for t in (tx, ty)]
        common = np.result_type(*vals)
        kinds = {"w" if isinstance(t, _Weak) else t.kind for t in (tx, ty)}
        if kinds == {"i", "u"} and common.kind == "f":
            raise Untranslatable("a signed and an unsigned 64-bit integer together")
        return common

    def binop(self, op: str, x: ast.expr, y: ast.expr, typ: np.dtype) -> str:
        a, b = self.cast(x, typ), self.cast(y, typ)
        if op in ("shl", "shr"):
            return self.helper(f"{op}", typ, [a, b])
        if typ.kind == "f":  # NaN operands as numpy's loops order them (helpers.h ARITH)
            return self.helper({"+": "add", "-": "sub", "*": "mul", "/": "div"}[op], typ, [a, b])
        return f"(({ctype(typ)})({a} {op} {b}))"

    def cast(self, node: ast.expr, to: np.dtype) -> str:
        code, typ = self.node(node)
        return self.convert(code, typ, to)

    def convert(self, code: str, typ, to: np.dtype) -> str:
        if isinstance(typ, _Weak):
            return self.literal(typ.value, to)
        if typ == to:
            return code
        if to == np.dtype(bool):
            return f"({code} != 0)"
        if typ.kind == "f" and to.kind in "iu":  # numpy leaves out-of-range conversions to the platform
            raise Untranslatable(f"float to {to} by astype")
        if typ.kind in "iub" and to.kind == "f" and to.itemsize == 2:
            return f"((_Float16)(double){code})"
        if typ.kind == "f" and to.kind == "f" and 2 in (typ.itemsize, to.itemsize):  # numpy's bit-exact half
            return f"h_{short(typ)}_to_{short(to)}({code})"
        return f"(({ctype(to)}){code})"

    def literal(self, value, typ: np.dtype | None) -> str:
        if isinstance(value, bool) or (typ is not None and typ == np.dtype(bool)):
            return "1" if value else "0"
        if typ is None:
            return repr(value) if isinstance(value, int) else float(value).hex()
        if typ.kind == "f":
            v = float(value)
            text = "(1.0/0.0)" if v == float("inf") else "(-1.0/0.0)" if v == float("-inf") else \
                "(0.0/0.0)" if v != v else v.hex()
            return f"(({ctype(typ)}){text})"
        v = int(value) & ((1 << 8 * typ.itemsize) - 1)
        return f"(({ctype(typ)}){v:#x}ULL)"

    def helper(self, name: str, typ: np.dtype, args: list[str]) -> str:
        fn = f"h_{name}_{short(typ)}"
        if fn not in c_helpers():
            raise Untranslatable(f"no C helper {fn}")
        return f"{fn}({', '.join(args)})"

    def call(self, node: ast.Call, typ: np.dtype) -> str:
        fn = node.func
        if node.keywords:
            raise Untranslatable(f"{ast.unparse(node)}: keyword arguments")
        if isinstance(fn, ast.Attribute) and fn.attr in ("astype", "view"):
            target = np.dtype(self.infer(node).dtype)
            code, src = self.node(fn.value)
            if fn.attr == "astype":
                return self.convert(code, src, target)
            if isinstance(src, _Weak) or src.itemsize != target.itemsize:
                raise Untranslatable(f"{ast.unparse(node)}: a view of another size")
            return f"BITCAST({ctype(target)}, {ctype(src)}, {code})"
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "np":
            if fn.attr == "where":
                cond, x, y = node.args
                return f"({self.cast(cond, np.dtype(bool))} ? {self.cast(x, typ)} : {self.cast(y, typ)})"
            if fn.attr in ("zeros_like", "ones_like"):
                return "0" if fn.attr == "zeros_like" else "1"
            if fn.attr not in NP_FUNCS:
                raise Untranslatable(f"np.{fn.attr}")
            first = self.node(node.args[0])[1]
            kind = typ if isinstance(first, _Weak) else first
            if fn.attr in ("minimum", "maximum", "copysign", "clip"):
                kind = typ  # numpy's loop runs in the result's type
            args = [self.cast(a, kind) for a in node.args[:1]] + [
                self.cast(a, kind if fn.attr != "ldexp" else np.dtype(np.int32)) for a in node.args[1:]]
            return self.helper(NP_FUNCS[fn.attr], kind, args)
        if isinstance(fn, ast.Name) and fn.id in DTYPES:  # u32(1): a constant of that type
            return self.cast(node.args[0], np.dtype(DTYPES[fn.id]))
        if isinstance(fn, ast.Name) and fn.id in NAMESPACE:
            name, args, first = fn.id, [], None
            for a in node.args:
                if isinstance(a, ast.Name) and a.id in DTYPES:  # a dtype argument (to_int(a, i32)): part of the name
                    name += "_" + short(DTYPES[a.id])
                    continue
                if isinstance(a, ast.Constant) and isinstance(a.value, str | bool):
                    raise Untranslatable(f"{ast.unparse(node)}: a constant argument")
                code, t = self.node(a)
                first = t if first is None else first
                args.append(code)
            if isinstance(first, _Weak):
                raise Untranslatable(f"{ast.unparse(node)}: no array argument first")
            return self.helper(name, first, args)
        raise Untranslatable(f"{ast.unparse(node)}: no C form")
