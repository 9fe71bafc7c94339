"""The recall.sources that yield nothing: globs whose files give no turn, or that match no file.

A host whose transcripts anima cannot read (a format it does not know, a path that moved)
would otherwise only make recall find less, silently. `anima recall` says so on stderr, one
line a source, and `anima doctor` WARNs with the count per source (anima-transcripts(5)).
A source is named when none of its files gave a turn; "format not recognised" when no line
of any of them decided a format (anima.recall.formats).
"""

from anima.recall import formats, sources


def report(home, cfg, read: dict) -> list[str]:
    """One line per recall.sources glob that yields no turn. `read`: {path: (turns, format)}
    of the files read (a file not in it gave no turn)."""
    out = []
    for pattern, files in sources.by_source(home, cfg):
        if not files:
            out.append(f"recall.sources {pattern}: no file found")
            continue
        got = [read.get(p, (0, "")) for p in files]
        if any(turns for turns, _ in got):
            continue
        n = len(files)
        why = " (format not recognised)" if all(fmt == formats.UNKNOWN for _, fmt in got) else ""
        out.append(f"recall.sources {pattern}: {n} file{'s' if n != 1 else ''}, no turn read{why}")
    return out


def of_index(idx, read: dict) -> None:
    """Add to `read` what the index holds of the files it covers now."""
    current = idx.plan.current
    for path, turns, fmt in idx.con.execute("SELECT path, turns, format FROM files"):
        if path in current:
            read[path] = (turns, fmt)


def survey(home, cfg) -> list[str]:
    """`report` after a pass that only counts (summarised files are not opened)."""
    from anima.recall import prescan

    read: dict = {}
    for _ in prescan.scan(home, cfg, [], lambda message: None, read=read):
        pass
    return report(home, cfg, read)
