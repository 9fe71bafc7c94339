"""JSON read one way everywhere: RFC 8259 JSON and nothing Python's json module adds to it.

Python's json.loads takes NaN, Infinity and -Infinity (not JSON: written back they make a
file no other reader parses), turns 1e999 into infinity, hands a lone surrogate escape such
as "\\ud800" over as a string no UTF-8 file can hold, and recurses once per level of nesting
until the interpreter's stack gives out. Here each of these is refused as not JSON: a
NotJSON, a ValueError like json's own (with .msg), so that a caller's `except ValueError`
keeps saying "not valid JSON (...)" for all of them.
"""

import json
import re

# Arrays and objects inside each other. anima's own documents nest a handful of levels and a
# host's payload rarely a dozen; far below the interpreter's stack, whatever walks them later.
MAX_DEPTH = 100
_LONE = re.compile(r"\\u[dD][89a-fA-F]")  # a surrogate escape: the parsed strings are checked


class NotJSON(ValueError):
    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg


def _constant(name: str):
    raise NotJSON(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotJSON(f"{text} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)


def loads(text: str | bytes):
    """The value of the JSON document `text` (bytes are decoded as UTF-8); NotJSON or
    json.JSONDecodeError (both ValueError) when it is not one."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise NotJSON(f"not valid UTF-8 (byte {e.start})") from None
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise NotJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    _bounded(text, value)
    return value


def raw_decode(text: str, start: int = 0) -> tuple:
    """(value, end) of the JSON value at `start` of `text`, as json.JSONDecoder.raw_decode."""
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise NotJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    _bounded(text[start:end], value)
    return value, end


def _bounded(text: str, value) -> None:
    """Check `value`, parsed from `text`, only when the text could hold too deep a nesting or a
    surrogate escape: for most documents three quick scans of the text are all it costs."""
    if text.count("[") + text.count("{") > MAX_DEPTH or ("\\u" in text and _LONE.search(text)):
        _check(value)


def _check(value) -> None:
    """Refuse nesting beyond MAX_DEPTH and strings with a lone surrogate (iteratively: no
    recursion for a deep value)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise NotJSON(f"nested deeper than {MAX_DEPTH} levels")
            for key, sub in item.items():
                _text(key)
                stack.append((sub, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise NotJSON(f"nested deeper than {MAX_DEPTH} levels")
            stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, str):
            _text(item)


def _text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise NotJSON(f"a lone surrogate \\u{ord(s[e.start]):04x} is no character") from None


def dumps(value, **kwargs) -> str:
    """`value` as JSON text (UTF-8 as it is, never NaN or Infinity: a ValueError instead)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, **kwargs)
