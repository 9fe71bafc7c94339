"""self/state.md: how I am now (mood, energy, what I am doing, what I care about), in my words.

A person sets it (`anima state set`), so does her own decision (dispatch's state.update);
internalize and consolidate read it.
"""

from anima.infra import fs
from anima.infra.errors import NotFound, Refused
from anima.infra.text import text_lines


def path(home) -> str:
    return home.path("self", "state.md")


def read(home) -> str:
    text = fs.read_text(path(home))
    if text is None:
        raise NotFound("no state yet: `anima state set TEXT` writes self/state.md")
    return text


def write(home, text: str) -> None:
    body = text_lines(text).strip("\n")
    if not body.strip():
        raise Refused("empty state: nothing written")
    fs.atomic_write(path(home), body + "\n")
