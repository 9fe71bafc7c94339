"""`anima init`: lay out a home without ever overwriting what is there."""

import os

from anima import blocks, config, fs
from anima.home import GITIGNORE, LAYOUT, Home


def detect_lang(environ) -> str:
    """The language a new home starts in: ANIMA_LANG, else the locale, else English."""
    if environ.get("ANIMA_LANG") in config.LANGS:
        return environ["ANIMA_LANG"]
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if environ.get(var):
            return "zh" if environ[var].lower().startswith("zh") else "en"
    return "en"


def init(home: Home, lang: str | None, environ=os.environ) -> tuple[str, list[str]]:
    """Create whatever of the layout is missing; return the language used and the files written."""
    fs.ensure_dir(home.root)
    for d in LAYOUT:
        home.ensure(d)
    written = []
    if lang is None:
        existing = config.load(home.config, environ) if os.path.lexists(home.config) else None
        lang = existing["core.lang"] if existing else detect_lang(environ)
    for path, text in ((home.config, config.render_default(lang=lang)), (home.path(".gitignore"), GITIGNORE)):
        if fs.create(path, text):
            written.append(path)
    written += blocks.init_blocks(home.blocks, lang)
    return lang, written
