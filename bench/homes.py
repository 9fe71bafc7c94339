"""What the Pool A benches share: anima run quietly, and a home with messages waiting to be lived.

bench/stream.py and bench/consolidate.py import it (run as `python bench/NAME.py`, bench/ is
on sys.path).
"""

import json
import os
import subprocess
import sys

ANIMA = os.path.join(os.path.dirname(sys.executable), "anima")


def sh(argv, env, **kwargs):
    return subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, **kwargs)


def said(home: str, n: int, **environ) -> dict:
    """A new home at `home` where four people said `n` messages, preprocessed and waiting in
    message_queue for `anima internalize`; its environment (with `environ`)."""
    env = {**os.environ, "ANIMA_HOME": home, **environ}
    sh([ANIMA, "init", "--lang", "en"], env, stderr=subprocess.DEVNULL)
    speakers = ("Alice", "Bob", "Carol", "Dan")
    events = "".join(json.dumps({"text": f"Message {k}: shall we meet at {k % 24}:00 about the plan?",
                                 "speaker": speakers[k % 4], "scene": "chat"}) + "\n" for k in range(n))
    sh([ANIMA, "say", "--json"], env, input=events.encode())
    sh([ANIMA, "preprocess"], env)
    return env
