"""The torch / numpy / builtin knowledge as one table of signatures, each mapped to an effect.

Every function and tensor method the analysis knows is a row: its name, its parameters
(bound the way Python binds a call, ``bind``) and what it does to the lengths, one of a
small closed set (``LibEffect``). ``TorchModel`` has one handler per effect; a call whose
name is in no row stays opaque (its lengths come back marked outside the model).

A rule's ``[sources]`` and ``[sanitizers]`` name rows of this vocabulary, and may add rows:
a function a rule declares (``zero_alloc = ["mylib.zeros"]``) gets the effect of its key.
Which rule a source or sanitizer step counts for is decided at the sink, not here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from zerolint.dataflow.library import (
    ARITH_METHODS,
    CONCAT_FUNCTIONS,
    CONSTANT_FUNCTIONS,
    REDUCTIONS,
    VIEW_FUNCTIONS,
    VIEW_METHODS,
)
from zerolint.dataflow.values import Val


class LibEffect(Enum):
    """What a library call does to the lengths it is given (the handler's name)."""

    VIEW = "view"  # the same values: views, copies, casts, moves
    CONCAT = "concat"  # the values of every argument
    CONSTANT = "constant"  # new values that come from no argument (ones, arange, empty)
    CLAMP = "clamp"  # bounded below and/or above
    FLOOR_DIVISION = "floor_division"  # x // c, x >> c (a source of zero-able lengths)
    TRUNCATION = "truncation"  # int(a / b), math.floor(a / b): a floor division
    CEIL_DIVISION = "ceil_division"  # cdiv(x, c): >= 1 for x >= 1
    ARITHMETIC = "arithmetic"  # + - * and negation with a constant
    ZERO_FILL = "zero_fill"  # every row 0 (a source)
    FILL = "fill"  # every row the fill value (0: a zero fill)
    COPY = "copy"  # x.copy_(src): the values of src, written into x
    SCATTER = "scatter"  # x.index_copy_(0, i, src): src written into some rows of x
    MASK = "mask"  # rows a mask picks set to a value (where, masked_fill)
    AT_LEAST_ONE = "at_least_one"  # >= 1 whatever it is given (a rule's own sanitizer)
    REDUCE = "reduce"  # a scalar, a size: the lengths' path ends here
    SCAN = "scan"  # a prefix sum (cumsum): zero-able exactly when its lengths are
    SUBTRACT = "subtract"  # a - b, diff(x): a source (a difference of lengths can be 0)
    ATTRIBUTE = "attribute"  # getattr(x, "name")
    IMPORT = "import"  # importlib.import_module("m")
    PARTIAL = "partial"  # functools.partial(f, ...)
    PAD = "pad"  # F.pad(x, pad, value=0): rows after x's set to the value
    TL_LOAD = "tl_load"  # triton.language.load(ptr + offs): the values of the tensor at ptr
    TL_STORE = "tl_store"  # triton.language.store(ptr + offs, v): v written into that tensor
    COLLECT = "collect"  # xs.append(v), xs.extend(vs): v joins what the container holds
    CAST = "cast"  # typing.cast(T, v): v, an instance of T
    MAPPING = "mapping"  # dict(k=v), d.get(k), d.items(), d.update(e): a dict's values (at k)
    WRAP = "wrap"  # torch.compile(fn), torch.compiler.disable(fn): fn, called the same way
    SET_ATTRIBUTE = "set_attribute"  # setattr(obj, "name", v): obj.name = v
    REPLACE = "replace"  # dataclasses.replace(obj, f=v): a new obj with field f = v


@dataclass(frozen=True, slots=True)
class Signature:
    """One row: the parameters a call binds (in order) and its effect."""

    effect: LibEffect
    params: tuple[str, ...] = ("input", "other")
    keywords: tuple[str, ...] = ("out",)
    """Keyword-only parameters (``rounding_mode``, ``out``)."""

    def bind(self, args: Sequence[tuple[cst.Arg, Val]]) -> Bound:
        return bind(args, self.params, self.keywords)


Bound = dict[str, tuple[cst.Arg, Val]]


def bind(
    args: Sequence[tuple[cst.Arg, Val]], params: Sequence[str], keywords: Sequence[str] = ()
) -> Bound:
    """The arguments by parameter name, as Python binds them (in the manner of
    ``inspect.Signature.bind``): positional ones in order, then keywords by name;
    ``keywords`` bind only by keyword; ``*``/``**`` bind nothing, and neither do unknown
    keywords unless ``keywords`` holds ``"**"`` (a ``**kwargs``): then each binds by its name."""
    bound: Bound = {}
    positional = [(a, v) for a, v in args if a.keyword is None and not a.star]
    for name, arg in zip(params, positional):
        bound[name] = arg
    any_keyword = "**" in keywords
    for a, v in args:
        if a.keyword is not None and (
            any_keyword or a.keyword.value in params or a.keyword.value in keywords
        ):
            bound[a.keyword.value] = (a, v)
    return bound


# The rule-table keys (rules.SOURCE_KEYS, rules.SANITIZER_KEYS) and the effect of a name
# a rule lists under them.
RULE_KEY_EFFECTS: Mapping[str, LibEffect] = {
    "floor_division": LibEffect.FLOOR_DIVISION,
    "floor_division_methods": LibEffect.FLOOR_DIVISION,
    "zero_alloc": LibEffect.ZERO_FILL,
    "zero_alloc_methods": LibEffect.ZERO_FILL,
    "full": LibEffect.FILL,
    "full_methods": LibEffect.FILL,
    "clamp": LibEffect.CLAMP,
    "clamp_methods": LibEffect.CLAMP,
    "ceil_division": LibEffect.CEIL_DIVISION,
    "at_least_one": LibEffect.AT_LEAST_ONE,
}
_METHOD_KEYS = frozenset(k for k in RULE_KEY_EFFECTS if k.endswith("_methods"))
_OPERATORS = frozenset({"//", ">>", "[]=", "[n:]=", "int", "math.floor", "math.trunc"})

_CLAMP = Signature(LibEffect.CLAMP, ("input", "min", "max"))
_BY_OPERAND = Signature(LibEffect.CLAMP, ("input", "other"))
_DIVISION = Signature(LibEffect.FLOOR_DIVISION, ("input", "other"), ("rounding_mode", "out"))
_DIVISION_METHOD = Signature(LibEffect.FLOOR_DIVISION, ("other",), ("rounding_mode", "out"))
_FULL = Signature(LibEffect.FILL, ("size", "fill_value"))
# torch.sub(x, y, alpha=a) is x - a * y, torch.rsub(x, y, alpha=a) is y - a * x, and
# torch.add(x, y, alpha=a) is x + a * y.
_BY_ALPHA_SUB = Signature(LibEffect.SUBTRACT, ("input", "other"), ("alpha", "out"))
_BY_ALPHA_ADD = Signature(LibEffect.ARITHMETIC, ("input", "other"), ("alpha", "out"))


def _rows(effect: LibEffect, names: Iterable[str], params: tuple[str, ...] | None = None) -> dict:
    sig = Signature(effect) if params is None else Signature(effect, params)
    return dict.fromkeys(names, sig)


def _functions() -> dict[str, Signature]:
    """The functions the analysis knows, lowest precedence first (a later row wins)."""
    table: dict[str, Signature] = {}
    table |= _rows(LibEffect.REDUCE, REDUCTION_FUNCTIONS)
    table |= _rows(LibEffect.PARTIAL, ("functools.partial",))
    table |= _rows(LibEffect.IMPORT, ("importlib.import_module", "__import__"), ("name",))
    table |= _rows(LibEffect.ATTRIBUTE, ("getattr",), ("object", "name", "default"))
    table |= _rows(LibEffect.CAST, ("typing.cast",), ("typ", "val"))
    table |= _rows(
        LibEffect.SET_ATTRIBUTE, ("setattr", "object.__setattr__"), ("object", "name", "value")
    )
    table |= dict.fromkeys(
        ("dataclasses.replace", "copy.replace"), Signature(LibEffect.REPLACE, ("obj",), ("**",))
    )
    table |= _rows(LibEffect.WRAP, WRAPPING_FUNCTIONS, ("fn",))
    table |= _rows(LibEffect.MAPPING, ("dict",), ("mapping",))
    table |= _rows(LibEffect.MASK, ("torch.where",), ("condition", "input", "other"))
    table |= _rows(LibEffect.VIEW, VIEW_FUNCTIONS, ("input",))
    table |= _rows(LibEffect.CONCAT, CONCAT_FUNCTIONS)
    table |= _rows(LibEffect.CONSTANT, CONSTANT_FUNCTIONS)
    table |= dict.fromkeys(
        ("torch.full", "torch.full_like", "numpy.full", "numpy.full_like"), _FULL
    )
    table |= _rows(LibEffect.ZERO_FILL, ZERO_FUNCTIONS)
    table |= _rows(LibEffect.ZERO_FILL, ("torch.zero_",), ("input",))
    table |= dict.fromkeys(DIVISION_FUNCTIONS, _DIVISION)
    table |= _rows(LibEffect.TRUNCATION, TRUNCATION_FUNCTIONS, ("input",))
    table |= _rows(LibEffect.CEIL_DIVISION, CEIL_FUNCTIONS)
    table |= dict.fromkeys(CLAMP_FUNCTIONS, _CLAMP)
    table |= dict.fromkeys(BOUND_BY_OPERAND, _BY_OPERAND)
    table |= _rows(LibEffect.SCAN, ("torch.cumsum", "numpy.cumsum"), ("input", "dim"))
    # Triton kernels (@triton.jit), interpreted as Python when launched as kernel[grid](...):
    # pointers carry the tensors passed for them.
    table |= _rows(LibEffect.TL_LOAD, ("triton.language.load",), ("pointer", "mask", "other"))
    table |= _rows(LibEffect.TL_STORE, ("triton.language.store",), ("pointer", "value", "mask"))
    table |= _rows(
        LibEffect.CONSTANT,
        ("triton.language.program_id", "triton.language.arange", "triton.language.num_programs"),
    )
    table |= _rows(LibEffect.MASK, ("triton.language.where",), ("condition", "input", "other"))
    table |= _rows(
        LibEffect.PAD,
        ("torch.nn.functional.pad", "torch.constant_pad_nd"),
        ("input", "pad", "mode", "value"),
    )
    table |= _rows(LibEffect.SUBTRACT, ("torch.diff", "numpy.diff"))
    table |= _rows(LibEffect.SCATTER, ("torch.index_copy",), ("input", "dim", "index", "source"))
    table |= _rows(LibEffect.SCATTER, ("torch.masked_scatter",), ("input", "mask", "source"))
    table |= dict.fromkeys(("torch.sub", "torch.subtract", "torch.rsub"), _BY_ALPHA_SUB)
    table |= {"torch.add": _BY_ALPHA_ADD}
    return table


def _methods() -> dict[str, Signature]:
    """The tensor methods the analysis knows (the receiver is not a parameter)."""
    table: dict[str, Signature] = {}
    table |= _rows(LibEffect.REDUCE, REDUCTIONS)
    table |= _rows(LibEffect.VIEW, VIEW_METHODS)
    table |= _rows(LibEffect.MASK, ("index_fill", "index_fill_"), ("dim", "index", "value"))
    table |= _rows(LibEffect.MASK, ("masked_fill", "masked_fill_"), ("mask", "value"))
    table |= _rows(LibEffect.MASK, ("where",), ("condition", "other"))
    table |= dict.fromkeys(ARITH_METHODS, Signature(LibEffect.ARITHMETIC, ("other",), ("alpha",)))
    table |= _rows(LibEffect.COPY, ("copy_",), ("src",))
    table |= _rows(LibEffect.SCATTER, ("index_copy", "index_copy_"), ("dim", "index", "source"))
    table |= _rows(LibEffect.SCATTER, ("masked_scatter", "masked_scatter_"), ("mask", "source"))
    table |= _rows(LibEffect.FILL, ("new_full",), ("size", "fill_value"))
    table |= _rows(LibEffect.FILL, ("fill_",), ("value",))
    table |= _rows(LibEffect.ZERO_FILL, ("zero_", "new_zeros"))
    table |= dict.fromkeys(DIVISION_METHODS, _DIVISION_METHOD)
    table |= _rows(LibEffect.CLAMP, CLAMP_METHODS, ("min", "max"))
    table |= _rows(LibEffect.SCAN, ("cumsum", "cumsum_"), ("dim",))
    table |= _rows(LibEffect.SUBTRACT, ("diff",), ("n", "dim"))
    table |= _rows(LibEffect.TRUNCATION, TRUNCATION_METHODS, ("dtype",))
    table |= _rows(LibEffect.COLLECT, ("append", "extend", "appendleft"), ("value",))
    table |= _rows(LibEffect.COLLECT, ("insert",), ("index", "value"))
    table |= _rows(LibEffect.MAPPING, ("get", "pop", "setdefault"), ("key", "default"))
    table |= _rows(LibEffect.MAPPING, ("values", "items"), ())
    table |= {"update": Signature(LibEffect.MAPPING, ("other",), ("**",))}
    return table


WRAPPING_FUNCTIONS = (
    "torch.compile",
    "torch.compiler.disable",
    "torch._dynamo.disable",
    "torch.jit.ignore",
    "torch.jit.unused",
    "functools.cache",
    "functools.lru_cache",
)
"""Calls that give back the function they are given, wrapped: calling what they return
calls it with the same arguments (``self.kernel = torch.compiler.disable(kernel)``)."""

REDUCTION_FUNCTIONS = (
    "torch.sum",
    "len",
    "isinstance",
    "print",
    "torch.numel",
    "torch.max",
    "torch.min",
    "range",
    "sum",
    "any",
    "all",
)
ZERO_FUNCTIONS = ("torch.zeros", "torch.zeros_like", "numpy.zeros", "numpy.zeros_like")
DIVISION_FUNCTIONS = (
    "torch.div",
    "torch.floor_divide",
    "torch.true_divide",
    "torch.bitwise_right_shift",
    "numpy.floor_divide",
    "numpy.right_shift",
    # `a // b` and `a >> b` as functions: operator.floordiv(a, b), operator.rshift(a, b)
    # and the in-place forms, which return the result as well.
    "operator.floordiv",
    "operator.ifloordiv",
    "operator.rshift",
    "operator.irshift",
    "operator.__floordiv__",
    "operator.__ifloordiv__",
    "operator.__rshift__",
    "operator.__irshift__",
)
# Divisions that floor only with rounding_mode="floor" or "trunc"; every other function
# with the division's row, a rule's own among them, is a floor division.
TRUE_DIVISIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})
TRUE_DIVISION_METHODS = frozenset({"div", "div_", "divide", "divide_"})
SHIFT_SUFFIXES = ("right_shift", "rshift", "rshift__")  # a rule's own `cupy.right_shift` too
CEIL_FUNCTIONS = ("cdiv", "triton.cdiv", "math.ceil")
CLAMP_FUNCTIONS = (
    "torch.clamp",
    "torch.clip",
    "torch.clamp_min",
    "numpy.clip",
    # In place: the input itself is clamped.
    "torch.clamp_",
    "torch.clip_",
    "torch.clamp_min_",
)
# Clamps written as two operands, max(x, k): the one that carries lengths is the value, the
# other the bound. min(x, k) is a clamp from above (no sanitizer).
BOUND_BY_OPERAND = (
    "torch.maximum",
    "torch.max",
    "max",
    "numpy.maximum",
    "min",
    "torch.min",
    "torch.minimum",
    "triton.language.maximum",
    "triton.language.minimum",
)
# Of those, the ones whose second argument, a Python integer (or `dim=`), is a dimension to
# reduce along: torch.max(x, 1) is a reduction, not max(x, 1).
DIM_REDUCTIONS = frozenset({"torch.max", "torch.min"})
# Truncations, a floor division when what they truncate is a true division (lengths are
# >= 0): `int(a / b)`, `torch.floor(a / b)`, `(a / b).int()`, `(a / b).to(torch.int32)`;
# of anything else the value itself. A rule lists the ones it counts under floor_division
# (floor_division_methods); their rows stay these.
TRUNCATION_FUNCTIONS = (
    "int",
    "math.floor",
    "math.trunc",
    "torch.floor",
    "torch.trunc",
    "numpy.floor",
    "numpy.trunc",
)
TRUNCATION_METHODS = ("floor", "floor_", "trunc", "trunc_", "int", "long", "to", "type")
# Of those, the ones that round down (the others round toward 0), by their last part.
FLOORING_TRUNCATIONS = frozenset({"floor", "floor_"})
DIVISION_METHODS = (
    *("floor_divide", "floor_divide_", "div", "div_", "divide", "divide_"),
    # `x // 4` and `x >> 8` as methods, and their in-place forms (`x //= 4`).
    *("__floordiv__", "__ifloordiv__", "bitwise_right_shift", "bitwise_right_shift_"),
    *("__rshift__", "__irshift__"),
)
# Of those, the ones that shift (by their ending).
SHIFT_METHOD_ENDINGS = ("right_shift", "right_shift_", "rshift__")
CLAMP_METHODS = ("clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_", "maximum")


# In-place operators as methods (``x.__irshift__(8)`` is ``x >>= 8``).
_IN_PLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in (
        [
            "add",
            "sub",
            "mul",
            "matmul",
            "truediv",
            "floordiv",
            "mod",
            "pow",
            "lshift",
            "rshift",
            "and",
            "xor",
            "or",
        ]
    )
)
# In-place calls that may change the tensor's shape, not only its values.
SHAPE_CHANGING = frozenset({"resize_", "resize_as_", "set_"})


# Trailing underscores that change no value: a tensor's bookkeeping.
_BOOKKEEPING = frozenset({"share_memory_", "detach_", "requires_grad_", "retain_grad_"})


def in_place(name: str) -> bool:
    """Whether a method or function of this name changes its tensor's values in place, by
    PyTorch's naming: a trailing underscore (``zero_``, ``scatter_``; not the
    ``operator`` module's, which avoid a keyword: ``operator.and_``, nor bookkeeping,
    ``detach_``), or an in-place operator (``__irshift__``; the ``operator`` module's
    ``isub`` and ``__isub__``)."""
    head, _, short = name.rpartition(".")
    if head == "operator":  # operator.isub, operator.__isub__
        return (short if short.startswith("__") else f"__{short}__") in _IN_PLACE_DUNDERS
    if short in _BOOKKEEPING:
        return False
    return (short.endswith("_") and not short.startswith("_")) or short in _IN_PLACE_DUNDERS


@dataclass(frozen=True, slots=True)
class Library:
    """The table one analysis uses: the known rows plus the names its rules declare."""

    functions: Mapping[str, Signature]
    methods: Mapping[str, Signature]

    def function(self, name: str) -> Signature | None:
        sig = self.functions.get(name)
        if name.rsplit(".", 1)[-1] == "cdiv" and (
            sig is None or sig.effect not in (LibEffect.CLAMP, LibEffect.AT_LEAST_ONE)
        ):
            return self.functions["cdiv"]  # any cdiv helper: vllm.utils.cdiv, a local one
        return sig


def library_for(names: Mapping[str, Iterable[str]]) -> Library:
    """The table with the rules' declared names (``names``: rule-table key -> names) added:
    a declared name takes its key's effect, a function whose result is >= 1 above all."""
    functions, methods = _functions(), _methods()
    declared = sorted(names.items(), key=lambda kv: kv[0] == "at_least_one")
    for key, listed in declared:
        effect = RULE_KEY_EFFECTS.get(key)
        if effect is None:
            continue
        table = methods if key in _METHOD_KEYS else functions
        truncations = TRUNCATION_METHODS if key in _METHOD_KEYS else TRUNCATION_FUNCTIONS
        for name in listed:
            if name in _OPERATORS:
                continue  # built-in forms are not calls
            if effect is LibEffect.FLOOR_DIVISION and name in truncations:
                continue  # a floor division only of a true division: the row above
            known = table.get(name)
            if (
                known is not None
                and known.effect is effect
                and effect is not LibEffect.AT_LEAST_ONE
            ):
                continue
            params = known.params if known is not None and known.effect is effect else None
            method = key in _METHOD_KEYS
            table[name] = Signature(effect, params) if params else _default(effect, method)
    return Library(functions, methods)


def _default(effect: LibEffect, method: bool = False) -> Signature:
    if effect is LibEffect.CLAMP:
        return _CLAMP
    if effect is LibEffect.FLOOR_DIVISION:
        return _DIVISION_METHOD if method else _DIVISION
    if effect is LibEffect.FILL:
        return _FULL
    return Signature(effect)
