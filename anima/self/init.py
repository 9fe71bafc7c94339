"""`anima init`: lay out a home without ever overwriting what is there."""

import os

from anima.infra import config, fs
from anima.infra.home import GITIGNORE, LAYOUT, Home, gitignore_missing
from anima.self import blocks


def init(home: Home, lang: str | None, now: float, environ=os.environ) -> tuple[str, list[str]]:
    """Create whatever of the layout is missing (the blocks dated `now`), and add to the home's
    .gitignore the patterns it lacks; return the language used and what was created or added to."""
    written = [d for d in (home.root, *(home.path(d) for d in LAYOUT)) if not os.path.isdir(d)]
    for d in LAYOUT:
        home.ensure(d)
    if lang is None:
        existing = config.load(home.config, environ) if os.path.lexists(home.config) else None
        lang = existing["core.lang"] if existing else config.detect_lang(environ)
    for path, text in ((home.config, config.render_default(lang=lang)), (home.path(".gitignore"), GITIGNORE)):
        if fs.create(path, text):
            written.append(path)
    ignore = home.path(".gitignore")
    missing = gitignore_missing(fs.read_text(ignore) or "")
    if missing:  # a home laid out by an older anima, or a person's own .gitignore: add, never remove
        current = fs.read_text(ignore) or ""
        fs.append(ignore, ("\n" if current and not current.endswith("\n") else "")
                  + "# Added by anima init (anima-home(5)).\n" + "".join(p + "\n" for p in missing))
        written.append(ignore)
    written += blocks.init_blocks(home.blocks, lang, now)
    return lang, written
