"""Forked workers that end with the command that forked them.

A worker whose command is killed (kill -9: no cleanup runs) has nobody left to answer and may
hold what the command held (a rebuild's lock): it ends by itself, within a tenth of a second,
whatever it is doing. Used by `anima index rebuild`'s shards and a shared `recall --batch`.
"""


def end_with(parent: int) -> None:
    """End this process (exit 1) once `parent`, the pid that forked it, is gone: a daemon
    thread watches, so the work itself need not look."""
    import threading

    threading.Thread(target=_watch, args=(parent,), daemon=True).start()


def _watch(parent: int) -> None:
    import os
    import time

    while os.getppid() == parent:
        time.sleep(0.1)
    os._exit(1)
