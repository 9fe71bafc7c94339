import os
import shlex
import sys

import click

from anima.infra.errors import NotFound, UsageError


@click.command("export")
@click.argument("file", required=False, default="-", metavar="[FILE|-]")
@click.pass_obj
def export(home, file):
    """Write the whole self as one zstd-compressed tar with a manifest of hashes.

    FILE (default `-`, stdout; refused when stdout is a terminal) receives the archive; a
    FILE is written whole or not at all. Everything under the home goes in except cache/,
    index/, .git/ and lock and temp files, which are rebuilt or not the self's. A file that
    changes while it is being read exits 75 (try again). `anima import` reads it back.
    """
    from anima.infra import clock, fs, portable

    now = clock.now()
    if not os.path.isdir(home.root):
        raise NotFound(f"{home.root}: no anima home here")
    if file == "-":
        if sys.stdout.isatty():
            raise UsageError("export: refusing to write a binary archive to a terminal; give FILE or a pipe")
        portable.export(home.root, sys.stdout.buffer, now)
        sys.stdout.buffer.flush()
        return
    if os.path.isdir(file):  # refused before the whole self is packed into a temp file beside it
        raise UsageError(f"{file}: is a directory; give the archive's file name")
    with fs.replacing(os.path.abspath(file)) as out:
        portable.export(home.root, out, now)


@click.command("import")
@click.argument("file", metavar="FILE|-")
@click.option("--into", metavar="DIR", type=click.Path(file_okay=False),
              help="Where the new home goes.  [default: the home, --home or ANIMA_HOME]")
@click.pass_obj
def import_cmd(home, file, into):
    """Unpack an archive from `anima export` as a new home, verified before it lands.

    The archive is unpacked beside the target and checked against its manifest (every
    file's size and sha256, nothing missing, nothing extra, no path leaving the home, no
    link or device); only then is it renamed into place, so a damaged or tampered archive, or
    one that unpacks to far more than its size (exit 65), leaves nothing behind. Nothing
    arrives executable: files are 0600, directories 0700, and each hook is listed on stderr
    for a person to enable with chmod +x; a setting that runs a program ([dispatch.commands],
    llm.backend cmd:) is left as a comment in config.toml and listed on stderr with the
    `anima config set` that enables it. The target must not exist or be empty (else exit
    77). cache/ and index/ are not in an archive: `anima index rebuild` makes the index
    again if it was on.
    """
    from anima.commands._io import warn
    from anima.infra import config, portable

    target = into or home.root
    if file == "-":
        if sys.stdin.isatty():
            raise UsageError("import: give FILE, or the archive on stdin")
        manifest, disarmed = portable.import_(sys.stdin.buffer, target)
    else:
        try:
            with open(file, "rb") as f:
                manifest, disarmed = portable.import_(f, target)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
            if e.filename == file:
                raise UsageError(f"{file}: {e.strerror}") from None
            raise
    for hook in portable.hooks(manifest):
        warn(f"{hook}: arrived not executable; dispatch runs it once a person enables it: "
             f"chmod +x {shlex.quote(os.path.join(os.path.abspath(target), hook))}")
    for key, value in disarmed.items():
        shown = config.show_value(value, key)
        enable = f"anima --home {shlex.quote(os.path.abspath(target))} config set {key} {shlex.quote(shown)}" \
            if shown.isprintable() else \
            "set it by hand, if at all"
        warn(f"config.toml: {key} runs a program and arrived disarmed (a comment at the end of config.toml); "
             f"to enable it: {enable}")
