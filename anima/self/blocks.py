"""The self layer: six blocks, one Markdown file each, every previous version kept.

A block file is YAML front matter (key, title, locked, updated) and a Markdown body. The
front matter is written by anima in a fixed order; a hand-edited file is read with a real
YAML parser and, if broken, reported by name and never overwritten.
"""

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from anima.infra import clock, frontmatter, fs
from anima.infra.errors import DataError, NotFound, Refused
from anima.infra.text import data, plain

KEYS = (
    "existence_anchor",
    "self_model",
    "personality_baseline",
    "direction",
    "metacognition",
    "autobiography_summary",
)
LOCKED_BY_DEFAULT = frozenset({"existence_anchor"})
TITLES = {
    "en": {
        "existence_anchor": "Existence anchor",
        "self_model": "Self-model",
        "personality_baseline": "Personality baseline",
        "direction": "Direction",
        "metacognition": "Metacognition",
        "autobiography_summary": "Autobiography summary",
    },
    "zh": {
        "existence_anchor": "存在锚点",
        "self_model": "自我模型",
        "personality_baseline": "人格基线",
        "direction": "方向意图",
        "metacognition": "元认知",
        "autobiography_summary": "自传概括",
    },
}
_REV_FILE = re.compile(r"^([0-9]+)\.md$")


@dataclass
class Block:
    key: str
    title: str
    locked: bool
    updated: str
    body: str
    extra: dict = field(default_factory=dict)  # front matter fields a person added; kept as is

    @property
    def chars(self) -> int:
        return len(self.body)


def check_key(key: str) -> str:
    if "/" in key or "\\" in key or "\0" in key or key.startswith("."):
        raise Refused(f"{key!r} is not a block key: it looks like a path; keys: {', '.join(KEYS)}")
    if key not in KEYS:
        raise Refused(f"unknown block key {key!r}; keys: {', '.join(KEYS)}")
    return key


def block_path(blocks_dir: str, key: str) -> str:
    return os.path.join(blocks_dir, f"{check_key(key)}.md")


def history_dir(blocks_dir: str, key: str) -> str:
    return os.path.join(blocks_dir, ".history", check_key(key))


def parse(text: str, key: str, path: str) -> Block:
    """Read a block file; a file without front matter is all body."""
    found = frontmatter.parse(text, path)
    meta, body = found if found is not None else ({}, text)
    meta = dict(meta)
    if meta.pop("key", key) != key:
        raise DataError(f"{path}: front matter names a different key than the file")
    title = meta.pop("title", TITLES["en"][key])
    locked = meta.pop("locked", key in LOCKED_BY_DEFAULT)
    updated = meta.pop("updated", "")
    if not isinstance(title, str) or not title.strip():
        raise DataError(f"{path}: front matter 'title' must be a non-empty string")
    if not isinstance(locked, bool):
        raise DataError(f"{path}: front matter 'locked' must be true or false")
    if isinstance(updated, datetime):
        updated = updated.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Block(key, title.strip(), locked, str(updated or ""), normalise(body), meta)


def normalise(body: str) -> str:
    return body.strip("\n").rstrip()


def render(block: Block) -> str:
    head = [
        "---",
        f"key: {block.key}",
        f"title: {json.dumps(block.title, ensure_ascii=False)}",
        f"locked: {'true' if block.locked else 'false'}",
        f"updated: {json.dumps(block.updated)}",
    ]
    head += [f"{name}: {json.dumps(value, ensure_ascii=False, default=str)}" for name, value in block.extra.items()]
    return "\n".join(head) + "\n---\n" + block.body + "\n"


def read(blocks_dir: str, key: str) -> Block | None:
    path = block_path(blocks_dir, key)
    text = fs.read_text(path)
    return None if text is None else parse(text, key, path)


def read_all(blocks_dir: str) -> list[Block]:
    """The blocks that exist, in canonical order."""
    return [b for b in (read(blocks_dir, key) for key in KEYS) if b is not None]


def revisions(blocks_dir: str, key: str) -> list[int]:
    """Numbers of the stored previous versions, oldest first."""
    try:
        names = fs.listdir(history_dir(blocks_dir, key))
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(_REV_FILE.match, names) if m)


def read_revision(blocks_dir: str, key: str, rev: int) -> Block:
    path = os.path.join(history_dir(blocks_dir, key), f"{rev}.md")
    text = fs.read_text(path)
    if text is None:
        raise NotFound(f"{key}: no revision {rev}; `anima self log {key}` lists them")
    return parse(text, key, path)


def write(blocks_dir: str, key: str, body: str, *, force: bool, max_chars: int, lang: str, now: float,
          private: dict, expect=None) -> int | None:
    """Make `body` the block's body, updated at `now`; keep the previous version in history.

    Returns the revision number the previous version was stored as, or None when there was
    no previous version. Raises Refused (nothing written) for an empty body, a body over the
    cap, and without force a body holding the user's private data (anima.notes.privacy, with
    the settings `private`) or a locked block; raises Unchanged (nothing written) for the same body.
    `expect(old_body)`, checked under the block's lock, may raise to refuse a write whose
    premise (the body it was made against) no longer holds.
    """
    path = block_path(blocks_dir, key)
    body = checked_body(key, body, max_chars)
    if not force:  # refuse before even the lock file is created; the lock is checked again under it
        refuse_private(key, body, private)
        _refuse_locked(read(blocks_dir, key), key)
    with fs.locked(path, what=f"block {key}"):
        old_text = fs.read_text(path)
        old = None if old_text is None else parse(old_text, key, path)
        locked = old.locked if old else key in LOCKED_BY_DEFAULT
        if not force:
            _refuse_locked(old, key)
        if expect is not None:
            expect(old.body if old else None)
        if old is not None and old.body == body:
            raise Unchanged(key)
        rev = None
        if old_text is not None:
            revs = revisions(blocks_dir, key)
            kept = fs.read_text(os.path.join(history_dir(blocks_dir, key), f"{revs[-1]}.md")) if revs else None
            if kept == old_text:  # a write killed after keeping it: the version is kept once
                rev = revs[-1]
            else:
                rev = (revs[-1] if revs else 0) + 1
                fs.atomic_write(os.path.join(fs.ensure_dir(history_dir(blocks_dir, key)), f"{rev}.md"), old_text)
        new = Block(key, old.title if old else TITLES[lang][key], locked, clock.iso(now), body,
                    old.extra if old else {})
        fs.atomic_write(path, render(new))
    return rev


def checked_body(key: str, body: str, max_chars: int) -> str:
    """`body` as a block keeps it (normalised), or Refused: empty, or over the cap."""
    body = normalise(plain(body, f"block {key}"))
    if not body.strip():
        raise Refused(f"{key}: refusing an empty body")
    if len(body) > max_chars:
        raise Refused(f"{key}: body has {len(body)} characters, over the cap of {max_chars} (self.block_max_chars)")
    return body


def refuse_private(key: str, body: str, private: dict) -> None:
    """Refused if `body` holds the user's private data: a block is about her, as a note is
    (anima.notes.privacy, with the settings `private`)."""
    from anima.notes import privacy

    privacy.refuse(body, f"{key}: refusing a body", "a block is about me, not the user's private data; "
                   "--force writes it anyway", **private)


def _refuse_locked(block: Block | None, key: str) -> None:
    if (block.locked if block else key in LOCKED_BY_DEFAULT):
        raise Refused(f"{key}: block is locked; use --force to change it")


class Unchanged(Exception):
    """The new body equals the current one: nothing to write."""


def starter_body(lang: str, key: str) -> str:
    return data(f"blocks/{lang}/{key}.md")


def init_blocks(blocks_dir: str, lang: str, now: float) -> list[str]:
    """Write the six starter blocks that do not exist yet; return the paths written."""
    written = []
    for key in KEYS:
        path = block_path(blocks_dir, key)
        block = Block(key, TITLES[lang][key], key in LOCKED_BY_DEFAULT, clock.iso(now),
                      normalise(starter_body(lang, key)))
        if fs.create(path, render(block)):
            written.append(path)
    return written
