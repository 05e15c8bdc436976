#!/usr/bin/env python3
"""Runs the examples of loupe's output that the documentation shows and
checks that loupe prints them today.

An example is marked where it stands, by a comment the reader does not see:

  README.md and other Markdown files:
    <!-- example: CMD -->      the indented block that follows is what CMD
                               prints (stdout and stderr), exactly; a first
                               line "# ..." (the prompt) is left out
    <!-- output: TEXT ::: CMD -->
                               TEXT is quoted in the file (outside comments)
                               and CMD prints it, somewhere in its output
  doc/loupe.8:
    .\\" example: CMD           the .nf/.RS block that follows, as above
    .\\" output: TEXT ::: CMD   as above

CMD runs with bash in a scratch directory, with loupe on PATH (LOUPE, or
the repository's ./loupe) and LOUPE_ROOT set to the repository. Prints
what does not match and exits 1, or exits 0.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOUPE = os.environ.get('LOUPE', os.path.join(ROOT, 'loupe'))
DOCS = ['README.md', 'doc/loupe.8', 'doc/architecture.md', 'bench/README.md']
failures = 0


def fail(where, msg):
    global failures
    failures += 1
    print(f'FAIL {where}: {msg}')


def run(cmd):
    with tempfile.TemporaryDirectory(prefix='loupe-docs.') as tmp:
        os.makedirs(os.path.join(tmp, 'bin'))
        os.symlink(os.path.abspath(LOUPE), os.path.join(tmp, 'bin', 'loupe'))
        env = dict(os.environ, LOUPE_ROOT=ROOT,
                   PATH=os.path.join(tmp, 'bin') + ':' + os.environ['PATH'])
        try:
            p = subprocess.run(['bash', '-c', cmd], cwd=tmp, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            return None
        return p.stdout.decode(errors='replace')


def unroff(line):
    """The text a man page line shows, for the few escapes examples use."""
    for esc, text in (('\\e', '\\'), ('\\-', '-'), ('\\(aq', "'"),
                      ('\\(dq', '"'), ('\\&', ''), ('\\fB', ''),
                      ('\\fR', ''), ('\\fI', ''), ('\\fP', '')):
        line = line.replace(esc, text)
    return line


def markdown_block(lines, i):
    """The indented block starting at or after line i, unindented."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    block = []
    while i < len(lines) and (lines[i].startswith('    ') or not lines[i].strip()):
        block.append(lines[i][4:])
        i += 1
    while block and not block[-1].strip():
        block.pop()
    return block


def roff_block(lines, i):
    while i < len(lines) and lines[i].strip() in ('.nf', '.RS', '.EX', ''):
        i += 1
    block = []
    while i < len(lines) and lines[i].strip() not in ('.RE', '.fi', '.EE'):
        block.append(unroff(lines[i]))
        i += 1
    return block


def check_file(rel):
    path = os.path.join(ROOT, rel)
    if not os.path.exists(path):
        return 0
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    roff = rel.endswith('.8')
    if roff:
        mark = re.compile(r'^\.\\" (example|output): (.*)$')
        shown = '\n'.join(unroff(l) for l in lines if not l.startswith('.\\"'))
    else:
        mark = re.compile(r'^<!-- (example|output): (.*) -->$')
        shown = re.sub(r'<!--.*?-->', '', '\n'.join(lines), flags=re.S)
    count = 0
    for i, line in enumerate(lines):
        m = mark.match(line)
        if not m:
            continue
        count += 1
        where = f'{rel}:{i + 1}'
        if m.group(1) == 'output':
            text, sep, cmd = m.group(2).partition(' ::: ')
            if not sep:
                fail(where, 'an output mark needs "TEXT ::: CMD"')
                continue
            if text not in shown:
                fail(where, f'the file does not quote {text!r}')
            out = run(cmd)
            if out is None:
                fail(where, f'{cmd!r} did not end within 60 s')
            elif text not in out:
                fail(where, f'{cmd!r} does not print {text!r}; it printed:\n{out}')
            continue
        cmd = m.group(2)
        block = roff_block(lines, i + 1) if roff else markdown_block(lines, i + 1)
        if block and block[0].startswith('# '):
            block = block[1:]
        out = run(cmd)
        if out is None:
            fail(where, f'{cmd!r} did not end within 60 s')
            continue
        got = out.rstrip('\n').split('\n')
        if [l.rstrip() for l in got] != [l.rstrip() for l in block]:
            fail(where, f'{cmd!r} prints:\n' + '\n'.join(got) +
                 '\nwhere the file shows:\n' + '\n'.join(block))
    return count


total = sum(check_file(rel) for rel in DOCS)
print(f'{total} examples checked, {failures} failed')
sys.exit(1 if failures or total == 0 else 0)
