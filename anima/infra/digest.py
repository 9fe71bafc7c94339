"""The one hash anima keeps of a text: its sha256, hex, of the UTF-8 (of bytes as they are).

Provenance, the stream's bookkeeping, the prompt's injection log and the facts' sources all
compare texts by it, so a text hashed anywhere can be checked anywhere else.
"""


def sha(text: str | bytes) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()
