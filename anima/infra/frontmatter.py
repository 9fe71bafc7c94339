"""Front matter: the `---` fenced block of fields at the top of a Markdown file of anima's
(blocks, autobiography entries, proposals), parsed by one reader.

anima writes a field a line, `key: VALUE` with VALUE as JSON (which YAML reads as it is), and
reads such a block without a YAML parser; a block a person edited into other YAML is read by
the real one. A block that is not a mapping, does not close, or is not YAML is an error
naming the file, never "repaired".
"""

import json
import re

from anima.infra import jsontext
from anima.infra.errors import DataError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse(text: str, path: str) -> tuple[dict, str] | None:
    """(fields, the text after the block) of a file that starts with front matter, else None."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    except StopIteration:
        raise DataError(f"{path}: front matter opened with '---' is never closed") from None
    meta = _json_lines(lines[1:end])
    if meta is None:
        import yaml

        try:
            meta = yaml.safe_load("\n".join(lines[1:end])) or {}
        except yaml.YAMLError as e:
            where = getattr(e, "problem_mark", None)
            at = f" at line {where.line + 2}" if where else ""
            raise DataError(f"{path}: front matter is not valid YAML{at}") from None
        except Exception as e:  # noqa: BLE001
            # PyYAML's own constructors fail with whatever Python raises: ValueError for
            # 2026-02-30, AttributeError for a bad !!timestamp, RecursionError for [[[...]]]
            # a few hundred deep. A file a person edited is bad data, not a bug in anima.
            raise DataError(f"{path}: front matter is not valid YAML ({_why(e)})") from None
        _bounded(meta, path)
    if not isinstance(meta, dict):
        raise DataError(f"{path}: front matter must be a mapping of fields")
    return meta, "\n".join(lines[end + 1:])


# Values in a block's front matter: a handful of fields, a list or two. YAML aliases let a few
# lines stand for billions of values (each alias is the whole anchored value again), which
# whatever walks the fields later (rendering, JSON, a doctor) would expand.
MAX_VALUES = 10_000


def _why(e: Exception) -> str:
    if isinstance(e, RecursionError):
        return f"nested deeper than {jsontext.MAX_DEPTH} levels"
    if isinstance(e, ValueError) and str(e):  # Python's word for the value: "day is out of range for month"
        return str(e).split("\n")[0]
    return "a value YAML cannot construct"


def _bounded(meta, path: str) -> None:
    """Refuse fields nested deeper than JSON may be, or more values than a block has (counted
    as a reader walks them: an alias as often as it is used); iteratively, so that no depth
    costs stack."""
    stack, seen = [(meta, 1)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise DataError(f"{path}: front matter is not valid YAML (more than {MAX_VALUES} values)")
        if isinstance(item, (dict, list, set, tuple)):
            if depth > jsontext.MAX_DEPTH:
                raise DataError(f"{path}: front matter is not valid YAML (nested deeper than "
                                f"{jsontext.MAX_DEPTH} levels)")
            values = [*item.keys(), *item.values()] if isinstance(item, dict) else list(item)
            stack.extend((v, depth + 1) for v in values)


def document(text: str, path: str, what: str) -> tuple[dict, str]:
    """(fields, body without blank lines at either end) of a file that must have front
    matter (`what` it is, for the error)."""
    found = parse(text, path)
    if found is None:
        raise DataError(f"{path}: {what} starts with '---' front matter")
    return found[0], found[1].strip("\n")


def _json_lines(lines: list[str]) -> dict | None:
    """The block as anima writes it (`key: JSON` a line); None when it is anything else."""
    meta = {}
    for line in lines:
        key, sep, value = line.partition(": ")
        if not sep or not _KEY.fullmatch(key):
            return None
        try:
            meta[key] = jsontext.loads(value)
        except ValueError:
            return None
    return meta


def render(meta: dict, body: str) -> str:
    """The file: a field a line, each value as JSON, then the body ending with one line break."""
    head = ["---"] + [f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in meta.items()] + ["---"]
    return "\n".join(head) + "\n" + body.rstrip("\n") + "\n"
