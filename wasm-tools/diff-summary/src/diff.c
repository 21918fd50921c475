/*
 * Unified diff reader. See diff.h.
 *
 * Design notes (the parts of git's output that are easy to get wrong):
 *
 * - Inside a hunk, lines are content whatever they look like: a removed
 *   line "-- foo" prints as "--- foo", an added "++ x" as "+++ x". The only
 *   reliable way to know where a hunk ends is the line counts in its
 *   "@@ -a,b +c,d @@" header, so we count them down and only look for
 *   headers once they reach zero.
 * - "\ No newline at end of file" may appear in the middle of a hunk
 *   (between the "-" and "+" versions of a last line); it counts as nothing.
 * - CRLF files: the "\r" is part of the line's content; only header lines
 *   are trimmed of a trailing "\r" (a diff saved with CRLF endings).
 * - Names: git C-quotes a name that has control characters, '"', '\' or
 *   bytes >= 0x80 (core.quotePath), each name of a pair independently, so
 *   `diff --git "a/\303\251.txt" b/plain.txt` happens. Unquoted names may
 *   contain spaces, which makes the `diff --git` line ambiguous; git then
 *   adds a tab after names with spaces on the ---/+++ lines. We prefer, in
 *   order: rename/copy from/to lines, ---/+++ lines, the `diff --git` line
 *   (split where both halves name the same path, as git apply does).
 * - Sections without hunks are normal: pure renames, mode changes, empty
 *   new/deleted files, binary files.
 * - A type change (symlink <-> file) prints as a "deleted file" section and
 *   a "new file" section for the same path; numstat counts it as one file.
 */
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Octopus merges can have many parents; beyond this a combined hunk is
 * reported as malformed rather than tracked. */
#define MAX_PARENTS 16

enum { IN_NONE, IN_HEADER, IN_BODY, IN_HUNK, IN_BINARY };

typedef struct {
  const char *s;
  size_t n;
} slice;

/* Everything known about the file section being read. */
typedef struct {
  int active;
  int is_git;    /* started by "diff --git" / "diff --cc" */
  int parents;   /* 1 for ordinary diffs, 2+ for combined, 0 = not yet known */
  char *git_a, *git_b; /* names from the "diff --git" line, prefixes removed */
  char *minus, *plus;  /* names from the ---/+++ lines, prefixes removed */
  char *from, *to;     /* rename/copy from/to */
  int seen_names;      /* ---/+++ already read for this section */
  int is_new, is_deleted, is_rename, is_copy, is_binary;
  char old_mode[8], new_mode[8];
  char deleted_mode[8], created_mode[8]; /* "deleted/new file mode" */
  uint64_t additions, deletions, hunks;
  uint64_t old_left[MAX_PARENTS], new_left; /* lines left in current hunk */
  /* Since the last complete hunk: a line that is in no hunk was read (git
   * apply ends the patch there, so a later @@ is an error), and whether a
   * problem was already reported for it. */
  int stray, skipping;
} pending;

/* Problems from this index on belong to the section being read; finish()
 * names them once the section's path is known. */
static size_t unnamed_problems;

/* The last file pushed was a git "deleted file" section; remembered so the
 * "new file" section git prints right after it for the same path (a type
 * change, e.g. symlink -> file) can be merged into one entry, as numstat
 * and name-status ("T") report it. */
static struct {
  int valid;
  char mode[8];
} last_delete;

static void problem(diff_result *out, const pending *f, uint64_t line,
                    problem_kind kind) {
  if (out->problem_count == MAX_PROBLEMS) return;
  diff_problem *p = &out->problems[out->problem_count++];
  p->path = NULL;
  p->line = line;
  p->kind = kind;
  p->old_missing = kind <= PB_BAD_LINE ? f->old_left[0] : 0;
  p->new_missing = kind <= PB_BAD_LINE ? f->new_left : 0;
}

const char *status_name(file_status s) {
  static const char *const names[ST_COUNT] = {
      "added", "deleted", "modified", "renamed", "copied", "binary"};
  return (unsigned)s < ST_COUNT ? names[s] : "modified";
}

const char *problem_name(problem_kind k) {
  static const char *const names[PB_COUNT] = {
      "truncated", "short_hunk", "bad_line", "bad_hunk_header", "extra_lines"};
  return (unsigned)k < PB_COUNT ? names[k] : "bad_line";
}

/* ---- small string helpers -------------------------------------------- */

static int starts(slice l, const char *prefix) {
  size_t k = strlen(prefix);
  return l.n >= k && memcmp(l.s, prefix, k) == 0;
}

static int ends(slice l, const char *suffix) {
  size_t k = strlen(suffix);
  return l.n >= k && memcmp(l.s + l.n - k, suffix, k) == 0;
}

static slice after(slice l, size_t k) {
  slice r = {l.s + k, l.n - k};
  return r;
}

static char *dupn(const char *s, size_t n) {
  char *r = malloc(n + 1);
  if (!r) corral_fail("out of memory");
  memcpy(r, s, n);
  r[n] = '\0';
  return r;
}

static int is_devnull(const char *s) { return s && strcmp(s, "/dev/null") == 0; }

static int has_prefix(const char *s, const char *p) {
  return s && strncmp(s, p, strlen(p)) == 0;
}

/* Decodes a git C-quoted name starting at the opening quote. Returns a
 * heap string (possibly with any bytes, even NUL-free invalid UTF-8) and
 * the number of input bytes used including both quotes, or NULL if there
 * is no closing quote. */
static char *unquote(const char *s, size_t n, size_t *used) {
  char *out = malloc(n + 1); /* decoding never lengthens */
  if (!out) corral_fail("out of memory");
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
        /* git always writes three octal digits; accept one to three. */
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
      default: out[w++] = c; break; /* \" \\ and anything unknown */
    }
  }
  free(out);
  return NULL;
}

/* A name field on a header line: quoted, or raw up to the first tab (git
 * writes a tab after names containing spaces; diff -u writes one before
 * the timestamp). */
static char *parse_name(slice v) {
  if (v.n && v.s[0] == '"') {
    size_t used;
    char *q = unquote(v.s, v.n, &used);
    if (q) return q;
  }
  const char *tab = memchr(v.s, '\t', v.n);
  return dupn(v.s, tab ? (size_t)(tab - v.s) : v.n);
}

static void drop_prefix(char **name, size_t k) {
  if (!*name) return;
  memmove(*name, *name + k, strlen(*name + k) + 1);
}

/* Removes git's "a/" and "b/" when the pair uses them (or is /dev/null),
 * so a --no-prefix diff of a directory named "a" keeps its path. */
static void strip_pair(char **old_name, char **new_name) {
  int old_ok = !*old_name || is_devnull(*old_name) || has_prefix(*old_name, "a/");
  int new_ok = !*new_name || is_devnull(*new_name) || has_prefix(*new_name, "b/");
  if (!old_ok || !new_ok) return;
  if (has_prefix(*old_name, "a/")) drop_prefix(old_name, 2);
  if (has_prefix(*new_name, "b/")) drop_prefix(new_name, 2);
}

/* Splits "X<sep>Y" where X and Y name the same path (after a/ b/), the
 * only split of an ambiguous unquoted pair that can be trusted. */
static int split_same(slice v, const char *sep, char **a, char **b) {
  size_t m = strlen(sep);
  if (v.n < m || (v.n - m) % 2) return 0;
  size_t k = (v.n - m) / 2;
  if (memcmp(v.s + k, sep, m) != 0) return 0;
  char *x = dupn(v.s, k), *y = dupn(v.s + k + m, k);
  strip_pair(&x, &y);
  if (strcmp(x, y) == 0) {
    *a = x;
    *b = y;
    return 1;
  }
  free(x);
  free(y);
  return 0;
}

/* Names on a "diff --git A B" line. Either name may be quoted. */
static void parse_git_names(pending *f, slice v) {
  char *a = NULL, *b = NULL;
  size_t used;
  if (v.n && v.s[0] == '"') {
    a = unquote(v.s, v.n, &used);
    if (a && used < v.n && v.s[used] == ' ') {
      slice rest = after(v, used + 1);
      b = parse_name(rest);
    }
  } else if (v.n && v.s[v.n - 1] == '"') {
    /* Unquoted old name, quoted new name: find the quote that opens a
     * string ending exactly at the end of the line. */
    for (size_t i = 0; i + 1 < v.n && !b; i++) {
      if (v.s[i] != ' ' || v.s[i + 1] != '"') continue;
      char *t = unquote(v.s + i + 1, v.n - i - 1, &used);
      if (t && used == v.n - i - 1) {
        a = dupn(v.s, i);
        b = t;
      } else {
        free(t);
      }
    }
  }
  if (a && b) {
    strip_pair(&a, &b);
  } else {
    free(a);
    free(b);
    a = b = NULL;
    if (!split_same(v, " ", &a, &b)) {
      /* A rename of unquoted names with spaces: ambiguous, but the rename
       * lines will name both sides. Keep a best guess for odd inputs. */
      const char *sp = NULL;
      for (size_t i = 0; i + 2 < v.n; i++)
        if (v.s[i] == ' ' && v.s[i + 1] == 'b' && v.s[i + 2] == '/') {
          sp = v.s + i;
          break;
        }
      if (sp) {
        a = dupn(v.s, (size_t)(sp - v.s));
        b = dupn(sp + 1, v.n - (size_t)(sp - v.s) - 1);
      } else {
        a = dupn(v.s, v.n);
        b = dupn(v.s, v.n);
      }
      strip_pair(&a, &b);
    }
  }
  f->git_a = a;
  f->git_b = b;
}

/* ---- file sections ----------------------------------------------------- */

static void clear(pending *f) {
  free(f->git_a);
  free(f->git_b);
  free(f->minus);
  free(f->plus);
  free(f->from);
  free(f->to);
  memset(f, 0, sizeof *f);
}

static void push(diff_result *out, const diff_file *d) {
  if (out->count == out->cap) {
    size_t ncap = out->cap ? out->cap * 2 : 16;
    diff_file *nf = realloc(out->files, ncap * sizeof *nf);
    if (!nf) corral_fail("out of memory");
    out->files = nf;
    out->cap = ncap;
  }
  out->files[out->count++] = *d;
}

/* Closes the current section and appends its file to `out`. */
static void finish(pending *f, diff_result *out) {
  if (!f->active) return;
  if (is_devnull(f->minus)) f->is_new = 1;
  if (is_devnull(f->plus)) f->is_deleted = 1;
  /* Most trusted first: rename/copy lines, ---/+++ lines, diff --git. */
  const char *old_name = f->from;
  if (!old_name) old_name = f->minus && !is_devnull(f->minus) ? f->minus : f->git_a;
  const char *new_name = f->to;
  if (!new_name) new_name = f->plus && !is_devnull(f->plus) ? f->plus : f->git_b;
  const char *path = f->is_deleted ? (old_name ? old_name : new_name)
                                   : (new_name ? new_name : old_name);
  diff_file d;
  memset(&d, 0, sizeof d);
  d.path = dupn(path ? path : "", path ? strlen(path) : 0);
  if ((f->is_rename || f->is_copy) && old_name)
    d.old_path = dupn(old_name, strlen(old_name));
  d.binary = f->is_binary;
  /* git's numstat reports binary files as "-\t-": no line counts. */
  d.additions = f->is_binary ? 0 : f->additions;
  d.deletions = f->is_binary ? 0 : f->deletions;
  d.hunks = f->is_binary ? 0 : f->hunks;
  if (f->is_binary) d.status = ST_BINARY;
  else if (f->is_copy) d.status = ST_COPIED;
  else if (f->is_rename) d.status = ST_RENAMED;
  else if (f->is_new) d.status = ST_ADDED;
  else if (f->is_deleted) d.status = ST_DELETED;
  else d.status = ST_MODIFIED;
  if (f->old_mode[0] && f->new_mode[0] && strcmp(f->old_mode, f->new_mode)) {
    memcpy(d.old_mode, f->old_mode, sizeof d.old_mode);
    memcpy(d.new_mode, f->new_mode, sizeof d.new_mode);
  }

  diff_file *prev = out->count ? &out->files[out->count - 1] : NULL;
  int folded = last_delete.valid && f->is_git && f->is_new && !f->is_rename &&
               !f->is_copy && prev && strcmp(prev->path, d.path) == 0;
  for (; unnamed_problems < out->problem_count; unnamed_problems++)
    out->problems[unnamed_problems].path = dupn(d.path, strlen(d.path));
  if (folded) {
    /* Type change: fold the "new file" half into the "deleted" half. */
    prev->binary = prev->binary || d.binary;
    prev->status = prev->binary ? ST_BINARY : ST_MODIFIED;
    prev->additions = prev->binary ? 0 : prev->additions + d.additions;
    prev->deletions = prev->binary ? 0 : prev->deletions;
    prev->hunks = prev->binary ? 0 : prev->hunks + d.hunks;
    memcpy(prev->old_mode, last_delete.mode, sizeof prev->old_mode);
    memcpy(prev->new_mode, f->created_mode, sizeof prev->new_mode);
    free(d.path);
    free(d.old_path);
    last_delete.valid = 0;
  } else if (f->is_git && f->is_deleted && f->deleted_mode[0]) {
    push(out, &d);
    last_delete.valid = 1;
    memcpy(last_delete.mode, f->deleted_mode, sizeof last_delete.mode);
  } else {
    push(out, &d);
    last_delete.valid = 0;
  }
  clear(f);
}

static void copy_mode(char dst[8], slice v) {
  size_t k = 0;
  while (k < v.n && k < 7 && v.s[k] >= '0' && v.s[k] <= '7') {
    dst[k] = v.s[k];
    k++;
  }
  dst[k] = '\0';
}

/* Extended header lines between "diff --git" and the first hunk. */
static void git_header_line(pending *f, slice h, int *state) {
  if (starts(h, "old mode ")) copy_mode(f->old_mode, after(h, 9));
  else if (starts(h, "new mode ")) copy_mode(f->new_mode, after(h, 9));
  else if (starts(h, "deleted file mode ")) {
    f->is_deleted = 1;
    copy_mode(f->deleted_mode, after(h, 18));
  } else if (starts(h, "new file mode ")) {
    f->is_new = 1;
    copy_mode(f->created_mode, after(h, 14));
  }
  else if (starts(h, "rename from ")) {
    free(f->from);
    f->from = parse_name(after(h, 12));
    f->is_rename = 1;
  } else if (starts(h, "rename to ")) {
    free(f->to);
    f->to = parse_name(after(h, 10));
    f->is_rename = 1;
  } else if (starts(h, "copy from ")) {
    free(f->from);
    f->from = parse_name(after(h, 10));
    f->is_copy = 1;
  } else if (starts(h, "copy to ")) {
    free(f->to);
    f->to = parse_name(after(h, 8));
    f->is_copy = 1;
  } else if (starts(h, "Binary files ")) {
    f->is_binary = 1;
  } else if (starts(h, "GIT binary patch")) {
    /* Followed by base85 "literal"/"delta" blocks; none of their lines can
     * start with "diff " (base85 has no space), which ends the skip. */
    f->is_binary = 1;
    *state = IN_BINARY;
  }
  /* "index", "similarity index", "dissimilarity index": nothing to keep. */
}

/* "Binary files X and Y differ" outside a git section (diff -r output). */
static void plain_binary(pending *f, slice h) {
  slice v = {h.s + 13, h.n - 13 - 7}; /* drop "Binary files " and " differ" */
  char *a = NULL, *b = NULL;
  if (!split_same(v, " and ", &a, &b)) {
    const char *and = NULL;
    if (starts(v, "/dev/null and ")) and = v.s + 9;
    else if (ends(v, " and /dev/null")) and = v.s + v.n - 14;
    else
      for (size_t i = 0; i + 5 <= v.n; i++)
        if (memcmp(v.s + i, " and ", 5) == 0) {
          and = v.s + i;
          break;
        }
    if (!and) and = v.s + v.n; /* unreachable for well-formed lines */
    size_t k = (size_t)(and - v.s);
    a = dupn(v.s, k);
    b = dupn(and + (k < v.n ? 5 : 0), k < v.n ? v.n - k - 5 : 0);
    strip_pair(&a, &b);
  }
  f->active = 1;
  f->parents = 1;
  f->minus = a;
  f->plus = b;
  f->is_binary = 1;
}

/* ---- hunks ------------------------------------------------------------- */

/* Reads "<sign>start[,count]" (count defaults to 1). */
static int parse_range(slice h, size_t *i, char sign, uint64_t *count) {
  if (*i >= h.n || h.s[*i] != sign) return -1;
  (*i)++;
  int digits = 0;
  while (*i < h.n && h.s[*i] >= '0' && h.s[*i] <= '9') {
    (*i)++;
    digits++;
  }
  if (!digits || digits > 18) return -1;
  *count = 1;
  if (*i < h.n && h.s[*i] == ',') {
    (*i)++;
    uint64_t c = 0;
    digits = 0;
    while (*i < h.n && h.s[*i] >= '0' && h.s[*i] <= '9') {
      c = c * 10 + (uint64_t)(h.s[*i] - '0');
      (*i)++;
      digits++;
    }
    if (!digits || digits > 18) return -1;
    *count = c;
  }
  return 0;
}

/* "@@ -a,b +c,d @@ ..." or, for combined diffs with N parents, N+1 '@'s
 * and N "-" ranges. Sets the line counts of the hunk. */
static int parse_hunk_header(slice h, pending *f) {
  size_t at = 0;
  while (at < h.n && h.s[at] == '@') at++;
  int parents = (int)at - 1;
  if (parents < 1 || parents > MAX_PARENTS) return -1;
  if (f->parents && f->parents != parents) return -1;
  size_t i = at;
  for (int p = 0; p < parents; p++) {
    if (i >= h.n || h.s[i] != ' ') return -1;
    i++;
    if (parse_range(h, &i, '-', &f->old_left[p])) return -1;
  }
  if (i >= h.n || h.s[i] != ' ') return -1;
  i++;
  if (parse_range(h, &i, '+', &f->new_left)) return -1;
  if (i >= h.n || h.s[i] != ' ') return -1;
  i++;
  for (size_t k = 0; k < at; k++, i++)
    if (i >= h.n || h.s[i] != '@') return -1;
  f->parents = parents;
  return 0;
}

static int hunk_done(const pending *f) {
  if (f->new_left) return 0;
  for (int p = 0; p < f->parents; p++)
    if (f->old_left[p]) return 0;
  return 1;
}

/* Accounts one line of the current hunk. Returns 0 when the line cannot
 * belong to it (a truncated or hand-edited hunk); the caller then reads it
 * as a header line. */
static int hunk_line(pending *f, slice l) {
  if (l.n && l.s[0] == '\\') return 1; /* "\ No newline at end of file" */
  if (f->parents == 1) {
    /* An empty line is a context line whose leading space was lost (mail
     * clients and editors strip trailing whitespace); git apply agrees. */
    char c = (l.n && !(l.n == 1 && l.s[0] == '\r')) ? l.s[0] : ' ';
    switch (c) {
      case ' ':
        if (!f->old_left[0] || !f->new_left) return 0;
        f->old_left[0]--;
        f->new_left--;
        return 1;
      case '-':
        if (!f->old_left[0]) return 0;
        f->old_left[0]--;
        f->deletions++;
        return 1;
      case '+':
        if (!f->new_left) return 0;
        f->new_left--;
        f->additions++;
        return 1;
      default:
        return 0;
    }
  }
  /* Combined diff: one column per parent. Column p is '+' when the line is
   * not in parent p, '-' when it is not in the result. */
  int P = f->parents, in_result = 1;
  char cols[MAX_PARENTS];
  for (int p = 0; p < P; p++) {
    char c = (size_t)p < l.n ? l.s[p] : ' ';
    if (l.n && (size_t)p >= l.n) return 0;
    if (c != ' ' && c != '+' && c != '-') return 0;
    if (c == '-') in_result = 0;
    cols[p] = c;
  }
  if (in_result && !f->new_left) return 0;
  for (int p = 0; p < P; p++)
    if (cols[p] != '+' && !f->old_left[p]) return 0;
  if (in_result) f->new_left--;
  for (int p = 0; p < P; p++)
    if (cols[p] != '+') f->old_left[p]--;
  /* Counted against the first parent, like `git diff HEAD` would. */
  if (cols[0] == '+') f->additions++;
  else if (cols[0] == '-') f->deletions++;
  return 1;
}

/* ---- driver ------------------------------------------------------------ */

static slice trim_cr(slice l) {
  if (l.n && l.s[l.n - 1] == '\r') l.n--;
  return l;
}

/* Lines that end a hunk cut short, rather than damage inside it. */
static int is_header_line(slice h) {
  return starts(h, "diff ") || starts(h, "--- ") ||
         (h.n > 2 && h.s[0] == '@' && h.s[1] == '@');
}

void diff_parse(const char *text, size_t len, diff_result *out) {
  pending f;
  memset(&f, 0, sizeof f);
  memset(out, 0, sizeof *out);
  unnamed_problems = 0;
  last_delete.valid = 0;
  int state = IN_NONE;
  uint64_t lineno = 0;
  size_t pos = 0;

  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    size_t next = nl ? end + 1 : len;
    slice line = {text + pos, end - pos};
    lineno++;

    if (state == IN_HUNK) {
      if (hunk_line(&f, line)) {
        if (hunk_done(&f)) state = IN_BODY;
        pos = next;
        continue;
      }
      /* git apply stops here with "corrupt patch at line N"; we report it
       * and read the line as what it looks like. */
      problem(out, &f, lineno,
              is_header_line(trim_cr(line)) ? PB_SHORT_HUNK : PB_BAD_LINE);
      f.skipping = 1;
      state = IN_BODY;
    }

    slice h = trim_cr(line);
    if (state == IN_BINARY && !starts(h, "diff ")) {
      pos = next;
      continue;
    }

    if (starts(h, "diff --git ")) {
      finish(&f, out);
      f.active = f.is_git = 1;
      f.parents = 1;
      parse_git_names(&f, after(h, 11));
      state = IN_HEADER;
    } else if (starts(h, "diff --cc ") || starts(h, "diff --combined ")) {
      /* Merge diffs name one path, without a/ b/ prefixes. */
      finish(&f, out);
      f.active = f.is_git = 1;
      f.parents = 0; /* learnt from the first @@@ header */
      slice v = after(h, h.s[7] == 'c' && h.s[8] == 'c' ? 10 : 16);
      f.git_a = parse_name(v);
      f.git_b = parse_name(v);
      state = IN_HEADER;
    } else if (h.n > 2 && h.s[0] == '@' && h.s[1] == '@' &&
               (h.s[2] == ' ' || h.s[2] == '@')) {
      if (!f.active || state == IN_NONE) {
        out->orphan_hunks++;
      } else {
        if (f.stray && !f.skipping) problem(out, &f, lineno, PB_EXTRA_LINES);
        if (parse_hunk_header(h, &f)) {
          /* Its lines cannot be counted: skip to the next header. */
          problem(out, &f, lineno, PB_BAD_HUNK_HEADER);
          f.skipping = 1;
          state = IN_BODY;
        } else {
          f.hunks++;
          f.stray = f.skipping = 0;
          state = hunk_done(&f) ? IN_BODY : IN_HUNK;
        }
      }
    } else if (starts(h, "--- ") && next < len &&
               starts((slice){text + next, len - next}, "+++ ")) {
      const char *nl2 = memchr(text + next, '\n', len - next);
      size_t end2 = nl2 ? (size_t)(nl2 - text) : len;
      slice h2 = trim_cr((slice){text + next, end2 - next});
      /* Belongs to the open git section unless that one already has its
       * ---/+++ pair or hunks: then it starts a plain unified diff. */
      if (!(f.active && f.is_git && state == IN_HEADER && !f.seen_names)) {
        finish(&f, out);
        f.active = 1;
        f.parents = 1;
      }
      free(f.minus);
      free(f.plus);
      f.minus = parse_name(after(h, 4));
      f.plus = parse_name(after(h2, 4));
      strip_pair(&f.minus, &f.plus);
      f.seen_names = 1;
      state = IN_BODY;
      lineno++;
      pos = nl2 ? end2 + 1 : len;
      continue;
    } else if (state == IN_HEADER) {
      git_header_line(&f, h, &state);
    } else if (starts(h, "Binary files ") && ends(h, " differ") &&
               h.n >= 13 + 7) {
      finish(&f, out);
      plain_binary(&f, h);
      state = IN_NONE;
      finish(&f, out);
    } else if (state == IN_BODY && f.hunks && !(h.n && h.s[0] == '\\')) {
      f.stray = 1;
    }
    /* Anything else outside a hunk (commit messages, "index" lines of
     * plain diffs, "Only in ..." from diff -r, format-patch trailers) is
     * not part of any file's counts. */
    pos = next;
  }
  /* git numbers the line after the last one, or the last one when it has
   * no newline (it rejects an unterminated hunk line). */
  if (state == IN_HUNK)
    problem(out, &f, len && text[len - 1] == '\n' ? lineno + 1 : lineno,
            PB_TRUNCATED);
  finish(&f, out);
}
