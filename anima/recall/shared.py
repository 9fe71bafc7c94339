"""A batch of work shared among forked processes (recall.jobs, `anima recall --jobs`).

The batch's items are cut into consecutive parts, and `jobs` forked processes answer them
(process k takes parts k, k + jobs, ...); the answers come back in the parts' order, read from
each process's pipe as they come. A part whose process ended without answering it (killed)
is answered by the command itself; a process ends once the command is gone, killed or not.
It knows nothing of what a part is: the caller's `answer` does (anima.recall.search.run).
"""


def run(answer, n: int, jobs: int, least: int = 1) -> list:
    """answer(start, end) for consecutive spans of range(n), each of at least `least` items
    but the last, from `jobs` processes, in order. What `answer` raises in a process is
    raised here (a bug, or anima's own error)."""
    import multiprocessing
    import os
    import sys
    from multiprocessing import connection

    size = max(least, -(-n // (2 * jobs)))  # (2 parts a process: they end nearer together)
    spans = [(i, min(i + size, n)) for i in range(0, n, size)]
    ctx = multiprocessing.get_context("fork")  # (the processes inherit `answer`: nothing is pickled)
    workers = []
    sys.stdout.flush()  # (a child would write out again what is buffered)
    sys.stderr.flush()
    try:
        for k in range(min(jobs, len(spans))):
            recv, send = ctx.Pipe(duplex=False)
            worker = ctx.Process(target=_worker, args=(answer, spans[k::jobs], send, os.getpid()), daemon=True)
            worker.start()
            send.close()
            workers.append((worker, recv, spans[k::jobs]))
        answered = {}
        waiting = {recv: list(mine) for _, recv, mine in workers}
        while waiting:  # (as they come: a worker whose pipe is full waits until it is read)
            for recv in connection.wait(list(waiting)):
                try:
                    got = recv.recv()
                except (EOFError, OSError):  # (it ended before this part, or in the middle of sending it)
                    del waiting[recv]
                    continue
                if isinstance(got, BaseException):
                    raise got
                answered[waiting[recv].pop(0)] = got
                if not waiting[recv]:
                    del waiting[recv]
        return [answered[span] if span in answered else answer(*span) for span in spans]
    finally:
        for worker, recv, _ in workers:
            worker.kill()  # (one that has sent every part is ending: killing it loses nothing)
            worker.join()
            recv.close()


def _worker(answer, spans: list, send, parent: int) -> None:
    """A process answering parts of a batch, each sent as it is answered (or what it raised).
    It ends when the command does, killed or not (anima.infra.children)."""
    from anima.infra import children

    children.end_with(parent)
    for span in spans:
        try:
            got = answer(*span)
        except BaseException as e:  # (the command says it, as if it were raised there)
            got = e
        send.send(got)
        if isinstance(got, BaseException):
            break
    send.close()
