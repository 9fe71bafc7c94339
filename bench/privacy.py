"""How well the private-data detector tells the person's private data from an ordinary self-note.

Data: bench/data/privacy/*.tsv, one note a line, `kind<TAB>note`, kind being the private data the
note holds or "ordinary"; 1,641 notes, about half Chinese, every one a valid self-note. Seven
splits, by when they were written and by whom:

- dev.tsv (447) and heldout.tsv (216): before any rule; the rules were tuned on dev.tsv. heldout
  was not measured while tuning, but its author wrote the rules, so it flatters them;
- fresh.tsv (258): after the rules, measured once as written (93.2% of private notes refused,
  98.2% of ordinary ones accepted), then tuned on for the gaps it showed;
- final.tsv (114): after that tuning, measured once and never tuned on (98.3% and 98.2% when
  written);
- blind.tsv (142): written before the second round of rules (privacy2), measured once as written
  (82.9% and 100.0%: kinds the rules did not know yet, sums with no currency, a lost job); its
  misses were among the classes that round fixed, so it flatters them now;
- redteam.tsv (392): an outside red team's notes, labelled by them but four (the header says
  which and why); 85.2% and 94.5% before that round; tuned on, by class;
- after.tsv (72): written when the second round was done, measured once as written (97.7% and
  96.4%); its two misses (a bracketed 艾特, 破产 said of a design) were then fixed by class. The
  figure closest to a corpus the rules have not seen.

Each note is scanned as `anima note add` scans it (anima.notes.privacy.scan, the built-in word
lists, no words of the person's); tests/test_privacy_corpus.py holds each note to its label.

Figures, per split and per kind: private notes refused (any finding at all: `note add` refuses
it with exit 77), and how many were named as their kind (the refusal message names the first
finding); ordinary notes accepted (no finding). Goal (issue 14): at least 96% of private
notes refused and at least 97% of ordinary ones accepted, on each split; else exit 1.

    python bench/privacy.py [--misses] [FILE...]

--misses lists every private note passed and every ordinary note refused, with what was found.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "privacy")
GOAL_REFUSED, GOAL_ACCEPTED = 96.0, 97.0
SPLITS = ("dev", "heldout", "fresh", "final", "blind", "redteam", "after")
# each split on the rules before the second round (commit 5429ed9): private refused, private notes,
# ordinary accepted, ordinary notes; kept to show what that round changed on the same notes
BEFORE = {"dev": (260, 260, 187, 187), "heldout": (132, 133, 83, 83), "fresh": (145, 147, 110, 111),
          "final": (58, 59, 54, 55), "blind": (68, 82, 60, 60), "redteam": (195, 229, 154, 163),
          "after": (37, 44, 22, 28)}


def load(path: str) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t", 1) for line in f if line.strip() and not line.startswith("#")]
    return [(kind, text) for kind, text in rows]


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def measure(rows, scan) -> tuple[dict, list]:
    """{kind: [notes, judged right, named right]} and the notes judged wrong, with their findings."""
    by_kind: dict[str, list[int]] = {}
    wrong = []
    for kind, text in rows:
        found = scan(text)
        right = bool(found) != (kind == "ordinary")
        counts = by_kind.setdefault(kind, [0, 0, 0])
        counts[0] += 1
        counts[1] += right
        counts[2] += any(f.kind == kind for f in found)
        if not right:
            wrong.append((kind, text, ", ".join(f"{f.kind} {f.match!r}" for f in found)))
    return by_kind, wrong


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the notes judged wrong")
    parser.add_argument("files", nargs="*", default=[os.path.join(DATA, f"{n}.tsv") for n in SPLITS])
    args = parser.parse_args(argv)
    from anima.notes.privacy import scan

    splits = {os.path.basename(path).removesuffix(".tsv"): measure(load(path), scan) for path in args.files}
    kinds = sorted({k for by_kind, _ in splits.values() for k in by_kind} - {"ordinary"})
    print("notes, and the share judged right: private refused, ordinary accepted")
    print(f"{'':14}" + "".join(f"{name:>15}" for name in splits))
    failed = False
    rows: dict[str, list[str]] = {kind: [] for kind in kinds}
    rows.update({"all private": [], "  named right": [], "ordinary": []})
    for by_kind, _ in splits.values():
        for kind in kinds:
            n, right, _ = by_kind.get(kind, [0, 0, 0])
            rows[kind].append(f"{n:>4} {pct(right, n):>7}")
        private = [c for k, c in by_kind.items() if k != "ordinary"]
        n, right, named = (sum(c[i] for c in private) for i in range(3))
        m, accepted, _ = by_kind.get("ordinary", [0, 0, 0])
        rows["all private"].append(f"{n:>4} {pct(right, n):>7}")
        rows["  named right"].append(f"{'':4} {pct(named, n):>7}")
        rows["ordinary"].append(f"{m:>4} {pct(accepted, m):>7}")
        failed |= 100 * right < GOAL_REFUSED * n or 100 * accepted < GOAL_ACCEPTED * m
    for name, cells in rows.items():
        print(f"{name:14}" + "".join(f"{c:>15}" for c in cells))
    print(f"goal, each split: private refused >= {GOAL_REFUSED:g}%, ordinary accepted >= {GOAL_ACCEPTED:g}%: "
          f"{'MISSED' if failed else 'ok'}")
    if any(name in BEFORE for name in splits):
        print("before (the rules of commit 5429ed9) -> now: private refused, ordinary accepted")
    for name, (by_kind, _) in splits.items():
        if name in BEFORE:
            was_right, was_n, was_ok, was_m = BEFORE[name]
            right, n = (sum(c[i] for k, c in by_kind.items() if k != "ordinary") for i in (1, 0))
            m, ok, _ = by_kind.get("ordinary", [0, 0, 0])
            print(f"{name:14}{was_right:>4}/{was_n:<4} {pct(was_right, was_n):>6} -> "
                  f"{right:>4}/{n:<4} {pct(right, n):>6}   {was_ok:>4}/{was_m:<4} {pct(was_ok, was_m):>6} -> "
                  f"{ok:>4}/{m:<4} {pct(ok, m):>6}")
    if args.misses:
        for name, (_, wrong) in splits.items():
            for kind, text, found in wrong:
                print(f"{name}: {kind}: {text}" + (f"  [{found}]" if found else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
