"""The dataflow: how length tensors move from a floor division or zero fill to a kernel call.

Every function is interpreted once over its LibCST tree with its parameters bound to
placeholders, giving a summary: what it returns, what it writes into its arguments, its
``self`` fields and module globals, and which sink calls its values reach. A value is a
set of *traces*: the steps a length took, each step annotated with what it does to the
lengths (an ``Op``). A trace is

* concrete: it starts at a source inside the analysed code (``x // c``, ``torch.zeros``);
* a placeholder: it starts at a parameter, a call's result, a field or a global whose
  contents are not known yet.

Placeholders are resolved only when a trace reaches a sink, so calls into other modules
cost nothing unless their results matter; while bodies are interpreted, only modules that
mention a sink are parsed (``allow_parse`` is set only while paths are resolved). A
parameter placeholder that reaches a sink makes the function a *forwarding sink* (a
wrapper) for that parameter; a function, field or global that holds the sink callable is a
*provider*: both names make other files worth analysing.

Soundness choices (documented for users in the README):
* every branch is followed and joined; ``return``/``raise`` end a branch, ``break`` and
  ``continue`` carry their state to the end or the head of the loop;
* loops run their body twice, enough for lengths that are divided or filled once;
* recursive functions see each other's partial summaries, then are interpreted again;
* a field's value is what the methods leave in it when they return, joined over methods,
  constructor arguments and subclasses;
* an unknown call returns its arguments' traces marked ``opaque`` (the SMT judge then says
  "unknown", still reported) unless it is a known clamp;
* a tensor allocated with ``torch.zeros`` and stored on ``self`` in a constructor is a
  buffer whose rows are defined by later writes, not a zero source by itself;
* padding fills ``buf[n:m] = 0`` (a start that is not 0) only matter together with other
  zero-able rows: on their own they are not reported;
* reductions (``sum``, ``max()``, ``item``, sizes) end a length's path.
"""

from __future__ import annotations

from zerolint.dataflow.analyzer import Analyzer
from zerolint.dataflow.frames import MAX_DEPTH, MAX_PARSES, FuncKey, SinkHit, Summary
from zerolint.dataflow.values import LIVE_KINDS, RawStep, Trace, Val

__all__ = [
    "LIVE_KINDS",
    "MAX_DEPTH",
    "MAX_PARSES",
    "Analyzer",
    "FuncKey",
    "RawStep",
    "SinkHit",
    "Summary",
    "Trace",
    "Val",
]
