"""Text as anima stores it in Markdown: one kind of line break, no control characters."""

import re
import unicodedata

# Line breaks other than \n that some readers (str.splitlines) would split on.
_BREAKS = re.compile(r"\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def text_lines(text: str) -> str:
    """`text` with every kind of line break made \\n and every other control character dropped
    (a tab stays)."""
    return _CONTROL.sub("", _BREAKS.sub("\n", text))


def without_format(text: str) -> str:
    """`text` without the format characters that show nothing (Unicode category Cf:
    zero-width spaces and joiners, bidi controls, the BOM)."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def visible(text: str) -> str:
    """`text` as it looks: NFKC (full-width and other compatibility forms made plain) without
    format characters, so that what hides behind them is seen: a heading after a zero-width
    space, a full-width ＃."""
    return without_format(unicodedata.normalize("NFKC", text))
