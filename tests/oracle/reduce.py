#!/usr/bin/env python3
"""Shrinks a script that loupe fails on while it keeps failing the same way.

    reduce.py SCRIPT REGEX [LOUPE]

Runs `LOUPE -q FILE` (default ./loupe) and keeps a smaller script when its
stderr still matches REGEX (an extended regex, e.g. "No program to jit").
It deletes whole probes, then single statements (an `if` with its blocks,
a loop with its body) and `else` branches, until nothing more can go, and
prints the result. Statements are found by bracket depth, which fits the
scripts tests/oracle/gen.py writes.
"""
import re
import subprocess
import sys
import tempfile


def fails(text, pattern, loupe):
    with tempfile.NamedTemporaryFile("w", suffix=".bt") as f:
        f.write(text)
        f.flush()
        try:
            p = subprocess.run([loupe, "-q", f.name], capture_output=True,
                               text=True, timeout=30)
        except subprocess.TimeoutExpired:
            return bool(re.search(pattern, "timeout"))
        return bool(re.search(pattern, p.stderr))


def statement_end(text, i):
    """The end of the statement starting at i: after its `;` at depth 0,
    or after the `}` closing its last block (an `else` continues it)."""
    depth = 0
    in_str = False
    j = i
    while j < len(text):
        c = text[j]
        if in_str:
            if c == "\\":
                j += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "({[":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                rest = text[j + 1:].lstrip()
                if not rest.startswith("else"):
                    return j + 1
        elif c == ";" and depth == 0:
            return j + 1
        j += 1
    return None


def candidates(text):
    """Spans to try deleting: statements inside blocks, then else parts."""
    spans = []
    for m in re.finditer(r"[{;}]\s*", text):
        start = m.end()
        if start >= len(text) or text[start] in "}":
            continue
        if text[m.start()] == "}" and not text[start:].startswith(
                ("if", "while", "for", "unroll", "$", "@", "printf", "print",
                 "delete", "let", "_", "++", "--")):
            continue
        end = statement_end(text, start)
        if end:
            spans.append((start, end))
    for m in re.finditer(r"\}\s*else\s*", text):
        end = statement_end(text, m.end()) if not text[m.end():].startswith(
            "{") else None
        if text[m.end():].startswith("{"):
            depth, j = 0, m.end()
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    end = j + 1
                    break
                j += 1
        if end:
            spans.append((m.start() + 1, end))
    # BEGIN { exit(); } stays: without it the probes would attach and run
    keep = text.find("BEGIN { exit(); }")
    spans = [sp for sp in spans
             if keep < 0 or not keep <= sp[0] < keep + 17]
    spans.sort(key=lambda s: s[0] - s[1])     # the longest first
    return spans


def probes(text):
    """Spans of whole probes: a line at column 0 up to its closing `}`
    line (or the line alone when it closes itself)."""
    lines = text.split("\n")
    spans, k = [], 0
    while k < len(lines):
        line = lines[k]
        j = k
        if line and not line.startswith((" ", "}", "BEGIN { exit", "config")):
            if line.rstrip().endswith("{"):
                while j + 1 < len(lines) and lines[j + 1] != "}":
                    j += 1
                j += 1
            spans.append((k, j))
        k = j + 1
    return lines, spans


def trials(text):
    """Smaller scripts, biggest cuts first: whole probes, then top-level
    statements (a line each), then statements and else branches inside."""
    lines, spans = probes(text)
    for k, j in spans:
        yield "\n".join(lines[:k] + lines[j + 1:])
    for k in range(len(lines)):
        if lines[k].startswith("  "):
            yield "\n".join(lines[:k] + lines[k + 1:])
    for s, e in candidates(text):
        yield text[:s] + text[e:]


def main():
    path, pattern = sys.argv[1], sys.argv[2]
    loupe = sys.argv[3] if len(sys.argv) > 3 else "./loupe"
    text = open(path).read()
    if not fails(text, pattern, loupe):
        sys.exit("the script does not fail that way")
    while True:
        smaller = next((t for t in trials(text) if fails(t, pattern, loupe)),
                       None)
        if smaller is None:
            break
        text = smaller
    print(text, end="")


if __name__ == "__main__":
    main()
