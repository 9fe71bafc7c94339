"""Write anima/data/lookalikes.json: each character that Unicode's confusables (UTS #39) name
as a look-alike of one other character, and that prototype ("а" Cyrillic -> "a", "ι" -> "i").
Look-alikes of a sequence ("m" -> "rn") are left out: a text keeps its length, so the echo
guard's runs of twelve characters stay twelve of theirs.

The data is confusable_homoglyphs' copy of confusables.txt, which lists each pair both ways;
a character is a source when its only look-alike is a prototype that others look like too,
or, for a pair that looks only like each other, when it is the later code point. The table is
generated so that anima need not load the whole data set (900 kB) on every turn; the suite
checks it against the installed package (tests/test_text.py).

    python scripts/lookalikes.py [OUT]
"""

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "anima" / "data" / "lookalikes.json"


def table() -> dict[str, str]:
    from confusable_homoglyphs import confusables

    data = {k: [h["c"].replace("\u200e", "") for h in v] for k, v in confusables.confusables_data.items()}
    out = {}
    for ch, alike in sorted(data.items()):
        if len(ch) != 1 or len(alike) != 1 or len(alike[0]) != 1 or alike[0] == ch:
            continue
        proto = alike[0]
        if data.get(proto) == [ch] and ord(proto) > ord(ch):
            continue  # a pair: the earlier code point is the prototype
        out[ch] = proto
    return out


def text() -> str:
    return json.dumps(table(), ensure_ascii=False, sort_keys=True, indent=0) + "\n"


if __name__ == "__main__":
    Path(sys.argv[1] if len(sys.argv) > 1 else OUT).write_text(text(), encoding="utf-8")
