"""`anima init`: lay out a home without ever overwriting what is there."""

import os

from anima.infra import config, fs
from anima.infra.home import GITIGNORE, LAYOUT, Home
from anima.self import blocks


def init(home: Home, lang: str | None, now: float, environ=os.environ) -> tuple[str, list[str]]:
    """Create whatever of the layout is missing (the blocks dated `now`); return the language
    used and what was created."""
    written = [d for d in (home.root, *(home.path(d) for d in LAYOUT)) if not os.path.isdir(d)]
    for d in LAYOUT:
        home.ensure(d)
    if lang is None:
        existing = config.load(home.config, environ) if os.path.lexists(home.config) else None
        lang = existing["core.lang"] if existing else config.detect_lang(environ)
    for path, text in ((home.config, config.render_default(lang=lang)), (home.path(".gitignore"), GITIGNORE)):
        if fs.create(path, text):
            written.append(path)
    written += blocks.init_blocks(home.blocks, lang, now)
    written += starters(home, lang, now)
    return lang, written


def starter(lang: str, name: str) -> str:
    from importlib import resources

    return resources.files("anima").joinpath("data", "self", lang, name).read_text("utf-8")


def starters(home: Home, lang: str, now: float) -> list[str]:
    """Her first state, self/state.md, and her first entry in now.md (her waking up, recorded
    as by "init": not a thought of hers that could decide anything), unless there is a state
    or a stream already (a stream that was ever written has a bookkeeping)."""
    from anima.self import state
    from anima.stream.now import Stream

    written = []
    if fs.create(state.path(home), starter(lang, "state.md")):
        written.append(state.path(home))
    stream = Stream(home)
    with stream.lock():
        if fs.status(stream.now_path) is None and fs.status(stream.book) is None:
            stream.append(starter(lang, "now.md"), "init", now, held=True)
            written.append(stream.now_path)
    return written
