"""Text as anima stores it in Markdown: one kind of line break, no control characters."""

import re

# Line breaks other than \n that some readers (str.splitlines) would split on.
_BREAKS = re.compile(r"\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def text_lines(text: str) -> str:
    """`text` with every kind of line break made \\n and every other control character dropped
    (a tab stays)."""
    return _CONTROL.sub("", _BREAKS.sub("\n", text))



def control_at(text: str) -> int | None:
    """Where the first control character that text_lines drops is in `text`, or None."""
    found = _CONTROL.search(text)
    return found.start() if found else None


def undecodable(value: str) -> str | None:
    """`value`, a string from the system (argv, the environment), shown with its undecodable
    bytes as \\xNN when it is not UTF-8 text; None when it is. Python hands such bytes over as
    lone surrogates (surrogateescape), which no UTF-8 file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte stands for
            return value.encode("utf-8", "backslashreplace").decode("ascii")
    return None
