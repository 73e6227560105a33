#!/usr/bin/env python3
"""The manual's sentences, measured as the manual's goals state them:

    python3 benches/prose.py [FILE...]      (default: README.md and docs/*.md)

Code blocks (fenced with ```) and tables are left out; a heading and a list item each
start a new paragraph; a sentence ends at '.', '!' or '?' followed
by white space (or the end of a paragraph); only sentences of more than three words are
counted. Prints, per file and in all: the lines, the words, the median sentence's words,
the share of sentences over 40 words, and opening parentheses per 100 words."""
import glob
import os
import re
import statistics
import sys

END = re.compile(r"(?<=[.!?])\s+")


def prose(text):
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|"):
            continue
        if re.match(r"\s*(#+ |[-*] |\d+\. )", line):
            out.append("")
        out.append(line)
    return "\n".join(out)


def measure(text):
    body = prose(text)
    paragraphs = re.split(r"\n\s*\n", body)
    sentences = []
    for p in paragraphs:
        flat = " ".join(p.split())
        sentences += [s for s in END.split(flat) if s]
    lengths = [len(s.split()) for s in sentences if len(s.split()) > 3]
    words = len(body.split())
    parens = body.count("(")
    return lengths, words, parens


def line(name, lines, lengths, words, parens):
    med = statistics.median(lengths) if lengths else 0
    over = sum(1 for n in lengths if n > 40) / len(lengths) if lengths else 0
    per = 100 * parens / words if words else 0
    print(f"{name:32} {lines:6} lines {words:7} words  median {med:4.0f}  over 40: {100 * over:4.1f}%"
          f"  parens/100w {per:4.2f}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = sys.argv[1:] or [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    all_l, all_w, all_p, all_n = [], 0, 0, 0
    for f in files:
        text = open(f, encoding="utf-8").read()
        lengths, words, parens = measure(text)
        n = text.count("\n")
        line(os.path.relpath(f, root), n, lengths, words, parens)
        all_l += lengths
        all_w += words
        all_p += parens
        all_n += n
    line("all", all_n, all_l, all_w, all_p)


if __name__ == "__main__":
    main()
