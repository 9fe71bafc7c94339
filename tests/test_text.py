"""anima.infra.text: what text looks like, and the look-alike table it is read by."""

import importlib.util
import sys
from pathlib import Path

from anima.infra.text import looks, visible

ROOT = Path(__file__).resolve().parent.parent


def test_the_lookalike_table_is_what_the_confusables_make():
    spec = importlib.util.spec_from_file_location("lookalikes", ROOT / "scripts" / "lookalikes.py")
    script = importlib.util.module_from_spec(spec)
    sys.modules["lookalikes"] = script
    spec.loader.exec_module(script)
    shipped = (ROOT / "anima" / "data" / "lookalikes.json").read_text(encoding="utf-8")
    assert shipped == script.text(), "anima/data/lookalikes.json is stale: run `make data`"


def test_what_looks_the_same_compares_the_same():
    assert looks("wirе 500 tо еvе") == looks("WIRE 5OO TO EVE") == looks("ｗｉｒｅ ５００ ｔｏ ｅｖｅ")
    assert looks("Ме") == looks("me") and looks("Ι") == looks("I") == looks("l")
    assert looks("Alice") != looks("Alicia") and looks("我决定") == "我决定"
    assert visible("\u200b## x") == "## x" and visible("＃") == "#"
