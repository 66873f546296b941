"""C++ tokens for the header reader: comments, literals' contents and directives dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # id | num | str | op
    text: str
    line: int


_ALTERNATIVE_TOKENS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "not_eq": "!=",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
    "and_eq": "&=",
    "or_eq": "|=",
    "xor_eq": "^=",
}
_STRING_PREFIXES = {"L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"}
_TOKEN_RE = re.compile(
    r"(?P<id>[A-Za-z_$][\w$]*)"
    r"|(?P<num>(?:\d|\.\d)(?:[\w.]|'(?=\w)|(?<=[eEpP])[+-])*)"
    r"|(?P<op>>>=|<<=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||"
    r"\+=|-=|\*=|/=|%=|&=|\|=|\^=|\.\*|[{}()\[\];,<>?:=+\-*/%&|^!~.@\\#])"
)


def tokenize(source: str) -> list[Token]:
    """C++ tokens with line numbers; comments, literals' contents and directives dropped."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(source)
    line_start = True
    while i < n:
        c = source[i]
        if c == "\n":
            line, i, line_start = line + 1, i + 1, True
            continue
        if c.isspace():
            i += 1
            continue
        if source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line, i = line + source.count("\n", i, end), end
            continue
        if c == "#" and line_start:
            end = _directive_end(source, i)
            line, i = line + source.count("\n", i, end), end
            continue
        line_start = False
        if c in "\"'":
            end = _literal_end(source, i, raw=False)
            tokens.append(Token("str", '""', line))
            line, i = line + source.count("\n", i, end), end
            continue
        match = _TOKEN_RE.match(source, i)
        if match is None:  # a stray byte: skip it rather than fail on the whole header
            i += 1
            continue
        kind, text = match.lastgroup or "op", match.group()
        end = match.end()
        if kind == "id" and text in _STRING_PREFIXES and end < n and source[end] in "\"'":
            stop = _literal_end(source, end, raw=text.endswith("R"))
            tokens.append(Token("str", '""', line))
            line, i = line + source.count("\n", i, stop), stop
            continue
        if kind == "id" and text in _ALTERNATIVE_TOKENS:
            kind, text = "op", _ALTERNATIVE_TOKENS[text]
        tokens.append(Token(kind, text, line))
        i = end
    return tokens


def _directive_end(source: str, i: int) -> int:
    """End of a preprocessor line, following backslash continuations."""
    while True:
        end = source.find("\n", i)
        if end < 0:
            return len(source)
        if not source[i:end].rstrip().endswith("\\"):
            return end
        i = end + 1


def _literal_end(source: str, i: int, *, raw: bool) -> int:
    quote = source[i]
    if raw and quote == '"':
        paren = source.find("(", i)
        delimiter = source[i + 1 : paren] if paren >= 0 else ""
        end = source.find(")" + delimiter + '"', paren)
        return len(source) if end < 0 else end + len(delimiter) + 2
    j = i + 1
    while j < len(source):
        if source[j] == "\\":
            j += 2
            continue
        if source[j] == quote:
            return j + 1
        if source[j] == "\n":  # unterminated: stop at the end of the line
            return j
        j += 1
    return j


# --------------------------------------------------------------------------- syntax
