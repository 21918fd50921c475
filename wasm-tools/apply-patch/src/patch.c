/*
 * Unified diff parser for apply-patch. See patch.h.
 *
 * What it follows from git apply (apply.c):
 * - Text before the first file header, and between sections, is skipped
 *   (a commit message, `git format-patch` mail headers).
 * - A hunk ends by the counts in its @@ header, never by what a line looks
 *   like: "--- x" inside a hunk is a removed "-- x".
 * - "\ No newline at end of file" takes the '\n' off the line before it.
 * - Names: rename/copy from/to lines first (they carry no a/ b/ prefix, so
 *   one component less is stripped), then the ---/+++ lines, then the
 *   `diff --git` line split where both halves name the same path. Names
 *   may be C-quoted (git's core.quotePath); unquoted names end at a tab.
 * - Header lines may end in "\r" (a patch saved with CRLF); hunk lines keep
 *   theirs, since it is file content.
 * The name decoding is the same as diff-summary's (wasm-tools/diff-summary/
 * src/diff.c); it is repeated here rather than shared because that parser
 * counts lines and throws content away, and its output must stay
 * byte-identical.
 */
#include "patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib-text/text.h"

typedef struct {
  const char *s;
  size_t n;
} slice;

static int starts(slice l, const char *p) {
  size_t k = strlen(p);
  return l.n >= k && memcmp(l.s, p, k) == 0;
}

static slice after(slice l, size_t k) { return (slice){l.s + k, l.n - k}; }

static slice trim_cr(slice l) {
  if (l.n && l.s[l.n - 1] == '\r') l.n--;
  return l;
}

/* git's C-quoted name, from the opening quote; NULL when not closed. */
static char *unquote(const char *s, size_t n, size_t *used) {
  char *out = lt_xmalloc(n + 1);
  size_t w = 0;
  for (size_t i = 1; i < n; i++) {
    char c = s[i];
    if (c == '"') {
      out[w] = '\0';
      *used = i + 1;
      return out;
    }
    if (c != '\\') {
      out[w++] = c;
      continue;
    }
    if (++i >= n) break;
    c = s[i];
    switch (c) {
      case 'a': out[w++] = '\a'; break;
      case 'b': out[w++] = '\b'; break;
      case 'f': out[w++] = '\f'; break;
      case 'n': out[w++] = '\n'; break;
      case 'r': out[w++] = '\r'; break;
      case 't': out[w++] = '\t'; break;
      case 'v': out[w++] = '\v'; break;
      case '0': case '1': case '2': case '3':
      case '4': case '5': case '6': case '7': {
        unsigned v = 0;
        int k = 0;
        while (k < 3 && i < n && s[i] >= '0' && s[i] <= '7') {
          v = v * 8 + (unsigned)(s[i] - '0');
          i++;
          k++;
        }
        i--;
        out[w++] = (char)(v & 0xFF);
        break;
      }
      default: out[w++] = c; break;
    }
  }
  free(out);
  return NULL;
}

/* A name on a ---/+++ or rename line: quoted, or raw up to a tab. */
static char *parse_name(slice v) {
  v = trim_cr(v);
  if (v.n && v.s[0] == '"') {
    size_t used;
    char *q = unquote(v.s, v.n, &used);
    if (q) return q;
  }
  const char *tab = memchr(v.s, '\t', v.n);
  size_t n = tab ? (size_t)(tab - v.s) : v.n;
  return lt_dupn(v.s, n);
}

/* Takes `strip` leading components off; NULL when there are not enough. */
static char *strip_name(const char *name, int strip) {
  const char *s = name;
  for (int i = 0; i < strip; i++) {
    const char *slash = strchr(s, '/');
    if (!slash) return NULL;
    s = slash + 1;
    while (*s == '/') s++;
  }
  return lt_dupn(s, strlen(s));
}

static int is_devnull(const char *s) { return strcmp(s, "/dev/null") == 0; }

/* Splits the `diff --git` names. Quoted halves are decoded; two unquoted
 * names are split where both, stripped, are the same path. */
static void git_line_names(slice v, int strip, char **a, char **b) {
  *a = *b = NULL;
  v = trim_cr(v);
  if (v.n && v.s[0] == '"') {
    size_t used;
    char *first = unquote(v.s, v.n, &used);
    if (!first || used >= v.n || v.s[used] != ' ') {
      free(first);
      return;
    }
    char *second = parse_name(after(v, used + 1));
    *a = strip_name(first, strip);
    *b = strip_name(second, strip);
    free(first);
    free(second);
    return;
  }
  /* First name unquoted: the second may be quoted. */
  const char *q = memchr(v.s, '"', v.n);
  if (q && q > v.s && q[-1] == ' ') {
    char *first = lt_dupn(v.s, (size_t)(q - 1 - v.s));
    char *second = parse_name((slice){q, v.n - (size_t)(q - v.s)});
    *a = strip_name(first, strip);
    *b = strip_name(second, strip);
    free(first);
    free(second);
    return;
  }
  for (size_t i = 1; i + 1 < v.n; i++) {
    if (v.s[i] != ' ') continue;
    char *x = lt_dupn(v.s, i), *y = lt_dupn(v.s + i + 1, v.n - i - 1);
    char *sx = strip_name(x, strip), *sy = strip_name(y, strip);
    free(x);
    free(y);
    if (sx && sy && strcmp(sx, sy) == 0) {
      *a = sx;
      *b = sy;
      return;
    }
    free(sx);
    free(sy);
  }
}

static int parse_num(slice *v, size_t *out) {
  size_t k = 0, n = 0;
  while (k < v->n && v->s[k] >= '0' && v->s[k] <= '9') {
    if (n > (size_t)-1 / 10 - 10) return -1;
    n = n * 10 + (size_t)(v->s[k] - '0');
    k++;
  }
  if (k == 0) return -1;
  *out = n;
  *v = after(*v, k);
  return 0;
}

/* "@@ -os[,oc] +ns[,nc] @@..." */
static int parse_hunk_header(slice l, hunk *h) {
  slice v = after(l, 3);
  if (!starts(v, "-")) return -1;
  v = after(v, 1);
  if (parse_num(&v, &h->os)) return -1;
  h->oc = 1;
  if (starts(v, ",")) {
    v = after(v, 1);
    if (parse_num(&v, &h->oc)) return -1;
  }
  if (!starts(v, " +")) return -1;
  v = after(v, 2);
  if (parse_num(&v, &h->ns)) return -1;
  h->nc = 1;
  if (starts(v, ",")) {
    v = after(v, 1);
    if (parse_num(&v, &h->nc)) return -1;
  }
  if (!starts(v, " @@")) return -1;
  return 0;
}

typedef struct {
  const char *text;
  size_t len, pos, lineno;
} reader;

/* The next line without its '\n'; *had_nl tells whether it had one. */
static int next_line(reader *r, slice *l, int *had_nl) {
  if (r->pos >= r->len) return 0;
  const char *s = r->text + r->pos;
  const char *nl = memchr(s, '\n', r->len - r->pos);
  size_t n = nl ? (size_t)(nl - s) : r->len - r->pos;
  *l = (slice){s, n};
  *had_nl = nl != NULL;
  r->pos += n + (nl ? 1 : 0);
  r->lineno++;
  return 1;
}

static int peek_line(const reader *r, slice *l) {
  reader c = *r;
  int nl;
  return next_line(&c, l, &nl);
}

static void set_mode(char *dst, slice v) {
  v = trim_cr(v);
  size_t n = v.n < 7 ? v.n : 7;
  memcpy(dst, v.s, n);
  dst[n] = '\0';
}

#define FAIL(...)                            \
  do {                                       \
    snprintf(err, err_size, __VA_ARGS__);    \
    return -1;                               \
  } while (0)

static int read_hunks(reader *r, fpatch *f, char *err, size_t err_size) {
  slice l;
  while (peek_line(r, &l) && starts(l, "@@ -")) {
    int nl;
    next_line(r, &l, &nl);
    hunk h = {0};
    h.patch_line = r->lineno;
    if (parse_hunk_header(l, &h)) FAIL("line %zu: malformed hunk header: %.100s", r->lineno, l.s);
    size_t cap = h.oc + h.nc + 1;
    h.lines = lt_xmalloc(cap * sizeof *h.lines);
    size_t old_left = h.oc, new_left = h.nc;
    while (old_left || new_left) {
      if (!next_line(r, &l, &nl))
        FAIL("line %zu: the patch ends inside hunk #%zu of %s (its header promised %zu more old and %zu more new lines)",
             r->lineno, f->nhunks + 1, f->new_path ? f->new_path : f->old_path, old_left, new_left);
      char mark = l.n ? l.s[0] : ' '; /* an empty line is an empty context line */
      if (mark == '\\') {
        if (h.count && h.lines[h.count - 1].n && h.lines[h.count - 1].s[h.lines[h.count - 1].n - 1] == '\n')
          h.lines[h.count - 1].n--;
        continue;
      }
      if (mark != ' ' && mark != '-' && mark != '+')
        FAIL("line %zu: hunk #%zu of %s is corrupt: a line starting with '%c' where a ' ', '-' or '+' line was expected "
             "(%zu old and %zu new lines still due)",
             r->lineno, f->nhunks + 1, f->new_path ? f->new_path : f->old_path, mark, old_left, new_left);
      if ((mark != '+' && old_left == 0) || (mark != '-' && new_left == 0))
        FAIL("line %zu: hunk #%zu of %s is corrupt: more %s lines than its @@ header counts", r->lineno, f->nhunks + 1,
             f->new_path ? f->new_path : f->old_path, mark == '+' ? "new" : mark == '-' ? "old" : "context");
      if (mark != '+') old_left--;
      if (mark != '-') new_left--;
      hline *hl = &h.lines[h.count++];
      hl->mark = mark;
      hl->s = l.n ? l.s + 1 : l.s;
      hl->n = (l.n ? l.n - 1 : 0) + (nl ? 1 : 0);
    }
    /* A "\ No newline" right after the last counted line. */
    if (peek_line(r, &l) && starts(l, "\\")) {
      next_line(r, &l, &nl);
      if (h.count && h.lines[h.count - 1].n && h.lines[h.count - 1].s[h.lines[h.count - 1].n - 1] == '\n')
        h.lines[h.count - 1].n--;
    }
    f->hunks = lt_xrealloc(f->hunks, (f->nhunks + 1) * sizeof *f->hunks);
    f->hunks[f->nhunks++] = h;
  }
  return 0;
}

static fpatch *push(patch *p) {
  if (p->count == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 8;
    p->files = lt_xrealloc(p->files, p->cap * sizeof *p->files);
  }
  fpatch *f = &p->files[p->count++];
  memset(f, 0, sizeof *f);
  return f;
}

/* Names from ---/+++ (already stripped); NULL for /dev/null. */
static int minus_plus(reader *r, int strip, char **minus, char **plus, char *err, size_t err_size) {
  slice l;
  int nl;
  next_line(r, &l, &nl);
  char *m = parse_name(after(l, 4));
  next_line(r, &l, &nl);
  char *p = parse_name(after(l, 4));
  *minus = is_devnull(m) ? NULL : strip_name(m, strip);
  *plus = is_devnull(p) ? NULL : strip_name(p, strip);
  if ((!is_devnull(m) && !*minus) || (!is_devnull(p) && !*plus))
    FAIL("line %zu: cannot strip %d leading component%s from \"%s\" (try a smaller strip)", r->lineno, strip,
         strip == 1 ? "" : "s", !is_devnull(m) && !*minus ? m : p);
  free(m);
  free(p);
  return 0;
}

int patch_parse(const char *text, size_t len, int strip, patch *out, char *err, size_t err_size) {
  reader r = {text, len, 0, 0};
  slice l, l2;
  int nl;
  memset(out, 0, sizeof *out);
  while (peek_line(&r, &l)) {
    if (starts(l, "diff --git ")) {
      next_line(&r, &l, &nl);
      fpatch *f = push(out);
      f->is_git = 1;
      f->patch_line = r.lineno;
      char *ga, *gb;
      git_line_names(after(l, 11), strip, &ga, &gb);
      char *from = NULL, *to = NULL;
      /* Extended header lines. */
      while (peek_line(&r, &l)) {
        slice t = trim_cr(l);
        if (starts(t, "old mode ")) set_mode(f->old_mode, after(t, 9));
        else if (starts(t, "new mode ")) set_mode(f->new_mode, after(t, 9));
        else if (starts(t, "deleted file mode ")) {
          f->is_delete = 1;
          set_mode(f->old_mode, after(t, 18));
        } else if (starts(t, "new file mode ")) {
          f->is_new = 1;
          set_mode(f->new_mode, after(t, 14));
        } else if (starts(t, "rename from ") || starts(t, "copy from ")) {
          int ren = starts(t, "rename");
          if (ren) f->is_rename = 1;
          else f->is_copy = 1;
          char *n = parse_name(after(t, ren ? 12 : 10));
          free(from);
          from = strip_name(n, strip > 0 ? strip - 1 : 0);
          free(n);
        } else if (starts(t, "rename to ") || starts(t, "copy to ")) {
          int ren = starts(t, "rename");
          char *n = parse_name(after(t, ren ? 10 : 8));
          free(to);
          to = strip_name(n, strip > 0 ? strip - 1 : 0);
          free(n);
        } else if (starts(t, "index ")) {
          const char *sp = memchr(t.s + 6, ' ', t.n - 6);
          if (sp) set_mode(f->index_mode, (slice){sp + 1, t.n - (size_t)(sp + 1 - t.s)});
        } else if (starts(t, "similarity index ") || starts(t, "dissimilarity index ")) {
          /* nothing to apply */
        } else if (starts(t, "Binary files ") || starts(t, "GIT binary patch")) {
          f->binary = 1;
        } else if (starts(t, "literal ") || starts(t, "delta ") || (f->binary && t.n > 0 && !starts(t, "diff "))) {
          /* the base85 body of a binary patch */
        } else {
          break;
        }
        next_line(&r, &l, &nl);
      }
      char *minus = NULL, *plus = NULL;
      int have_names = 0;
      if (peek_line(&r, &l) && starts(l, "--- ")) {
        reader c = r;
        next_line(&c, &l, &nl);
        if (next_line(&c, &l2, &nl) && starts(l2, "+++ ")) {
          if (minus_plus(&r, strip, &minus, &plus, err, err_size)) return -1;
          have_names = 1;
        }
      }
      if (f->is_rename || f->is_copy) {
        f->old_path = from;
        f->new_path = to;
      } else if (have_names) {
        f->old_path = minus ? minus : (f->is_new ? NULL : gb);
        f->new_path = plus ? plus : (f->is_delete ? NULL : ga);
        if (!f->old_path && !f->is_new) f->old_path = plus;
        if (!f->new_path && !f->is_delete) f->new_path = minus;
      } else {
        f->old_path = f->is_new ? NULL : ga;
        f->new_path = f->is_delete ? NULL : gb;
      }
      if (f->is_new) f->old_path = NULL;
      if (f->is_delete) f->new_path = NULL;
      if (!f->old_path && !f->new_path)
        FAIL("line %zu: cannot tell which file the section starting here changes (ambiguous names on the diff --git "
             "line and no ---/+++ lines)",
             f->patch_line);
      if ((f->is_rename || f->is_copy) && (!f->old_path || !f->new_path))
        FAIL("line %zu: a rename or copy without both its from and to names", f->patch_line);
      if (read_hunks(&r, f, err, err_size)) return -1;
      continue;
    }
    if (starts(l, "--- ")) {
      reader c = r;
      next_line(&c, &l, &nl);
      if (next_line(&c, &l2, &nl) && starts(l2, "+++ ") && peek_line(&c, &l2) && starts(l2, "@@ -")) {
        fpatch *f = push(out);
        f->patch_line = r.lineno + 1;
        char *minus, *plus;
        if (minus_plus(&r, strip, &minus, &plus, err, err_size)) return -1;
        f->old_path = minus;
        f->new_path = plus;
        f->is_new = minus == NULL;
        f->is_delete = plus == NULL;
        if (!minus && !plus) FAIL("line %zu: both names are /dev/null", f->patch_line);
        if (read_hunks(&r, f, err, err_size)) return -1;
        continue;
      }
    }
    if (starts(l, "@@ -"))
      FAIL("line %zu: a hunk outside any file section (no diff --git or ---/+++ header before it)", r.lineno + 1);
    next_line(&r, &l, &nl); /* anything else between sections is skipped */
  }
  return 0;
}
