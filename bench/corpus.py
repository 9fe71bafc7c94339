"""A generated transcript corpus for the recall bench: mixed Chinese and English, zstd.

`make_corpus(directory)` writes 300 sessions x 100 turns as `<dir>/<session id>.jsonl.zst` in
anima's own transcript format (a `{"type": "session", ...}` first line, then one
`{"role", "content", "ts"}` per line), about 30 MB of JSONL before compression. The text is
spliced from the utterances and memory events of MADial-Bench (He et al., NAACL 2025; MIT
licence), English and Chinese, read from /work/shared/bench/madial/data (ANIMA_BENCH_MADIAL
overrides). Everything comes from one seeded `random.Random`, so the same seed gives the same
bytes. `pick_terms(seed)` gives the query terms, each checked against the generated text.

    python bench/corpus.py DIR    # write the corpus, print its size and the terms
"""

import bisect
import calendar
import functools
import glob
import itertools
import json
import os
import random
import re
import sys
import time

SEED = 4
MADIAL = os.environ.get("ANIMA_BENCH_MADIAL", "/work/shared/bench/madial/data")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_LOWER = re.compile(r"[a-z]+")
_WORD = re.compile(rf"[^\W_{_CJK}]+")  # an English token the way anima's recall cuts them
_START = calendar.timegm((2026, 1, 5, 0, 0, 0))  # 2026-01-05T00:00:00Z


# --- the source utterances ------------------------------------------------------------------

def records(path: str):
    """The JSON values of a file that is either one JSON document or JSON Lines."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    return value if isinstance(value, list) else [value]


def _strings(value):
    """Every utterance in a MADial record: dialogue lines and memory events, at any depth."""
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "dialogue" and isinstance(v, list):
                yield from (s for s in v if isinstance(s, str))
            elif key == "event" and isinstance(v, str):
                yield v
            else:
                yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _clean(s: str) -> str:
    """`<Bart>: "Hey!"\\n` -> `Hey!`; the data has stray brackets, quotes and <eod> marks."""
    s = s.strip()
    if s.upper() in ("<BOD>", "<EOD>"):
        return ""
    s = re.sub(r"^<[^<>]{1,20}>:+\s*", "", s)
    s = re.sub(r"\"?<eod>?\s*$", "", s, flags=re.IGNORECASE)
    return " ".join(s.strip(" \"<>").split())


def load_utterances(root: str = MADIAL) -> tuple[list[str], list[str]]:
    """(English, Chinese) utterances, deduplicated, in a fixed order."""
    pools = []
    for lang in ("en", "ch"):
        seen: dict[str, None] = {}
        for path in sorted(glob.glob(os.path.join(root, lang, "*.json"))):
            for record in records(path):
                for s in _strings(record):
                    s = _clean(s)
                    if len(s) >= 2:
                        seen.setdefault(s, None)
        if not seen:
            raise SystemExit(f"corpus: no MADial-Bench utterances under {root}/{lang}")
        pools.append(list(seen))
    return pools[0], pools[1]


class _Pool:
    """Draws utterances with Zipf-like weights (a few are everywhere, most are rare)."""

    def __init__(self, items: list[str], rng: random.Random):
        self.items = items[:]
        rng.shuffle(self.items)
        self.cum = list(itertools.accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(len(self.items))))

    def draw(self, rng: random.Random) -> str:
        return self.items[bisect.bisect(self.cum, rng.random() * self.cum[-1])]


# --- generation -----------------------------------------------------------------------------

def _text(rng: random.Random, en: _Pool, zh: _Pool, p_zh: float, target: int) -> str:
    """Utterances spliced until about `target` characters; paragraphs in the longer ones."""
    parts: list[str] = []
    size = 0
    prev_zh = None
    while size < target:
        is_zh = rng.random() < p_zh
        s = (zh if is_zh else en).draw(rng)
        if parts:
            if size > 300 and rng.random() < 0.08:
                sep = "\n\n"
            elif is_zh and prev_zh:
                sep = ""
            else:
                sep = " "
            parts.append(sep)
        parts.append(s)
        size += len(s) + 1
        prev_zh = is_zh
    return "".join(parts)


def _length(rng: random.Random, role: str) -> int:
    """Characters in a turn: median ~500 over all turns, about 3% of 2-3 KB."""
    if rng.random() < 0.03:
        return rng.randint(2000, 3000)
    median = 350 if role == "user" else 550
    return max(30, min(3000, int(rng.lognormvariate(0, 0.5) * median)))


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _sessions(seed: int, sessions: int, turns: int):
    """(session id, [line dicts]) for every session, all from one seeded generator."""
    rng = random.Random(seed)
    en_items, zh_items = load_utterances()
    en, zh = _Pool(en_items, rng), _Pool(zh_items, rng)
    starts = sorted(_START + rng.uniform(0, 300 * 86400) for _ in range(sessions))
    for start in starts:
        sid = time.strftime("%Y%m%d-%H%M%S", time.gmtime(start)) + f"-{rng.getrandbits(24):06x}"
        kind = rng.random()  # mostly Chinese, mostly English, or both in every turn
        p_zh = 0.85 if kind < 0.35 else 0.15 if kind < 0.7 else 0.5
        lines: list[dict] = [{"type": "session", "id": sid, "delegated": rng.random() < 0.10}]
        t = start
        role = "user"
        previous = None
        for _ in range(turns):
            t += rng.uniform(5, 400)
            if previous == "assistant" and rng.random() < 2 / 30:  # ~1 line in 30: a tool result
                output = _text(rng, en, zh, p_zh, rng.randint(80, 600))
                lines.append({"role": "tool", "content": f"$ anima recall --json\n{output}", "ts": _stamp(t)})
                previous = "tool"
                continue
            text = _text(rng, en, zh, p_zh, _length(rng, role))
            if role == "assistant" and rng.random() < 0.10:  # ~1 line in 20: reasoning, then text
                thought = _text(rng, en, zh, p_zh, rng.randint(100, 800))
                content = [{"type": "reasoning", "text": thought}, {"type": "text", "text": text}]
            else:
                content = text
            lines.append({"role": role, "content": content, "ts": _stamp(t)})
            previous = role
            role = "assistant" if role == "user" else "user"
        yield sid, lines


def _jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


def make_corpus(directory: str, sessions: int = 300, turns: int = 100, seed: int = SEED,
                aged: bool = False) -> list[str]:
    """Write the corpus as `<directory>/<id>.jsonl.zst`; return the paths, in session order.
    `aged`: each file's mtime is its last turn's time, as a history's files are (else now)."""
    import zstandard

    os.makedirs(directory, exist_ok=True)
    compressor = zstandard.ZstdCompressor()
    paths = []
    for sid, lines in _sessions(seed, sessions, turns):
        path = os.path.join(directory, f"{sid}.jsonl.zst")
        with open(path, "wb") as f:
            f.write(compressor.compress(_jsonl(lines)))
        if aged:
            last = calendar.timegm(time.strptime(lines[-1]["ts"], "%Y-%m-%dT%H:%M:%SZ"))
            os.utime(path, (last, last))
        paths.append(path)
    return paths


# --- query terms ----------------------------------------------------------------------------

STOPWORDS = set("""a about after again all also am an and any are as at be because been before being but by can
could did do does doing don for from had has have having he her here him his how i if in into is it its just
let like me more most my no not now of on one or our out really so some than that the their them then there
these they this to too up very was we were what when where which while who why will with would you your
yours ve ll re didn doesn isn wasn aren""".split())
# Chinese candidates: real words and set phrases of the source text (n-grams of it would as often
# straddle two words); the frequency bands below choose among those the corpus really has.
ZH_WORDS = ("开心", "朋友", "学校", "妈妈", "比赛", "老师", "画画", "宠物", "紧张", "礼物", "生日", "魔术", "游泳",
            "恐龙", "篮球", "钢琴", "企鹅", "熊猫", "风筝", "蛋糕", "彩虹", "烟花", "电影", "音乐", "旅行", "作业",
            "考试", "野餐", "露营", "帐篷", "喜悦", "平衡", "画布", "冠军", "戏剧", "早安", "炼乳", "卷饼", "汇报",
            "欺负", "绘本", "推迟", "环节", "滑板", "鲨鱼", "月饼", "书法", "猫咪")
ZH_PHRASES = ("非常开心", "元旦晚会", "期末考试", "生日派对", "冰淇淋店", "科学实验", "美术比赛", "篮球比赛",
              "钢琴比赛", "表演魔术", "五颜六色", "无所畏惧", "各种各样", "家庭作业", "数学考试", "光彩夺目",
              "闪闪发光", "色彩缤纷", "津津有味", "足球比赛", "圣诞晚会", "迫不及待", "小心翼翼", "兴高采烈")
ABSENT_EN = ("quokka", "zygomorphic", "xylographer", "borborygmus")
ABSENT_ZH = ("鲸歌", "量子纠缠", "饕餮", "蝾螈")


@functools.cache
def _texts(seed: int, sessions: int, turns: int):
    """(searchable texts, every raw JSONL line) of the corpus: the turns anima reads, and all
    (made once a process: pick_terms and questions both read them)."""
    searchable, raw = [], []
    for _, lines in _sessions(seed, sessions, turns):
        for line in lines:
            raw.append(json.dumps(line, ensure_ascii=False))
            if line.get("role") not in ("user", "assistant"):
                continue
            content = line["content"]
            if isinstance(content, str):
                searchable.append(content)
            else:
                searchable.append("\n".join(p["text"] for p in content if p.get("type") == "text"))
    return searchable, raw


def _pick(rng: random.Random, df: dict[str, int], low: int, high: int, what: str, filt=lambda t: True) -> str:
    """One term whose document frequency is within [low, high], chosen by the seeded rng."""
    band = sorted(t for t, n in df.items() if low <= n <= high and filt(t))
    if not band:
        raise SystemExit(f"corpus: no {what} with {low}..{high} turns")
    return rng.choice(band)


def pick_terms(seed: int = SEED, sessions: int = 300, turns: int = 100) -> list[str]:
    """About 10 query terms of mixed frequency, each checked against the generated text.

    English: a rare word, a middling one, a common one, a two-word phrase; Chinese: a common and
    a rare 2-character word, a common and a rare 4-character phrase; one English and one
    Chinese term that occur nowhere in the files (not even in reasoning or tool lines).
    Frequencies are in turns (of about 29,000). The present terms occur in the turns anima
    reads, as rg sees them too (lower-case English, a whole word; Chinese characters together).
    """
    searchable, raw = _texts(seed, sessions, turns)
    en_df: dict[str, int] = {}
    pair_df: dict[str, int] = {}
    for text in searchable:
        words = _WORD.findall(text)
        for w in set(words):
            if w.islower() and w.isascii() and w.isalpha():
                en_df[w] = en_df.get(w, 0) + 1
        plain = text.split()  # a phrase as rg sees it: two words with one space between
        pairs = {f"{a} {b}" for a, b in zip(plain, plain[1:], strict=False)
                 if _LOWER.fullmatch(a) and _LOWER.fullmatch(b)}
        for pair in pairs:
            pair_df[pair] = pair_df.get(pair, 0) + 1
    zh_df: dict[str, int] = {}
    for g in ZH_WORDS + ZH_PHRASES:
        zh_df[g] = sum(1 for text in searchable if g in text)
    rng = random.Random(seed)
    content = lambda t: t not in STOPWORDS and len(t) >= 4  # noqa: E731
    not_stop = lambda t: all(w not in STOPWORDS for w in t.split()) and len(t) >= 8  # noqa: E731
    two, four = (lambda t: len(t) == 2), (lambda t: len(t) == 4)
    terms = [
        _pick(rng, en_df, 3, 40, "rare English word", content),
        _pick(rng, en_df, 300, 1500, "middling English word", content),
        _pick(rng, en_df, 3000, 100000, "common English word", content),
        _pick(rng, pair_df, 50, 1500, "English phrase", not_stop),
        _pick(rng, zh_df, 3000, 100000, "common 2-character Chinese word", two),
        _pick(rng, zh_df, 3, 150, "rare 2-character Chinese word", two),
        _pick(rng, zh_df, 800, 100000, "common 4-character Chinese phrase", four),
        _pick(rng, zh_df, 3, 150, "rare 4-character Chinese phrase", four),
    ]
    everything = "\n".join(raw).casefold()
    for absent in (ABSENT_EN, ABSENT_ZH):
        terms.append(next((t for t in absent if t not in everything), None) or sys.exit("corpus: no absent term"))
    for t in terms[:-2]:  # check the present ones the way each side matches
        found = sum(1 for text in searchable if t in text)
        assert found, f"{t!r} does not occur in the turns"
    return terms


def questions(n: int, seed: int = SEED, sessions: int = 300, turns: int = 100) -> list[str]:
    """`n` questions in plain language (as `anima recall --batch` reads them) made of words of
    the corpus's turns, so that each finds something: two content words of one turn in an
    English question, or two of ZH_WORDS and ZH_PHRASES found in one turn in a Chinese one."""
    searchable, _ = _texts(seed, sessions, turns)
    rng = random.Random(seed + 17)
    out: list[str] = []
    while len(out) < n:
        text = rng.choice(searchable)
        zh = [w for w in ZH_WORDS + ZH_PHRASES if w in text]
        if zh and rng.random() < 0.3:
            a, b = rng.sample(zh, 2) if len(zh) > 1 else (zh[0], zh[0])
            out.append(rng.choice(("记得{}和{}吗？", "{}的时候，{}怎么样？")).format(a, b))
            continue
        words = sorted({w for w in _WORD.findall(text)
                        if w.islower() and w.isascii() and w.isalpha() and w not in STOPWORDS and len(w) >= 4})
        if len(words) < 2:
            continue
        a, b = rng.sample(words, 2)
        out.append(rng.choice(("What did we say about {} and {}?", "When did I mention {} with {}?",
                               "Do you remember the {} and the {}?")).format(a, b))
    return out


def absent(terms: list[str]) -> set[str]:
    """The terms of `pick_terms` that occur nowhere (its last two)."""
    return set(terms[-2:])


def main() -> int:
    directory = sys.argv[1] if len(sys.argv) > 1 else "corpus"
    start = time.perf_counter()
    paths = make_corpus(directory)
    took = time.perf_counter() - start
    import zstandard

    jsonl = sum(len(zstandard.ZstdDecompressor().decompress(open(p, "rb").read())) for p in paths)
    zst = sum(os.path.getsize(p) for p in paths)
    print(f"{len(paths)} sessions, {jsonl / 1e6:.1f} MB JSONL, {zst / 1e6:.1f} MB zstd, {took:.1f} s")
    print("terms:", " | ".join(pick_terms(SEED)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
