"""The `anima` executable (the console script and `python -m anima`): the every-turn commands
served without click, else the click root.

A host runs `anima prompt` every turn, cron runs `anima tick` every minute and an agent's
tools run `anima recall` whenever it asks; importing click and the root group costs a prompt
or a tick several times its own work, and a recall a quarter of its time. So the console
script starts here: when the words name a command of FAST, that command's plain function is
tried first. It serves only what it is sure of (its common options, a warm cache) exactly as
the click command would, byte for byte, exit status and files alike, and otherwise returns
None before it has changed anything, and anima.cli, the one click root, runs as ever.
ANIMA_FAST=0 (and ANIMA_DEBUG=1) always take the click path. See anima(1), ENVIRONMENT.

To serve another command fast: write `run(home, args) -> int | None` for it (anima.commands.fast
has the option parser and the guard that ends a command as anima.cli does), and add one line
to FAST. `home` is the --home given (None: ANIMA_HOME, else ~/.anima), `args` the words after
the command's name; return its exit status, or None to leave it to click.
"""

import os
import sys

# command name -> "module:function", imported only when that command is run
FAST = {
    "prompt": "anima.commands.fast:prompt",
    "recall": "anima.commands.fast:recall",
    "tick": "anima.commands.fast:tick",
}


def fast(args: list[str]) -> int | None:
    """The exit status of the command `args` names when its fast path served it, else None."""
    home, i = None, 0
    while i < len(args) and (args[i] == "--home" or args[i].startswith("--home=")):  # the root's one option
        if args[i] == "--home":
            if i + 1 == len(args):
                return None
            home, i = args[i + 1], i + 2
        else:
            home, i = args[i][len("--home="):], i + 1
        if not home or home.startswith("-"):
            return None
    if i == len(args) or args[i] not in FAST:
        return None
    try:  # an argument or ANIMA_HOME that is not UTF-8: click says so (65)
        for arg in args:
            arg.encode("utf-8")
        if home is None:
            os.environ.get("ANIMA_HOME", "").encode("utf-8")
    except UnicodeEncodeError:
        return None
    module, name = FAST[args[i]].split(":")
    return getattr(__import__(module, fromlist=[name]), name)(home, args[i + 1:])


def main():
    if os.environ.get("ANIMA_FAST") != "0" and os.environ.get("ANIMA_DEBUG") != "1":
        try:
            code = fast(sys.argv[1:])
        except KeyboardInterrupt:  # nothing is written before a fast path serves: as click ends a Ctrl-C
            sys.stderr.write("\nAborted!\n")
            return 1
        if code is not None:
            return code
    from anima import cli

    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
