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
    return lang, written
