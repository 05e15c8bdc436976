#!/usr/bin/env python3
"""Checks an SVG flame graph written by loupe --flamegraph.

usage: flamegraph_check.py FILE.svg [PATH=SAMPLES ...] [--zoom NAME]
                           [--search TERM]

Statically: the SVG parses; every frame (<g class="f">) has one <rect>,
one <title> and one <text>; the root spans the whole width; every other
frame lies inside a parent one level below it, and children's widths add
up to at most their parent's; each PATH ("a;b;c", from the root's child)
exists with SAMPLES samples. Then in headless Chromium (the SVG with a
script appended that clicks on the first frame named NAME and searches
for TERM): the page loads with the same frames, the clicked frame spans
the width, frames outside it are hidden, its ancestors stay, and the
frames TERM matches are highlighted with a "Matched:" total.
"""
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = '{http://www.w3.org/2000/svg}'
WIDTH = 1200.0
X0 = 10.0


def fail(msg):
    print('flamegraph_check: ' + msg, file=sys.stderr)
    sys.exit(1)


def frames_of(root):
    out = []
    for g in root.iter(NS + 'g'):
        if 'f' not in (g.get('class') or '').split():
            continue
        rects = g.findall(NS + 'rect')
        titles = g.findall(NS + 'title')
        texts = g.findall(NS + 'text')
        if len(rects) != 1 or len(titles) != 1 or len(texts) != 1:
            fail('a frame without exactly one rect, title and text')
        title = titles[0].text or ''
        m = re.fullmatch(r'(.*) \((\d+) samples, ([0-9.]+)%\)', title)
        if not m:
            fail('bad title %r' % title)
        r = rects[0]
        out.append({'name': m.group(1), 'samples': int(m.group(2)),
                    'd': int(g.get('data-d')), 's': int(g.get('data-s')),
                    'n': int(g.get('data-n')),
                    'x': float(r.get('x')), 'w': float(r.get('width')),
                    'style': g.get('style') or '',
                    'rstyle': r.get('style') or ''})
    return out


def parent_of(f, frames):
    for p in frames:
        if p['d'] == f['d'] - 1 and p['s'] <= f['s'] and \
                f['s'] + f['n'] <= p['s'] + p['n']:
            return p
    return None


def check_static(frames, paths):
    if not frames:
        fail('no frames')
    roots = [f for f in frames if f['d'] == 0]
    if len(roots) != 1 or abs(roots[0]['w'] - WIDTH) > 0.01:
        fail('the root frame does not span the width')
    for f in frames:
        if f['d'] == 0:
            continue
        p = parent_of(f, frames)
        if p is None:
            fail('frame %s has no parent' % f['name'])
        f['parent'] = p
        p.setdefault('kids', []).append(f)
    for f in frames:
        kids = f.get('kids', [])
        if sum(k['w'] for k in kids) > f['w'] + 0.01 * (len(kids) + 1):
            fail('the children of %s are wider than it' % f['name'])
        if sum(k['samples'] for k in kids) > f['samples']:
            fail('the children of %s have more samples' % f['name'])
    for spec in paths:
        path, want = spec.rsplit('=', 1)
        at = roots[0]
        for name in path.split(';'):
            at = next((k for k in at.get('kids', []) if k['name'] == name),
                      None)
            if at is None:
                fail('no path %s' % path)
        if at['samples'] != int(want):
            fail('%s has %d samples, not %s' % (path, at['samples'], want))


def in_browser(svg_path, nframes, zoom, term):
    text = open(svg_path).read()
    script = ('<script type="text/ecmascript"><![CDATA[\n'
              'var z = frames.filter(function (g) {'
              ' return name(g) === %r; })[0];\n'
              'z.dispatchEvent(new MouseEvent("click", {bubbles: true}));\n'
              'search(%r);\n]]></script>\n</svg>' % (zoom, term))
    text = text[:text.rindex('</svg>')] + script
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'zoomed.svg')
        with open(path, 'w') as f:
            f.write(text)
        res = subprocess.run(
            ['chromium', '--headless', '--no-sandbox', '--disable-gpu',
             '--user-data-dir=' + os.path.join(tmp, 'profile'),
             '--dump-dom', 'file://' + path],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    dom = res.stdout.decode()
    try:
        root = ET.fromstring(dom)
    except ET.ParseError as e:
        fail('Chromium\'s DOM does not parse: %s\n%s' % (e, dom[:500]))
    frames = frames_of(root)
    if len(frames) != nframes:
        fail('Chromium shows %d frames, not %d' % (len(frames), nframes))
    z = next(f for f in frames if f['name'] == zoom)
    if abs(z['x'] - X0) > 0.01 or abs(z['w'] - WIDTH) > 0.01:
        fail('the clicked frame does not span the width')
    for f in frames:
        inside = f['d'] >= z['d'] and z['s'] <= f['s'] and \
            f['s'] + f['n'] <= z['s'] + z['n']
        above = f['d'] < z['d'] and f['s'] <= z['s'] and \
            z['s'] + z['n'] <= f['s'] + f['n']
        hidden = 'display: none' in f['style']
        if hidden == (inside or above):
            fail('frame %s is %s after the zoom' %
                 (f['name'], 'hidden' if hidden else 'shown'))
        hit = re.search(term, f['name']) is not None
        if hit != ('230, 0, 230' in f['rstyle'] or '230,0,230' in f['rstyle']):
            fail('frame %s is wrongly (un)highlighted' % f['name'])
    if not re.search(r'Matched: [0-9.]+%', dom):
        fail('no "Matched:" total after the search')


def main():
    args = sys.argv[1:]
    zoom = term = None
    if '--zoom' in args:
        i = args.index('--zoom')
        zoom = args[i + 1]
        del args[i:i + 2]
    if '--search' in args:
        i = args.index('--search')
        term = args[i + 1]
        del args[i:i + 2]
    svg = args[0]
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        fail('%s does not parse: %s' % (svg, e))
    frames = frames_of(root)
    check_static(frames, args[1:])
    if zoom is not None:
        in_browser(svg, len(frames), zoom, term or '')


main()
