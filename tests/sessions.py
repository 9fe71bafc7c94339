"""Write transcript files for tests: real JSONL, and real zstd when asked."""

import json
import os


def write_session(home, sid, turns, header=True, delegated=False, zst=False, directory=None):
    """turns: (role, content, ts) tuples or ready dicts. Returns the path written."""
    lines = []
    if header:
        lines.append({"type": "session", "id": sid, "delegated": delegated})
    for t in turns:
        lines.append(t if isinstance(t, dict) else {"role": t[0], "content": t[1], "ts": t[2]})
    data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
    d = directory or os.path.join(home, "sessions")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{sid}.jsonl" + (".zst" if zst else ""))
    if zst:
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return path
