/* flamegraph: stack-keyed maps as an interactive SVG (see flamegraph.h). */
#include "output/flamegraph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/encoder.h"
#include "output/folded.h"
#include "util/safe_file.h"

#define FG_WIDTH 1200     /* of the frames; the image adds margins */
#define FG_MARGIN 10
#define FG_FRAME_H 16
#define FG_TOP 44         /* title and buttons */
#define FG_BOTTOM 28      /* the details line */
#define FG_CHAR_W 7.0     /* of a 12px monospace label character */

/* One frame: the stacks through it share the path from the root. */
typedef struct FNode {
  char *name;
  uint64_t samples;
  struct FNode **kids;
  int nkids, cap;
} FNode;

static FNode *fnode_new(const char *name) {
  FNode *n = calloc(1, sizeof *n);
  if (n && !(n->name = strdup(name))) {
    free(n);
    n = NULL;
  }
  return n;
}

static void fnode_free(FNode *n) {
  if (!n) return;
  for (int i = 0; i < n->nkids; i++) fnode_free(n->kids[i]);
  free(n->kids);
  free(n->name);
  free(n);
}

/* The child of n named `name`, added if it is not there; NULL when out of
 * memory. */
static FNode *fnode_child(FNode *n, const char *name) {
  for (int i = n->nkids - 1; i >= 0; i--)
    if (!strcmp(n->kids[i]->name, name)) return n->kids[i];
  if (n->nkids == n->cap) {
    int cap = n->cap ? n->cap * 2 : 4;
    FNode **grown = realloc(n->kids, sizeof(FNode *) * (size_t)cap);
    if (!grown) return NULL;
    n->kids = grown;
    n->cap = cap;
  }
  FNode *k = fnode_new(name);
  if (k) n->kids[n->nkids++] = k;
  return k;
}

typedef struct Collect {
  FNode *root;
  int depth;         /* the deepest frame so far, the root being 0 */
} Collect;

/* A map's stacks, on a frame of its name when several maps are drawn.
 * Entries whose number is 0 or negative are left out. */
static void collect_map(Output *o, const DecodedMap *d) {
  Collect *cl = o->state;
  bool several = o->set_stack_maps > 1;
  FNode *base = several ? fnode_child(cl->root, d->name) : cl->root;
  if (!base) return;
  uint64_t before = base->samples;
  for (int i = 0; i < d->n; i++) {
    uint64_t number = d->entries[i].weight;
    if (number == 0 || (d->weight_signed && (int64_t)number < 0)) continue;
    char **frames;
    int k = folded_entry_frames(&d->entries[i], &frames);
    FNode *at = base;
    at->samples += number;
    for (int j = 0; at && j < k; j++) {
      at = fnode_child(at, frames[j]);
      if (at) at->samples += number;
    }
    if (several + k > cl->depth) cl->depth = several + k;
    folded_frames_free(frames, k);
  }
  if (several) cl->root->samples += base->samples - before;
}

static void collect_begin(Output *o, const MapSym *const *maps, int n,
                          bool at_exit) {
  o->in_map_set = true;
  o->set_stack_maps = output_count_stack_maps(maps, n);
}

/* The flame graph as an encoder of maps: it gathers their stacks in a
 * tree (Output.state), which flamegraph_write draws. */
static const Encoder flamegraph_encoder = {
    .name = "flamegraph",
    .decode = {.frames = true},
    .maps_begin = collect_begin,
    .map = collect_map,
};

static int compare_fnodes(const void *pa, const void *pb) {
  const FNode *a = *(const FNode *const *)pa, *b = *(const FNode *const *)pb;
  return strcmp(a->name, b->name);
}

static void fnode_sort(FNode *n) {
  if (n->nkids > 1) qsort(n->kids, n->nkids, sizeof(FNode *), compare_fnodes);
  for (int i = 0; i < n->nkids; i++) fnode_sort(n->kids[i]);
}

/* The script's stack-keyed maps, in name order; how many. */
static int stack_maps(const Compiled *c, const MapSym **out) {
  int n = 0;
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    if (m->internal || !map_has_stack_key(m)) continue;
    int at = n++;
    while (at > 0 && strcmp(out[at - 1]->name, m->name) > 0) {
      out[at] = out[at - 1];
      at--;
    }
    out[at] = m;
  }
  return n;
}

/* The tree of every stack-keyed map under a root "all"; *depth: its
 * deepest frame. */
static FNode *build_tree(const Compiled *c, const Loaded *l, int *depth) {
  const MapSym **maps = calloc((size_t)c->nmaps + 1, sizeof *maps);
  Collect cl = {.root = fnode_new("all")};
  if (!maps || !cl.root) {
    free(maps);
    fnode_free(cl.root);
    return NULL;
  }
  int n = stack_maps(c, maps);
  Output o = {.enc = &flamegraph_encoder, .state = &cl};
  o.enc->maps_begin(&o, maps, n, true);
  for (int i = 0; i < n; i++)
    output_map(&o, maps[i], &l->maps[maps[i]->id], 0, 1);
  free(maps);
  fnode_sort(cl.root);
  *depth = cl.depth;
  return cl.root;
}

/* ---- SVG ----------------------------------------------------------------- */

/* Text for XML: markup characters escaped, bytes that are not printable
 * ASCII as '?', at most max characters (max < 0: all). */
static void put_xml(const char *s, int max, FILE *f) {
  for (int i = 0; s[i] && (max < 0 || i < max); i++) {
    unsigned char ch = (unsigned char)s[i];
    switch (ch) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(ch >= 0x20 && ch < 0x7f ? ch : '?', f);
    }
  }
}

/* A warm colour from the frame's name, the same for the same name. */
static void frame_color(const char *name, FILE *f) {
  uint32_t h = 2166136261u;
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  fprintf(f, "rgb(%u,%u,%u)", 205 + h % 50, (h >> 8) % 230, (h >> 16) % 55);
}

typedef struct Layout {
  double total;      /* the root's samples */
  int height;        /* of the image */
  FILE *f;
} Layout;

/* Frame n at `depth`, its samples starting at `start` (in samples from
 * the left), then its children. */
static void put_frame(const Layout *lo, const FNode *n, int depth,
                      uint64_t start) {
  double x = FG_MARGIN + (double)start / lo->total * FG_WIDTH;
  double w = (double)n->samples / lo->total * FG_WIDTH;
  int y = lo->height - FG_BOTTOM - (depth + 1) * FG_FRAME_H;
  FILE *f = lo->f;
  fprintf(f, "<g class=\"f\" data-s=\"%" PRIu64 "\" data-n=\"%" PRIu64
          "\" data-d=\"%d\"><title>", start, n->samples, depth);
  put_xml(n->name, -1, f);
  fprintf(f, " (%" PRIu64 " samples, %.2f%%)</title>", n->samples,
          100.0 * (double)n->samples / lo->total);
  fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
          "rx=\"2\" fill=\"", x, y, w, FG_FRAME_H - 1);
  frame_color(n->name, f);
  fprintf(f, "\"/><text x=\"%.2f\" y=\"%d\">", x + 3, y + FG_FRAME_H - 4);
  int fit = (int)((w - 6) / FG_CHAR_W);
  int len = (int)strlen(n->name);
  if (fit >= 3 && len <= fit) {
    put_xml(n->name, -1, f);
  } else if (fit >= 3) {
    put_xml(n->name, fit - 2, f);
    fputs("..", f);
  }
  fputs("</text></g>\n", f);
  for (int i = 0; i < n->nkids; i++) {
    put_frame(lo, n->kids[i], depth + 1, start);
    start += n->kids[i]->samples;
  }
}

/* The script that zooms, searches and shows details; its W and TOTAL
 * are defined before it. */
static const char flame_js[] =
  "var svg = document.documentElement, X0 = 10, CW = 7;\n"
  "var frames = [].slice.call(document.getElementsByClassName('f'));\n"
  "var root = frames[0], term = '';\n"
  "function el(id) { return document.getElementById(id); }\n"
  "function num(g, a) { return parseFloat(g.getAttribute('data-' + a)); }\n"
  "function name(g) {\n"
  "  var t = g.firstElementChild.textContent;\n"
  "  return t.substring(0, t.lastIndexOf(' ('));\n"
  "}\n"
  "function place(g, x, w) {\n"
  "  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
  "  r.setAttribute('x', x.toFixed(2));\n"
  "  r.setAttribute('width', w.toFixed(2));\n"
  "  t.setAttribute('x', (x + 3).toFixed(2));\n"
  "  var fit = Math.floor((w - 6) / CW), s = name(g);\n"
  "  t.textContent = fit < 3 ? '' : s.length <= fit ? s :\n"
  "      s.substring(0, fit - 2) + '..';\n"
  "}\n"
  "function zoom(z) {\n"
  "  var zs = num(z, 's'), zn = num(z, 'n'), zd = num(z, 'd');\n"
  "  frames.forEach(function (g) {\n"
  "    var s = num(g, 's'), n = num(g, 'n'), d = num(g, 'd');\n"
  "    var above = d < zd && s <= zs && s + n >= zs + zn;\n"
  "    var inside = d >= zd && s >= zs && s + n <= zs + zn;\n"
  "    g.style.display = above || inside ? '' : 'none';\n"
  "    g.style.opacity = above ? '0.6' : '';\n"
  "    if (above) place(g, X0, W);\n"
  "    else if (inside) place(g, X0 + (s - zs) / zn * W, n / zn * W);\n"
  "  });\n"
  "  el('unzoom').style.display = z === root ? 'none' : '';\n"
  "}\n"
  "function search(t) {\n"
  "  term = t || '';\n"
  "  var re = null, hits = [];\n"
  "  try { re = new RegExp(term); } catch (e) { re = null; }\n"
  "  frames.forEach(function (g) {\n"
  "    var s = name(g);\n"
  "    var hit = term !== '' && (re ? re.test(s) : s.indexOf(term) >= 0);\n"
  "    g.querySelector('rect').style.fill = hit ? 'rgb(230,0,230)' : '';\n"
  "    g.classList.toggle('hit', hit);\n"
  "    if (hit) hits.push([num(g, 's'), num(g, 'n')]);\n"
  "  });\n"
  "  hits.sort(function (a, b) { return a[0] - b[0]; });\n"
  "  var covered = 0, end = -1;\n"
  "  hits.forEach(function (h) {\n"
  "    var from = Math.max(h[0], end), to = h[0] + h[1];\n"
  "    if (to > from) covered += to - from;\n"
  "    if (to > end) end = to;\n"
  "  });\n"
  "  el('matched').textContent = term === '' ? '' :\n"
  "      'Matched: ' + (100 * covered / TOTAL).toFixed(1) + '%';\n"
  "  el('search').textContent = term === '' ? 'Search' : 'Clear search';\n"
  "  return hits.length;\n"
  "}\n"
  "function ask() {\n"
  "  if (term !== '') { search(''); return; }\n"
  "  var t = prompt('Search frames (regular expression):', '');\n"
  "  if (t) search(t);\n"
  "}\n"
  "svg.addEventListener('click', function (e) {\n"
  "  var g = e.target.closest('g.f');\n"
  "  if (g) zoom(g);\n"
  "});\n"
  "svg.addEventListener('mouseover', function (e) {\n"
  "  var g = e.target.closest('g.f');\n"
  "  el('details').textContent = g ? g.firstElementChild.textContent : '';\n"
  "});\n"
  "el('unzoom').addEventListener('click', function () { zoom(root); });\n"
  "el('search').addEventListener('click', ask);\n"
  "window.addEventListener('keydown', function (e) {\n"
  "  if (e.key === 'f' && (e.ctrlKey || e.metaKey)) {\n"
  "    e.preventDefault();\n"
  "    ask();\n"
  "  }\n"
  "});\n";

static void put_svg(const FNode *root, int depth, const char *title,
                    FILE *f) {
  Layout lo = {.total = (double)root->samples, .f = f,
               .height = FG_TOP + (depth + 1) * FG_FRAME_H + FG_BOTTOM};
  int width = FG_WIDTH + 2 * FG_MARGIN;
  fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
          "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
          width, lo.height, width, lo.height);
  fputs("<style>\n"
        "text { font: 12px monospace; fill: #000; }\n"
        "g.f text { pointer-events: none; }\n"
        "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
        ".button { cursor: pointer; fill: #226; }\n"
        "#title { font-size: 17px; }\n"
        "</style>\n", f);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f4ec\"/>\n"
          "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
          width / 2);
  put_xml(title, -1, f);
  fprintf(f, "</text>\n"
          "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\" "
          "style=\"display: none\">Reset zoom</text>\n"
          "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" "
          "text-anchor=\"end\">Search</text>\n"
          "<text id=\"details\" x=\"%d\" y=\"%d\"></text>\n"
          "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\">"
          "</text>\n", FG_MARGIN, width - FG_MARGIN, FG_MARGIN,
          lo.height - 10, width - FG_MARGIN, lo.height - 10);
  if (root->samples > 0) put_frame(&lo, root, 0, 0);
  fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n"
          "var W = %d, TOTAL = %" PRIu64 ";\n%s]]></script>\n</svg>\n",
          FG_WIDTH, root->samples, flame_js);
}

FILE *flamegraph_open(const Compiled *c, const char *path) {
  bool any = false;
  for (int i = 0; i < c->nmaps; i++)
    any |= !c->maps[i]->internal && map_has_stack_key(c->maps[i]);
  if (!any) {
    fprintf(stderr, "loupe: --flamegraph: the script has no map keyed by "
            "kstack or ustack (e.g. @[kstack] = count())\n");
    return NULL;
  }
  char why[SAFE_WHY_MAX];
  FILE *f = safe_fopen_write(path, why, sizeof why);
  if (!f) fprintf(stderr, "loupe: --flamegraph: cannot write %s: %s\n", path,
                  why);
  return f;
}

int flamegraph_write(const Compiled *c, const Loaded *l, FILE *f,
                     const char *path) {
  int depth = 0;
  FNode *root = build_tree(c, l, &depth);
  if (root) put_svg(root, depth, "Flame Graph", f);
  fnode_free(root);
  if (!root || ferror(f) | (fclose(f) != 0)) {
    fprintf(stderr, "loupe: --flamegraph: cannot write %s\n", path);
    return -1;
  }
  return 0;
}
