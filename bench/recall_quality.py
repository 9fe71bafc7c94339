"""Retrieval quality of `anima recall`, against a plain BM25 and released embedding rankings.

Data. MADial-Bench (He et al., NAACL 2025; MIT licence), read from
/work/shared/bench/madial/data (ANIMA_BENCH_MADIAL overrides; the embeddings/ next to it): per
language 160 test dialogues, each with the ids of the memories it should recall
("relevant-id") and the assistant turns that recall them ("test-turn"), and a memory archive
per user (two users; an English memory has no user-id, so it takes the one of the Chinese
memory with the same id). Each memory's "event" text becomes
the one user turn of a session of its own (`mem-<id>`, line 2, its "time" as ts) in a
throwaway $ANIMA_HOME per language and user, so that a dialogue is answered from its user's
archive only (83 or 88 memories), as the released embedding rankings were. Plus the generated
corpus of bench/quality_corpus.py: 48 English and Chinese sessions of 30 turns, 80 planted
facts, and for each a user's question whose answer is the fact's (session, line). And the
generated long conversations of bench/conversation_corpus.py ("conversations en"): 8
conversations between two named people, a throwaway home each, 15 to 30 dated sessions of 15
to 35 turns (212 sessions, 5,381 turns), every turn "Name: ...", the first speaker's turns the
user's and the other's the assistant's; small talk from templates, and 232 questions with
their evidence turns, of six kinds: adjacency 48 (the answer is the turn after the other
speaker's question, the words of the question are in that question, not in the answer),
possessive 40 ("What is Melanie's dog called?" / "my dog Coco"), date 40 (a day or a month
named, the evidence a turn of that date sharing nothing but the name), temporal 40 ("When
did ..." answered by a turn's date and "last week"), paraphrase 40 (some words shared) and
multi-hop 24 (two evidence turns in different sessions, a hit when either is found). Every
fact's topic words are said in two other sessions by the other speaker, not answering.

Queries. A MADial query is the dialogue before its first test turn, the user's and the
assistant's turns (what the embedding models were given as "dialog_history"), speaker tags
removed, reduced to keywords; a generated query is the question, reduced the same way.
The row "anima, plain text" gives anima the text as is instead (the history's line breaks made
spaces), one `--batch` line a query, for anima to read as a question in plain language.
Keywords, knowing nothing of the test items: English words as anima cuts them
(`anima.recall.search.tokens`), lower-cased, less a common English stopword list; Chinese: the
bigrams of adjacent CJK characters, less those holding a function character (的 了 吗 我 你
是 在 ...) and a few function words (什么 没有 可以 ...). Repeats are kept: a word said three
times weighs three times, in anima (each is a term) and in BM25 alike. `--queries last|user`
makes MADial queries of the last user turn before the test turn, or of all user turns before it.

Systems. anima: one `anima recall --batch --json --limit 20 --no-tiers` per home, a query a
line, its results mapped back to memories (deduplicated, rank kept). BM25: k1 1.2, b 0.75,
idf log(1 + (N - df + .5) / (df + .5)), over the same documents (every turn of the home), a
document's tokens being its English words (anima.recall.search.tokens) and the bigrams of adjacent
CJK characters, its length their number; every document scored against the query's keyword
bag (OR), ties to the newer turn (as anima). anima differs from it in what the "[BM25 ...]"
rows of --explore try one at a time (a length counting each CJK character, stemming, CJK
characters at half weight, repeats saturated), in AND first, and in the ranking of
anima-recall(1): a turn read with its neighbours, a turn that opens with a term, a date named,
a question that asks when, the same words said again one result (MADial zh holds one memory
three times and one twice). Embeddings: the six models' released top-20 lists (MADial zh only).

Metrics, over the top 20: hit@k is the share of queries with a relevant memory (or turn)
among the first k, MRR the mean of 1/rank of the first relevant one (0 when none); for
"conversations en" also by kind. For anima, "empty" counts the queries it returned nothing
for, "AND" those it answered with turns holding every term (the others fell to relaxed OR).

Goal (issue 5): anima (keywords) at least the same-run BM25 on every metric of MADial and of
bench/quality_corpus.py's sets, each set as a whole (the rows by kind are not held to it), else
exit 1; on "conversations en", both anima rows against
BM25, and anima's hit@5 on MADial zh against issue 17's goal of 85, the embedding models'
level (reported, not enforced).

`--explore` adds experiments, as rows in brackets: other MADial queries (the last user turn,
all user turns, the 3 keywords of the last user turn rarest in the archive); anima's own
pass run in this process with its ranking step replaced (AND then filled up with OR, OR
only, most distinct terms first); and BM25 with one change at a time (length in characters
as anima counts it, a light English stemmer, CJK characters as extra terms at half weight,
repeated query words saturated) and all of them together (anima now does all four; the
rows show what each is worth on its own).
"""

import argparse
import calendar
import collections
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conversation_corpus  # noqa: E402
import quality_corpus  # noqa: E402
from corpus import records  # noqa: E402

from anima.recall.search import is_cjk, tokens  # noqa: E402

DATA = quality_corpus.MADIAL  # ANIMA_BENCH_MADIAL, as for bench/corpus.py; the embeddings sit next to it
BIN = os.path.dirname(sys.executable)
ANIMA = os.path.join(BIN, "anima")
LIMIT = 20
K1, B = 1.2, 0.75
ZH_HIT5_GOAL = 85.0  # issue 17; the six released embedding models' hit@5 on MADial zh: 78.8 to 90.0
METRICS = ("hit@1", "hit@5", "hit@10", "MRR")
PLAIN = "anima, plain text"  # the query's text as is, one --batch line (its line breaks made spaces)

EN_STOP = frozenset("""
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can could couldn d did didn do does doesn doing don down during each else even ever few
for from further get got had hadn has hasn have haven having he her here hers herself him himself his how i
if in into is isn it its itself just let ll m ma me might more most must my myself no nor not now o of off
oh ok okay on once only or other our ours ourselves out over own re really s same shall she should so some
such t than that the their theirs them themselves then there these they this those through to too under
until up us ve very was wasn we were weren what when where which while who whom whose why will with won
would wouldn y yeah yes you your yours yourself yourselves hey hi hello wow haha hmm um uh
""".split())
ZH_STOP_CHARS = frozenset("的了吗呢吧啊呀哦嗯哈嘿哇啦嘛噢哟呃我你您他她它们是在很也都就还这那哪么什几谁")
ZH_STOP_WORDS = frozenset("""
没有 可以 因为 所以 但是 然后 如果 知道 觉得 真的 一下 一个 一些 时候 可能 应该 已经 不是 有点 有些 非常 特别
一定 多少 怎样 为何 而且 或者 以后 之前 现在 对了 其实 当然 不过 不要 不会 不能
""".split())


# --- text -------------------------------------------------------------------------------------

def runs(text: str):
    """The lower-cased text cut into ("cjk", adjacent CJK characters) and ("text", the rest)."""
    piece, cjk = [], False
    for ch in text.lower():
        c = is_cjk(ch)
        if piece and c != cjk:
            yield ("cjk" if cjk else "text", "".join(piece))
            piece = []
        piece.append(ch)
        cjk = c
    if piece:
        yield ("cjk" if cjk else "text", "".join(piece))


def doc_tokens(text: str) -> list[str]:
    """English words as anima cuts them, and the bigrams of adjacent CJK characters."""
    out = []
    for kind, piece in runs(text):
        out += tokens(piece) if kind == "text" else [piece[i:i + 2] for i in range(len(piece) - 1)]
    return out


def keywords(text: str) -> list[str]:
    """The query terms of a text: its doc_tokens less stopwords and function characters."""
    out = []
    for kind, piece in runs(text):
        if kind == "text":
            out += [w for w in tokens(piece) if w not in EN_STOP]
        else:
            out += [g for g in (piece[i:i + 2] for i in range(len(piece) - 1))
                    if g not in ZH_STOP_WORDS and not set(g) & ZH_STOP_CHARS]
    return out


def cjk_chars(text: str, stop: frozenset = frozenset()) -> list[str]:
    return [c for kind, piece in runs(text) if kind == "cjk" for c in piece if c not in stop]


def stem(word: str) -> str:
    """A light English stemmer, for an experiment: -ies, -es, -s, -ing, -ed, -ly."""
    if not word.isalpha() or len(word) <= 3 or word.endswith("ss"):
        return word
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            word = word[: len(word) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # stopped -> stopp -> stop
            return word
    return word


def dedupe(items) -> list:
    return list(dict.fromkeys(items))


# --- BM25 -------------------------------------------------------------------------------------

class BM25:
    """Okapi BM25 over {key: (tokens, ts, text)}; a document's length is its number of tokens,
    or of characters with `chars` (as anima counts). `rank` scores every document holding any
    query term (OR) and sums over the terms, each with its weight (its count in a list)."""

    def __init__(self, docs: dict, chars: bool = False):
        self.ts = {k: ts for k, (_, ts, _) in docs.items()}
        self.tf = {k: collections.Counter(toks) for k, (toks, _, _) in docs.items()}
        self.dl = {k: len(text) if chars else len(toks) for k, (toks, _, text) in docs.items()}
        self.n = len(docs)
        self.avgdl = sum(self.dl.values()) / self.n if self.n else 1.0
        self.postings: dict[str, list] = collections.defaultdict(list)
        for k, tf in self.tf.items():
            for t in tf:
                self.postings[t].append(k)

    def df(self, term: str) -> int:
        return len(self.postings.get(term, ()))

    def rank(self, query, limit: int = LIMIT) -> list:
        weights = query if isinstance(query, dict) else collections.Counter(query)
        scores: dict = collections.defaultdict(float)
        for t, w in weights.items():
            keys = self.postings.get(t)
            if not keys:
                continue
            idf = math.log(1 + (self.n - len(keys) + 0.5) / (len(keys) + 0.5))
            for k in keys:
                tf = self.tf[k][t]
                scores[k] += w * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.dl[k] / self.avgdl))
        return sorted(scores, key=lambda k: (-scores[k], -self.ts[k], k))[:limit]


# --- metrics ----------------------------------------------------------------------------------

def metrics(ranked: list[list], relevant: list[set]) -> dict:
    first = [next((i for i, x in enumerate(r[:LIMIT], 1) if x in rel), None)
             for r, rel in zip(ranked, relevant, strict=True)]
    out = {f"hit@{k}": 100 * sum(1 for f in first if f and f <= k) / len(first) for k in (1, 5, 10)}
    out["MRR"] = 100 * sum(1 / f for f in first if f) / len(first)
    return out


# --- corpora ----------------------------------------------------------------------------------

class Archive:
    """One throwaway home and its documents {(session, line): (text, ts)}; `item` maps a
    (session, line) to what relevance is judged on (a memory id, or the turn itself)."""

    def __init__(self, home: str, sessions: list[dict], item):
        self.home, self.item = home, item
        self.docs = {(s["id"], i + 2): (text, ts) for s in sessions for i, (_, text, ts) in enumerate(s["turns"])}
        subprocess.run([ANIMA, "init", "--lang", "en"], env=clean_env(home), check=True, capture_output=True)
        for s in sessions:
            with open(os.path.join(home, "sessions", f"{s['id']}.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps({"type": "session", "id": s["id"]}, ensure_ascii=False) + "\n")
                for role, text, ts in s["turns"]:
                    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))
                    f.write(json.dumps({"role": role, "content": text, "ts": stamp}, ensure_ascii=False) + "\n")

    def bm25(self, doc_fn=doc_tokens, chars: bool = False) -> BM25:
        return BM25({self.item(k): (doc_fn(text), ts, text) for k, (text, ts) in self.docs.items()}, chars)


class Corpus:
    """An evaluation set: (archive, indices of the queries it answers) parts, the query texts,
    what each query should find, and the result rows."""

    def __init__(self, name: str, parts: list[tuple], texts: list[str], relevant: list[set], note: str,
                 kinds: list[str] | None = None, enforced: bool = True):
        self.name, self.parts, self.texts, self.relevant, self.note = name, parts, texts, relevant, note
        self.kinds, self.enforced = kinds or [], enforced  # kinds: one a query, for rows by kind
        self.rows: dict[str, dict] = {}
        self.ranked: dict[str, list[list]] = {}
        self.dialogues: list[dict] = []

    def add(self, name: str, ranked: list[list], **extra) -> None:
        self.rows[name] = {**metrics(ranked, self.relevant), **extra}
        self.ranked[name] = ranked

    def by_kind(self, systems) -> dict[str, dict]:
        """Rows "KIND (n) SYSTEM": the metrics of each system over the queries of each kind."""
        out = {}
        for kind in dict.fromkeys(self.kinds):
            picked = [i for i, k in enumerate(self.kinds) if k == kind]
            for name in systems:
                out[f"{kind} ({len(picked)}) {name}"] = metrics([self.ranked[name][i] for i in picked],
                                                               [self.relevant[i] for i in picked])
        return out


def clean_env(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMA_")}
    env["ANIMA_HOME"] = home
    return env


def madial_text(d: dict, mode: str) -> str:
    """The turns before the first test turn, tags and quotes removed. Line 0 is <BOD>; the user
    speaks on odd lines, the assistant on even ones (every test turn is even)."""
    before = [(i, quality_corpus.clean(t)) for i, t in enumerate(d["dialogue"][: min(d["test-turn"])]) if i > 0]
    if mode in ("last", "user"):
        before = [x for x in before if x[0] % 2 == 1][-1 if mode == "last" else 0:]
    return "\n".join(t for _, t in before)


def madial(lang: str, tmp: str, mode: str) -> Corpus:
    folder = os.path.join(DATA, "ch" if lang == "zh" else "en")
    zh_users = {int(k): v.get("user-id") for r in records(os.path.join(DATA, "ch/MADial-Bench-zh-memory.json"))
                for k, v in r.items()}
    by_user: dict = collections.defaultdict(list)
    for r in records(os.path.join(folder, f"MADial-Bench-{lang}-memory.json")):
        for k, v in r.items():
            ts = calendar.timegm(time.strptime(v["time"] + " 12", "%Y-%m-%d %H"))
            user = v.get("user-id", zh_users.get(int(k)))
            by_user[user].append({"id": f"mem-{k}", "turns": [("user", v["event"], ts)]})
    dialogues = records(os.path.join(folder, f"MADial-Bench-{lang}-dialogue.json"))

    def memory(key: tuple) -> int:
        return int(key[0].removeprefix("mem-"))

    parts = [(Archive(os.path.join(tmp, f"madial-{lang}-{user}"), sessions, memory),
              [i for i, d in enumerate(dialogues) if d["user-id"] == user])
             for user, sessions in sorted(by_user.items())]
    corpus = Corpus(f"MADial {lang}", parts, [madial_text(d, mode) for d in dialogues],
                    [set(d["relevant-id"]) for d in dialogues],
                    f"{len(dialogues)} dialogues, {sum(map(len, by_user.values()))} memories in {len(parts)} "
                    f"archives; query: {mode}")
    corpus.dialogues = dialogues
    return corpus


def generated(tmp: str) -> list[Corpus]:
    sessions, questions = quality_corpus.build()
    archive = Archive(os.path.join(tmp, "generated"), sessions, lambda key: key)
    out = []
    for lang in ("en", "zh"):
        qs = [q for q in questions if q["lang"] == lang]
        out.append(Corpus(f"generated {lang}", [(archive, list(range(len(qs))))], [q["text"] for q in qs],
                          [{q["answer"]} for q in qs],
                          f"{len(sessions)} sessions, {len(archive.docs)} turns (both languages), {len(qs)} questions"))
    return out


def conversations(tmp: str) -> Corpus:
    """The long conversations of bench/conversation_corpus.py, a home each; the first speaker's
    turns are the user's, the other's the assistant's, and relevance is judged on the turn."""
    convs = conversation_corpus.build()
    parts, texts, relevant, kinds = [], [], [], []
    turns = 0
    for n, c in enumerate(convs):
        role = {c["speakers"][0]: "user", c["speakers"][1]: "assistant"}
        sessions = [{"id": s["id"], "turns": [(role[who], text, ts) for who, text, ts in s["turns"]]}
                    for s in c["sessions"]]
        archive = Archive(os.path.join(tmp, f"conversation-{n}"), sessions, lambda key: key)
        turns += len(archive.docs)
        parts.append((archive, list(range(len(texts), len(texts) + len(c["questions"])))))
        for q in c["questions"]:
            texts.append(q["text"])
            relevant.append(set(q["evidence"]))
            kinds.append(q["kind"])
    counts = collections.Counter(kinds)
    return Corpus("conversations en", parts, texts, relevant,
                  f"{len(convs)} conversations of two people (bench/conversation_corpus.py), "
                  f"{sum(len(c['sessions']) for c in convs)} dated sessions, {turns} turns, {len(texts)} questions"
                  + "".join(f"\n  {k} {counts[k]}: {conversation_corpus.ABOUT[k]}" for k in counts)
                  + "\n  a hit: any evidence turn among the first k",
                  kinds, enforced=False)


# --- systems ----------------------------------------------------------------------------------

def run_anima(corpus: Corpus, terms: list[list[str]], problems: list[str], tiers: bool = False):
    """anima recall --batch per archive: (ranked items per query, empty count, AND count)."""
    ranked: list = [[] for _ in terms]
    empty = strict = 0
    argv = [ANIMA, "recall", "--batch", "--json", "--limit", str(LIMIT)] + ([] if tiers else ["--no-tiers"])
    for archive, queries in corpus.parts:
        stdin = "".join(" ".join(terms[i]) + "\n" for i in queries)
        p = subprocess.run(argv, input=stdin.encode(), env=clean_env(archive.home), capture_output=True)
        if p.returncode not in (0, 1) or p.stderr.strip():
            problems.append(f"anima recall --batch ({corpus.name}): exit {p.returncode}: "
                            f"{p.stderr.decode(errors='replace').strip()[:300]}")
        relaxed = {}
        for line in p.stdout.decode().splitlines():
            r = json.loads(line)
            i = queries[r["query"]]
            ranked[i].append(archive.item((r["session"], r["line"])))
            relaxed[i] = relaxed.get(i, False) or r["relaxed"]  # (a question's first tier may follow one)
        empty += sum(1 for i in queries if not ranked[i])
        strict += sum(1 for i in queries if ranked[i] and not relaxed[i])
    return [dedupe(r) for r in ranked], empty, strict


def run_anima_variant(corpus: Corpus, terms: list[list[str]], variant: str) -> list[list]:
    """anima.recall.search's own pass in this process, its ranking step replaced by `variant`:
    "fill" (every-term turns first, then the rest by score), "or" (all by score), "coord"
    (most distinct terms matched first, then score)."""
    from anima.infra import config
    from anima.infra.home import Home
    from anima.recall import search as recall

    def rank(cands, st, q, limit, tiers, turns=None):  # (no neighbours: the first stage alone)
        def key(c):
            first = {"fill": not all(c.tfs), "or": 0,
                     "coord": -len({p for p, tf in zip(q.matches, c.tfs, strict=True) if tf})}[variant]
            return (first, -recall.score(c, st, q), -c.ts, c.session, c.line)
        return [recall.Result(c, recall.score(c, st, q), [], True) for c in sorted(cands, key=key)[:limit]]

    original, recall.rank = recall.rank, rank
    ranked: list = [[] for _ in terms]
    try:
        for archive, queries in corpus.parts:
            home = Home(archive.home)
            results = recall.run(home, config.load(home.config, environ={}), [recall.Query(terms[i]) for i in queries],
                                 recall.Filters(), LIMIT, False, lambda message: None)
            for i, rs in zip(queries, results, strict=True):
                ranked[i] = dedupe(archive.item((r.c.session, r.c.line)) for r in rs)
    finally:
        recall.rank = original
    return ranked


def run_bm25(corpus: Corpus, query_fn=None, doc_fn=doc_tokens, chars: bool = False) -> list[list]:
    """BM25 per archive; query_fn(i, text, bm25) gives query i's keyword list or {term: weight}
    (default: keywords(text))."""
    ranked: list = [[] for _ in corpus.texts]
    for archive, queries in corpus.parts:
        bm = archive.bm25(doc_fn, chars)
        for i in queries:
            ranked[i] = bm.rank(query_fn(i, corpus.texts[i], bm) if query_fn else keywords(corpus.texts[i]))
    return ranked


# Experiment variants. A query: (i, text, bm25) -> keywords or {term: weight}; a document: text -> tokens.

def saturated(i, text, bm, k3: float = 1.0) -> dict:
    """Repeats count less and less: weight c (k3 + 1) / (c + k3) for a keyword said c times."""
    return {t: c * (k3 + 1) / (c + k3) for t, c in collections.Counter(keywords(text)).items()}


def with_chars(i, text, bm, weight: float = 0.5) -> dict:
    """The keywords, plus every CJK character outside the function characters at `weight`."""
    q = collections.Counter(keywords(text))
    for c in cjk_chars(text, ZH_STOP_CHARS):
        q[c] += weight
    return dict(q)


def stemmed(i, text, bm) -> list[str]:
    return [stem(w) for w in keywords(text)]


def all_three(i, text, bm) -> dict:
    """Stemmed keywords and CJK characters at half weight, repeats saturated."""
    q = collections.Counter(stem(w) for w in keywords(text))
    chars = collections.Counter(cjk_chars(text, ZH_STOP_CHARS))
    return {t: c * 2 / (c + 1) for t, c in q.items()} | {c: 0.5 * n * 2 / (n + 1) for c, n in chars.items()}


def doc_stemmed(text: str) -> list[str]:
    return [stem(t) for t in doc_tokens(text)]


def doc_with_chars(text: str) -> list[str]:
    return doc_tokens(text) + cjk_chars(text)


def doc_all_three(text: str) -> list[str]:
    return doc_stemmed(text) + cjk_chars(text)


def rarest(corpus: Corpus, n: int = 3) -> list[list[str]]:
    """The n keywords of each query text rarest in its archive (of those it holds at all)."""
    out: list = [[] for _ in corpus.texts]
    for archive, queries in corpus.parts:
        bm = archive.bm25()
        for i in queries:
            held = [k for k in dedupe(keywords(corpus.texts[i])) if bm.df(k)]
            out[i] = sorted(held, key=bm.df)[:n]
    return out


# --- the run ----------------------------------------------------------------------------------

def evaluate(corpus: Corpus, problems: list[str], explore: bool) -> None:
    terms = [keywords(t) for t in corpus.texts]
    ranked, empty, strict = run_anima(corpus, terms, problems)
    corpus.add("anima", ranked, empty=empty, AND=strict)
    ranked, empty, strict = run_anima(corpus, [t.split() for t in corpus.texts], problems)
    corpus.add(PLAIN, ranked, empty=empty, AND=strict)
    corpus.add("BM25", run_bm25(corpus))
    head, nl, tail = corpus.note.partition("\n")  # the figure on the first line, after the counts
    corpus.note = f"{head}, median {sorted(map(len, terms))[len(terms) // 2]} keywords{nl}{tail}"
    if corpus.name == "MADial zh":
        for name, tops in embeddings().items():
            corpus.add(name, [tops[d.get("id", n)] for n, d in enumerate(corpus.dialogues)])
    if not explore:
        return
    if corpus.dialogues:
        for mode in ("last", "user"):
            other = Corpus(corpus.name, corpus.parts, [madial_text(d, mode) for d in corpus.dialogues],
                           corpus.relevant, "")
            ranked, empty, strict = run_anima(other, [keywords(t) for t in other.texts], problems)
            corpus.add(f"[{mode}] anima", ranked, empty=empty, AND=strict)
            corpus.add(f"[{mode}] BM25", run_bm25(other))
        other.texts = [madial_text(d, "last") for d in corpus.dialogues]
        short = rarest(other)
        ranked, empty, strict = run_anima(other, short, problems)
        corpus.add("[last, 3 rarest] anima", ranked, empty=empty, AND=strict)
        corpus.add("[last, 3 rarest] anima fill", run_anima_variant(other, short, "fill"))
        corpus.add("[last, 3 rarest] BM25", run_bm25(other, lambda i, text, bm: short[i]))
    else:
        ranked, empty, strict = run_anima(corpus, terms, problems, tiers=True)
        corpus.add("[anima with tiers]", ranked, empty=empty, AND=strict)
    for variant in ("fill", "or", "coord"):
        corpus.add(f"[anima {variant}]", run_anima_variant(corpus, terms, variant))
    corpus.add("[BM25 length in chars]", run_bm25(corpus, chars=True))
    corpus.add("[BM25 stemmed]", run_bm25(corpus, stemmed, doc_stemmed))
    corpus.add("[BM25 + CJK chars x0.5]", run_bm25(corpus, with_chars, doc_with_chars))
    corpus.add("[BM25 repeats saturated]", run_bm25(corpus, saturated))
    corpus.add("[BM25 all three]", run_bm25(corpus, all_three, doc_all_three))


def embeddings() -> dict[str, dict]:
    """Model name -> {dialogue id: top-20 memory ids}, from embeddings/ch/*_top_20_ids.json."""
    out = {}
    for path in sorted(glob.glob(os.path.join(os.path.dirname(DATA), "embeddings", "ch", "*_top_20_ids.json"))):
        name = os.path.basename(path).removesuffix("_top_20_ids.json").removesuffix("_zh")
        out[name] = {r["id"]: r["top_20_ids"] for r in records(path)}
    return out


def table(c: Corpus) -> None:
    print(f"\n{c.name}: {c.note}")
    rows(c.rows)
    if c.kinds:
        print("  by kind")
        rows(c.by_kind(("anima", PLAIN, "BM25")))


def rows(table: dict[str, dict]) -> None:
    width = max(28, *map(len, table))
    print(f"  {'system':{width}} {'hit@1':>6} {'hit@5':>6} {'hit@10':>6} {'MRR':>6} {'empty':>6} {'AND':>5}")
    for name, row in table.items():
        extra = f" {row['empty']:6d} {row['AND']:5d}" if "empty" in row else ""
        print(f"  {name:{width}} " + " ".join(f"{row[m]:6.1f}" for m in METRICS) + extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", choices=("history", "last", "user"), default="history",
                        help="what a MADial query is made of (default: the dialogue history)")
    parser.add_argument("--explore", action="store_true", help="also run the experiments")
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print(f"bench/recall_quality.py: no MADial-Bench data in {DATA} (ANIMA_BENCH_MADIAL)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpora = [madial("zh", tmp, args.queries), madial("en", tmp, args.queries), *generated(tmp),
                   conversations(tmp)]
        for c in corpora:
            evaluate(c, problems, args.explore)
    print("recall quality, % over the top 20; anima's empty: queries it returned nothing for; "
          "AND: answered by turns with every term, the others relaxed to OR")
    for c in corpora:
        table(c)

    print("\ngoal: anima >= the same-run BM25 on every metric of each set as a whole (a kind of question may be lower)")
    below = False
    checks = [(c.name if c.enforced else f"{c.name}, {'keywords' if system == 'anima' else 'plain text'}", c, system)
              for c in corpora for system in (("anima",) if c.enforced else ("anima", PLAIN))]
    width = max(len(name) for name, _, _ in checks)
    for name, c, system in checks:
        a, b = c.rows[system], c.rows["BM25"]
        marks = []
        for m in METRICS:
            ok = a[m] >= b[m] - 1e-9
            below |= not ok and c.enforced
            marks.append(f"{m} {a[m]:.1f} vs {b[m]:.1f} {'ok' if ok else 'BELOW'}")
        print(f"  {name:{width}} " + ", ".join(marks) + ("" if c.enforced else " (reported, not enforced)"))
    zh = corpora[0].rows["anima"]["hit@5"]
    gap = "reached" if zh >= ZH_HIT5_GOAL else f"{ZH_HIT5_GOAL - zh:.1f} points short"
    print(f"goal: anima hit@5 on MADial zh {zh:.1f} vs {ZH_HIT5_GOAL:.0f} (issue 17; the embedding models 78.8-90.0): "
          f"{gap} (reported, not enforced)")
    print(f"took {time.perf_counter() - started:.1f} s")
    for p in dict.fromkeys(problems):
        print(f"WRONG: {p}")
    return 1 if below or problems else 0


if __name__ == "__main__":
    sys.exit(main())
