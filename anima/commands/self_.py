import click

from anima.commands._io import json_option, out, out_json, read_input, warn
from anima.infra.errors import NotFound


def _complete_key(ctx, param, incomplete):
    from anima.self.blocks import KEYS

    return [k for k in KEYS if k.startswith(incomplete)]


def key_argument(required: bool = True):
    """A block key; checked by the domain (an unknown key is refused with exit 77, not 2)."""
    return click.argument("key", required=required, shell_complete=_complete_key)


def _block_json(block) -> dict:
    return {"key": block.key, "title": block.title, "locked": block.locked, "updated": block.updated,
            "chars": block.chars, "body": block.body}


@click.group()
def cli():
    """Read and change the six self blocks: who the agent is.

    Keys, in order: existence_anchor (locked), self_model, personality_baseline, direction,
    metacognition, autobiography_summary. Every previous version of a block is kept under
    self/blocks/.history/KEY/.
    """


@cli.command("get")
@key_argument(required=False)
@json_option("Print JSON: one object for KEY, else a list of all blocks.")
@click.pass_obj
def get(home, key, as_json):
    """Print all blocks as Markdown with headings, or the body of KEY."""
    from anima.self import blocks

    if key is not None:
        block = blocks.read(home.blocks, blocks.check_key(key))
        if block is None:
            raise NotFound(f"{key}: no such block yet; `anima init` writes the starter blocks")
        out_json(_block_json(block)) if as_json else out(block.body + "\n")
        return
    found = blocks.read_all(home.blocks)
    if as_json:
        out_json([_block_json(b) for b in found])
        return
    if not found:
        raise NotFound(f"no self blocks in {home.blocks}; run `anima init`")
    out("\n".join(f"# {b.title} ({b.key})\n\n{b.body}\n" for b in found))


@cli.command("set")
@key_argument()
@click.option("--force", is_flag=True,
              help="Change a locked block (existence_anchor); write a body that looks like private data.")
@click.option("--file", "file", metavar="F", help="Read the new body from F (`-` is stdin).  [default: stdin]")
@click.pass_obj
def set_(home, key, force, file):
    """Replace the body of KEY with the text on stdin (or --file F).

    Refused with exit 77, nothing written: an unknown or path-like key, an empty body, a
    body over self.block_max_chars, and without --force a locked block or a body that holds
    the user's private data (as a note would be refused for). The previous version is kept;
    an unchanged body writes nothing. Not UTF-8, or a control character other than a tab or
    a line break (a NUL, an escape): exit 65, nothing written.
    """
    from anima.infra import clock, config
    from anima.notes import privacy
    from anima.self import blocks

    blocks.check_key(key)
    cfg = config.load(home.config)
    cap = cfg["self.block_max_chars"]
    body = read_input(file, cap * 4 + 4096, f"self set {key}")
    try:
        blocks.write(home.blocks, key, body, force=force, max_chars=cap, lang=cfg["core.lang"], now=clock.now(),
                     private=privacy.settings(cfg))
    except blocks.Unchanged:
        warn(f"{key}: unchanged")


@cli.command("log")
@key_argument()
@json_option("Print NDJSON, one revision per line.")
@click.pass_obj
def log(home, key, as_json):
    """List the previous versions of KEY, newest first: REV, updated, characters, first line."""
    from anima.self import blocks

    blocks.check_key(key)
    for rev in reversed(blocks.revisions(home.blocks, key)):
        block = blocks.read_revision(home.blocks, key, rev)
        if as_json:
            out_json({"rev": rev, **_block_json(block)})
        else:
            first = block.body.split("\n", 1)[0]
            out(f"{rev}\t{block.updated}\t{block.chars}\t{first}\n")


@cli.command("revert")
@key_argument()
@click.argument("rev", type=int)
@click.option("--force", is_flag=True,
              help="Change a locked block (existence_anchor); write a body that looks like private data.")
@click.pass_obj
def revert(home, key, rev, force):
    """Make revision REV of KEY the current body again.

    The current version is kept in history first, so a revert can itself be reverted. The
    refusals of `self set` apply.
    """
    from anima.infra import clock, config
    from anima.notes import privacy
    from anima.self import blocks

    blocks.check_key(key)
    cfg = config.load(home.config)
    old = blocks.read_revision(home.blocks, key, rev)
    try:
        blocks.write(home.blocks, key, old.body, force=force, max_chars=cfg["self.block_max_chars"],
                     lang=cfg["core.lang"], now=clock.now(), private=privacy.settings(cfg))
    except blocks.Unchanged:
        warn(f"{key}: revision {rev} is the current body; nothing changed")


def _proposal_json(meta: dict, body: str) -> dict:
    return {**{k: meta.get(k) for k in ("id", "key", "status", "proposed", "decided", "by", "note", "evidence")},
            "body": body}


@cli.command("proposals")
@click.option("--all", "everything", is_flag=True, help="Also those already accepted or rejected.")
@json_option("Print NDJSON: one object per proposal, with the proposed body.")
@click.pass_obj
def proposals_(home, everything, as_json):
    """List the open proposals to change a block (written by `anima consolidate`).

    One line each, oldest first: ID, status, key, when proposed, the evidence; the
    proposed body is in self/proposals/ID.md (and in --json). Prints nothing when there
    are none.
    """
    from anima.self import proposals

    for meta, body in proposals.all_(home):
        if not everything and meta.get("status") != "open":
            continue
        if as_json:
            out_json(_proposal_json(meta, body))
        else:
            evidence = "; ".join(str(e) for e in meta.get("evidence") or [])
            out(f"{meta.get('id')}\t{meta.get('status')}\t{meta.get('key')}\t{meta.get('proposed')}\t"
                f"{' '.join(evidence.split())}\n")


def _decide(home, pid: str, accept: bool) -> None:
    from anima.infra import clock, config
    from anima.notes import privacy
    from anima.self import proposals

    cfg = config.load(home.config)
    proposals.decide(home, pid, accept, cfg["self.block_max_chars"], cfg["core.lang"], clock.now(),
                     privacy.settings(cfg))


@cli.command("accept")
@click.argument("id")
@click.pass_obj
def accept(home, id):
    """Make proposal ID's body the block's (a person's decision); the old version is kept.

    Exit 1: no such proposal. Exit 77, nothing written: the block is locked, the proposal
    is no longer open, the block changed since it was proposed, or the body holds the
    user's private data (`self set --force` is how a person writes it anyway).
    """
    _decide(home, id, True)


@cli.command("reject")
@click.argument("id")
@click.pass_obj
def reject(home, id):
    """Close proposal ID without changing the block; it is never proposed again.

    Exit 1: no such proposal; exit 77: it is no longer open.
    """
    _decide(home, id, False)
