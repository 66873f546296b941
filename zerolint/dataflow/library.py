"""What torch, numpy and the builtins do to lengths, by name (views, reductions, ...).

The rule files name sources and sanitizers; these tables are the rest of the library
knowledge: calls that keep the values (views, copies), join them (concatenations), make
new ones (constants), or end a length's path (reductions, sizes).
"""

from __future__ import annotations

import libcst as cst

from zerolint.model import OpKind

# Operators that floor-divide the lengths, written `a // b` or `a //= b`: (op kind, note).
DIVISIONS: dict[type, tuple[OpKind, str]] = {
    cst.FloorDivide: (OpKind.FLOORDIV, "floor division"),
    cst.FloorDivideAssign: (OpKind.FLOORDIV, "floor division"),
    cst.RightShift: (OpKind.RSHIFT, "right shift"),
    cst.RightShiftAssign: (OpKind.RSHIFT, "right shift"),
}
# The name a rule's [sources] gives each operator (rules.SOURCE_KEYS).
OPERATOR_NAMES = {OpKind.FLOORDIV: "//", OpKind.RSHIFT: ">>"}

VIEW_METHODS = frozenset(
    {
        "unsqueeze",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "to",
        "int",
        "long",
        "contiguous",
        "clone",
        "expand",
        "expand_as",
        "narrow",
        "view_as",
        "reshape_as",
        "permute",
        "transpose",
        "t",
        "detach",
        "cuda",
        "cpu",
        "type",
        "type_as",
        "select",
        "index_select",
        "repeat",
        "repeat_interleave",
        "tile",
        "flip",
        "roll",
        "unflatten",
        "movedim",
        "as_strided",
        "pin_memory",
        "tolist",
        "numpy",
        "short",
        "float",
        "double",
        "half",
        "bfloat16",
        "unbind",
        "split",
        "chunk",
        "tensor_split",
        "ravel",
        "swapaxes",
        "contiguous_",
        "mT",
        "T",
        "gather",
        "take",
        "masked_select",
        "copy",
        "astype",
        "squeeze_",
        "unsqueeze_",
    }
)
VIEW_FUNCTIONS = frozenset(
    {
        "torch.unsqueeze",
        "torch.reshape",
        "torch.flatten",
        "torch.squeeze",
        "torch.narrow",
        "torch.clone",
        "torch.as_tensor",
        "torch.tensor",
        "torch.asarray",
        "torch.select",
        "torch.index_select",
        "torch.repeat_interleave",
        "torch.flip",
        "torch.roll",
        "torch.permute",
        "torch.transpose",
        "torch.t",
        "torch.movedim",
        "torch.ravel",
        "torch.from_numpy",
        "torch.atleast_1d",
        "torch.atleast_2d",
        "torch.gather",
        "torch.take",
        "torch.unbind",
        "torch.split",
        "torch.chunk",
        "numpy.asarray",
        "numpy.array",
        "list",
        "tuple",
        "torch.Tensor",
        "torch.IntTensor",
        "torch.LongTensor",
        "torch.detach",
        "copy.copy",
        "copy.deepcopy",
    }
)
CONCAT_FUNCTIONS = frozenset(
    {
        "torch.cat",
        "torch.concat",
        "torch.concatenate",
        "torch.stack",
        "torch.hstack",
        "torch.vstack",
        "torch.column_stack",
        "numpy.concatenate",
        "numpy.stack",
    }
)
# Tensors whose values do not come from their arguments' values.
CONSTANT_FUNCTIONS = frozenset(
    {
        "torch.ones",
        "torch.ones_like",
        "torch.empty",
        "torch.empty_like",
        "torch.arange",
        "torch.randint",
        "torch.rand",
        "torch.randn",
        "torch.eye",
        "torch.empty_strided",
    }
)
REDUCTIONS = frozenset(
    {
        "sum",
        "max",
        "min",
        "item",
        "numel",
        "size",
        "dim",
        "stride",
        "mean",
        "prod",
        "any",
        "all",
        "argmax",
        "argmin",
        "nonzero",
        "count_nonzero",
        "element_size",
        "data_ptr",
        "storage_offset",
        "is_contiguous",
        "__len__",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "equal",
        "isnan",
    }
)
# Python's max and min of a scalar and a constant bound the scalar (``r = max(ratio, 1)``).
BOUND_FUNCTIONS = {
    "max": "max",
    "builtins.max": "max",
    "triton.language.maximum": "max",
    "min": "min",
    "builtins.min": "min",
    "triton.language.minimum": "min",
}
SHAPE_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "layout",
        "nbytes",
        "itemsize",
        "requires_grad",
        "grad",
        "names",
    }
)
ARITH_METHODS = {
    "add": "add",
    "add_": "add",
    "sub": "sub",
    "sub_": "sub",
    "subtract": "sub",
    "mul": "mul",
    "mul_": "mul",
    "multiply": "mul",
    "neg": "neg",
    "neg_": "neg",
    "negative": "neg",
}
BUILTIN_NAMES = frozenset(
    {
        "int",
        "float",
        "max",
        "min",
        "len",
        "range",
        "getattr",
        "setattr",
        "isinstance",
        "print",
        "list",
        "tuple",
        "dict",
        "set",
        "sorted",
        "zip",
        "enumerate",
        "abs",
        "sum",
        "bool",
        "str",
        "type",
        "super",
        "iter",
        "next",
        "map",
        "filter",
        "any",
        "all",
        "round",
        "divmod",
        "hasattr",
        "id",
        "repr",
        "callable",
        "object",
        "reversed",
        "vars",
        "format",
    }
)
