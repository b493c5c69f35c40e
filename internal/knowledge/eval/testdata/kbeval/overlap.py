#!/usr/bin/env python3
"""Splits the held-out sets' Chinese questions by whether the page that
answers them shares a rare word with them, and gives keyword search's
figures for each part (docs/retrieval.md, "How far keyword search reaches").

A question's words are the substrings of its Han runs that are CC-CEDICT
words (internal/knowledge/synonyms/zh_en.tsv.gz) and its Latin-letter
tokens of two or more characters; a word is rare when at most 10% of the
pages hold it. Ranks come from `chatpipe eval -v` output, one folder per
set: EVALDIR/<set>/out.txt (a question not listed among the misses was
ranked first).

Usage, from the repository root:
    go build -o /tmp/cp . && K=internal/knowledge/eval/testdata/kbeval
    for s in holdout holdout2 holdout3 holdout4 holdout5 holdout6 holdout7 holdout8; do
      mkdir -p /tmp/ev/$s && /tmp/cp eval -v -questions $K/$s.tsv -docs $K/docs > /tmp/ev/$s/out.txt
    done
    python3 $K/overlap.py $K/docs /tmp/ev
"""
import collections
import glob
import gzip
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DICT = os.path.join(HERE, "../../../synonyms/zh_en.tsv.gz")
SETS = ["holdout"] + [f"holdout{i}" for i in range(2, 9)]
HAN = re.compile(r"[\u4e00-\u9fff]+")


def main(docdir, evaldir):
    words = {line.split("\t")[0] for line in gzip.open(DICT, "rt", encoding="utf-8")}
    docs = {os.path.basename(f)[:-3]: open(f, encoding="utf-8").read().lower()
            for f in glob.glob(os.path.join(docdir, "*.md"))}

    def question_words(q):
        out = set()
        for run in HAN.findall(q):
            for n in (2, 3, 4):
                out.update(run[i:i + n] for i in range(len(run) - n + 1) if run[i:i + n] in words)
        out.update(t for t in re.findall(r"[a-z0-9][a-z0-9._+-]*", q.lower()) if len(t) >= 2)
        return out

    def ranks(s):
        r, misses = {}, False
        for line in open(os.path.join(evaldir, s, "out.txt"), encoding="utf-8"):
            if line.startswith("keyword:"):
                misses = True
            elif line.startswith("keyword+") or not line.strip():
                misses = misses and bool(line.strip())
            m = re.match(r"\s+line (\d+): .*?\((?:rank (\d+)|not found)\)", line)
            if misses and m:
                r[int(m.group(1))] = int(m.group(2)) if m.group(2) else None
        return r

    parts = collections.defaultdict(list)
    for s in SETS:
        rk = ranks(s)
        for n, line in enumerate(open(os.path.join(HERE, s + ".tsv"), encoding="utf-8"), 1):
            if "\t" not in line or line.startswith("#"):
                continue
            q, want = line.rstrip("\n").split("\t")[:2]
            if not HAN.search(q):
                continue
            rare = [w for w in question_words(q) if sum(w in d for d in docs.values()) <= 0.1 * len(docs)]
            shares = any(w in docs.get(x, "") for x in want.split("|") for w in rare)
            parts[shares].append(rk.get(n, 1))
    for shares, r in sorted(parts.items(), reverse=True):
        n = len(r)
        print(f"{'shares a rare word' if shares else 'shares none':20s} {n:4d}"
              f"  R@1 {sum(x == 1 for x in r) / n:.3f}"
              f"  R@3 {sum(x is not None and x <= 3 for x in r) / n:.3f}"
              f"  MRR {sum(1 / x for x in r if x and x <= 10) / n:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
