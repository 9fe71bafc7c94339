"""Reading a transcript's bytes: a plain file as it is, a `.zst` or `.zstd` file decompressed.

A `.jsonl.zst` or `.jsonl.zstd` file is zstandard, any number of frames (a line may span
them). Its lines are those of the decompressed bytes, so `zstdcat F | sed -n Np` shows line N.
Where the compressed data breaks (corrupt, or truncated: the last frame incomplete) the bytes
before the damage still come, then Damaged; `lines` gives every complete line before it and
never the unfinished one. zstandard is imported only when a compressed file is read.
"""

ZSTD_SUFFIXES = (".jsonl.zst", ".jsonl.zstd")
CHUNK = 1 << 20


class Damaged(Exception):
    """The compressed data ends or breaks before the end of the file."""


def chunks(path: str, size: int | None = None):
    """The decompressed bytes of `path` in pieces (from `size` bytes read at a time); raise
    Damaged where the zstd data breaks.

    Frame by frame: a decompressor that has taken input but not reached the end of its frame
    when the file ends means a truncated file, which zstandard's stream_reader would end
    silently (and a one-shot decompress() reads only the first frame).
    """
    global _shared, _shared_busy
    size = CHUNK if size is None else size  # read when called: a test reads in 5-byte pieces
    with open(path, "rb") as f:
        if not path.endswith(ZSTD_SUFFIXES):
            while chunk := f.read(size):
                yield chunk
            return
        import zstandard

        # one decompressor for the process (making one costs more than decompressing a
        # session: recall reads 10 back), unless another stream is still open on it
        if _shared_busy:
            dctx = zstandard.ZstdDecompressor()
        else:
            if _shared is None:
                _shared = zstandard.ZstdDecompressor()
            dctx, _shared_busy = _shared, True
        try:
            yield from _frames(f, dctx, size, zstandard)
        finally:
            if dctx is _shared:
                _shared_busy = False


_shared = None  # the process's zstd decompressor, for chunks
_shared_busy = False


def _frames(f, dctx, size: int, zstandard):
    """The decompressed pieces of the zstd frames in file `f`, one after the other."""
    frame = None
    while raw := f.read(size):
        while raw:
            if frame is None:
                frame = dctx.decompressobj()
            try:
                data = frame.decompress(raw)
            except zstandard.ZstdError as e:
                raise Damaged(f"corrupt zstd data ({e})") from None
            if data:
                yield data
            if frame.eof:
                raw, frame = frame.unused_data, None
            else:
                raw = b""
    if frame is not None:
        raise Damaged("truncated zstd data (the last frame is incomplete)")


def damage(path: str) -> str | None:
    """Why the zstd data of `path` breaks, or None when it reads to its end (a plain file
    always does)."""
    if not path.endswith(ZSTD_SUFFIXES):
        return None
    try:
        for _ in chunks(path):
            pass
    except Damaged as e:
        return str(e)
    return None


def lines(chunks):
    """Each line's bytes, without its newline; an unfinished line at a damaged end never comes."""
    pending: list[bytes] = []
    for chunk in chunks:
        parts = chunk.split(b"\n")
        if len(parts) == 1:
            pending.append(chunk)
            continue
        if pending:
            pending.append(parts[0])
            parts[0] = b"".join(pending)
        pending = [parts[-1]] if parts[-1] else []
        del parts[-1]
        yield from parts
    if pending:
        yield b"".join(pending)


def head(path: str, lines: int) -> bytes:
    """The decompressed bytes of `path` up to the end of its line `lines` at least (all of them
    if it is shorter): read and decompressed 64 KiB at a time, so a turn near the start of a
    long file costs little."""
    pieces, newlines = [], 0
    for piece in chunks(path, 1 << 16):
        pieces.append(piece)
        newlines += piece.count(b"\n")
        if newlines >= lines:
            break
    return b"".join(pieces)
