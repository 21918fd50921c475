/*
 * apply-patch: applies a unified diff (as `git diff` writes it) to the
 * mounted /workspace, all or nothing.
 *
 * Input:  {"patch", "strip"?: 1, "check"?: false, "fuzz"?: 0}
 * Output: {"applied", "check", "applies", "files": [...], "conflict"?, "notes"}
 *
 * How it applies (following git apply):
 * - Each hunk's lines of context and removals (its preimage) must match
 *   the file exactly. The search starts where the hunk's +start says and
 *   moves outward, one line forward then one back; a hunk found elsewhere
 *   is applied there and its offset reported. A hunk starting at old line
 *   0 or 1 must match at the start of the file, one without trailing
 *   context at its end.
 * - fuzz N: when a hunk is not found, up to N lines of context are ignored
 *   at each end (then the start/end anchoring is dropped too), and the
 *   fuzz used is reported. The default 0 is git apply's behaviour.
 * - Everything is staged in memory first: every file section of the patch
 *   in order (a patch may touch a file twice, rename then modify). Only
 *   when all apply are files written, each to a temporary beside its
 *   target and then renamed over it; deleted files are removed last. A
 *   failure while writing undoes what was done.
 * - Binary patches, symlinks and submodules are refused; mode changes are
 *   reported but not made (WASI cannot set file modes).
 */
#include <stdarg.h>
#include <stdint.h>

#include "../../lib-text/text.h"
#include "patch.h"

#define MAX_FILE_BYTES (64u * 1024 * 1024)

/* ---- errors with details ---------------------------------------------- */

/* Ends the tool with {"error": {"message", "file"?, "hunk"?, "reason"}}. */
__attribute__((noreturn)) static void fail_at(const char *file, size_t hunk, const char *reason, const char *msg) {
  corral_writer w;
  corral_writer_init(&w);
  corral_begin_object(&w);
  corral_key(&w, "error");
  corral_begin_object(&w);
  corral_key(&w, "message");
  corral_cstring(&w, msg);
  if (file) {
    corral_key(&w, "file");
    corral_cstring(&w, file);
  }
  if (hunk) {
    corral_key(&w, "hunk");
    corral_uint(&w, hunk);
  }
  corral_key(&w, "reason");
  corral_cstring(&w, reason);
  corral_end_object(&w);
  corral_end_object(&w);
  fprintf(stderr, "error: %s\n", msg);
  corral_output(&w);
  exit(1);
}

/* ---- the staged tree ---------------------------------------------------- */

typedef struct {
  char *path;
  int on_disk;     /* existed before the patch */
  char *orig;      /* its content then (when on_disk) */
  size_t orig_len;
  int exists;      /* exists after the sections applied so far */
  char *data;
  size_t len;
  int touched;
} staged;

static staged *tree;
static size_t ntree, captree;

static staged *lookup(const char *path, int load) {
  for (size_t i = 0; i < ntree; i++)
    if (strcmp(tree[i].path, path) == 0) return &tree[i];
  if (!load) return NULL;
  if (ntree == captree) {
    captree = captree ? captree * 2 : 16;
    tree = lt_xrealloc(tree, captree * sizeof *tree);
  }
  staged *s = &tree[ntree++];
  memset(s, 0, sizeof *s);
  s->path = lt_dupn(path, strlen(path));
  lt_path p;
  char err[300];
  if (lt_check_path(path, strlen(path), &p, err, sizeof err) != 0) {
    char msg[600];
    snprintf(msg, sizeof msg, "the patch names a path that %s", err);
    fail_at(path, 0, "path", msg);
  }
  int e = lt_read_file(p.guest, MAX_FILE_BYTES, &s->orig, &s->orig_len);
  if (e == 0) {
    s->on_disk = s->exists = 1;
    s->data = s->orig;
    s->len = s->orig_len;
  } else if (e != ENOENT) {
    char msg[600];
    snprintf(msg, sizeof msg, "cannot read %s: %s", path, lt_read_error(e));
    fail_at(path, 0, "read", msg);
  }
  return s;
}

/* ---- applying hunks ------------------------------------------------------ */

typedef struct {
  const char *s;
  size_t n;
} tline;

typedef struct {
  tline *v;
  size_t n, cap;
} image;

static void img_push(image *im, const char *s, size_t n) {
  if (im->n == im->cap) {
    im->cap = im->cap ? im->cap * 2 : 64;
    im->v = lt_xrealloc(im->v, im->cap * sizeof *im->v);
  }
  im->v[im->n++] = (tline){s, n};
}

static void img_load(image *im, const char *s, size_t n) {
  im->n = 0;
  size_t start = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\n') {
      img_push(im, s + start, i + 1 - start);
      start = i + 1;
    }
  if (start < n) img_push(im, s + start, n - start);
}

static int line_eq(tline a, tline b) { return a.n == b.n && memcmp(a.s, b.s, a.n) == 0; }

static int match_at(const image *im, const image *pre, size_t at, int begin, int end) {
  if (begin && at != 0) return 0;
  if (at + pre->n > im->n) return 0;
  if (end && at + pre->n != im->n) return 0;
  for (size_t i = 0; i < pre->n; i++)
    if (!line_eq(im->v[at + i], pre->v[i])) return 0;
  return 1;
}

/* git's find_pos: from `line`, one forward, one back, outward. */
static long find_pos(const image *im, const image *pre, size_t line, int begin, int end) {
  if (begin) line = 0;
  else if (end) line = im->n >= pre->n ? im->n - pre->n : 0;
  if (line > im->n) line = im->n;
  size_t back = line, fwd = line, at = line;
  for (unsigned long i = 0;; i++) {
    if (match_at(im, pre, at, begin, end)) return (long)at;
  again:
    if (back == 0 && fwd == im->n) break;
    if (i & 1) {
      if (back == 0) {
        i++;
        goto again;
      }
      at = --back;
    } else {
      if (fwd == im->n) {
        i++;
        goto again;
      }
      at = ++fwd;
    }
  }
  return -1;
}

typedef struct {
  long offset;
  size_t fuzz;
} hunk_result;

/* Quotes a line for a message: at most 60 bytes, newline dropped. */
static void quote_line(char *dst, size_t size, tline l) {
  size_t n = l.n;
  if (n && l.s[n - 1] == '\n') n--;
  if (n && l.s[n - 1] == '\r') n--;
  snprintf(dst, size, "\"%.*s%s\"", (int)(n > 60 ? 60 : n), l.s, n > 60 ? "..." : "");
}

/* Applies the hunks of f to the text; fails (or, in check mode, returns -1
 * with the message in why) on the first that does not apply. */
static int apply_hunks(const fpatch *f, const char *name, const char *text, size_t len, int fuzz, char **out,
                       size_t *out_len, hunk_result *res, char *why, size_t why_size, size_t *bad_hunk) {
  image im = {0}, pre = {0}, post = {0};
  img_load(&im, text, len);
  for (size_t h = 0; h < f->nhunks; h++) {
    const hunk *hk = &f->hunks[h];
    pre.n = post.n = 0;
    size_t leading = 0, trailing = 0;
    int seen_change = 0;
    for (size_t i = 0; i < hk->count; i++) {
      const hline *l = &hk->lines[i];
      if (l->mark != '+') img_push(&pre, l->s, l->n);
      if (l->mark != '-') img_push(&post, l->s, l->n);
      if (l->mark == ' ') {
        if (!seen_change) leading++;
        trailing++;
      } else {
        seen_change = 1;
        trailing = 0;
      }
    }
    if (!seen_change) trailing = 0; /* all context: leading covers it */
    size_t pos = hk->ns ? hk->ns - 1 : 0;
    int begin = hk->os == 0 || hk->os == 1;
    int end = trailing == 0;
    long at = -1;
    size_t used_fuzz = 0, drop_lead = 0, drop_trail = 0;
    for (size_t fz = 0; fz <= (size_t)fuzz; fz++) {
      drop_lead = fz < leading ? fz : leading;
      drop_trail = fz < trailing ? fz : trailing;
      if (fz > 0 && drop_lead + drop_trail == 0 && !begin && !end) break;
      image p2 = {pre.v + drop_lead, pre.n - drop_lead - drop_trail, 0};
      at = find_pos(&im, &p2, pos + drop_lead, fz == 0 && begin, fz == 0 && end);
      if (at >= 0) {
        used_fuzz = fz;
        break;
      }
    }
    if (at < 0) {
      /* Why: the first line that differs where the hunk was meant to go. */
      char detail[400] = "";
      size_t want = hk->ns ? hk->ns - 1 : 0;
      if (want >= im.n && pre.n) {
        snprintf(detail, sizeof detail, "the file has only %zu lines", im.n);
      } else {
        for (size_t i = 0; i < pre.n; i++) {
          if (want + i >= im.n) {
            snprintf(detail, sizeof detail, "the file ends at line %zu, before the hunk's line %zu", im.n, want + i + 1);
            break;
          }
          if (!line_eq(im.v[want + i], pre.v[i])) {
            char a[80], b[80];
            quote_line(a, sizeof a, pre.v[i]);
            quote_line(b, sizeof b, im.v[want + i]);
            snprintf(detail, sizeof detail, "at line %zu the patch expects %s but the file has %s", want + i + 1, a, b);
            if (strcmp(a, b) == 0) snprintf(detail + strlen(detail), sizeof detail - strlen(detail), " (they differ in line ending or whitespace)");
            break;
          }
        }
        if (!detail[0]) snprintf(detail, sizeof detail, "the hunk must match at the %s of the file", begin ? "start" : "end");
      }
      snprintf(why, why_size,
               "hunk #%zu (@@ -%zu,%zu +%zu,%zu @@, patch line %zu) of %s does not apply: its %zu context and removed "
               "lines were not found in the file%s; %s",
               h + 1, hk->os, hk->oc, hk->ns, hk->nc, hk->patch_line, name, pre.n,
               fuzz ? " even with fuzz" : " at any offset", detail);
      *bad_hunk = h + 1;
      free(im.v);
      free(pre.v);
      free(post.v);
      return -1;
    }
    /* Replace the matched lines with the postimage (less the dropped context). */
    size_t plen = pre.n - drop_lead - drop_trail, qlen = post.n - drop_lead - drop_trail;
    size_t newn = im.n - plen + qlen;
    tline *nv = lt_xmalloc((newn + 1) * sizeof *nv);
    memcpy(nv, im.v, (size_t)at * sizeof *nv);
    memcpy(nv + at, post.v + drop_lead, qlen * sizeof *nv);
    memcpy(nv + at + qlen, im.v + at + plen, (im.n - (size_t)at - plen) * sizeof *nv);
    free(im.v);
    im.v = nv;
    im.n = newn;
    im.cap = newn + 1;
    res[h].offset = at - (long)(pos + drop_lead);
    res[h].fuzz = used_fuzz;
  }
  size_t total = 0;
  for (size_t i = 0; i < im.n; i++) total += im.v[i].n;
  char *buf = lt_xmalloc(total + 1);
  size_t w = 0;
  for (size_t i = 0; i < im.n; i++) {
    /* A line without its '\n' in the middle: a "\ No newline" hunk line
     * that ended up before other lines; git refuses such a result too. */
    if (i + 1 < im.n && (im.v[i].n == 0 || im.v[i].s[im.v[i].n - 1] != '\n')) {
      snprintf(why, why_size, "the patch leaves a line without a newline in the middle of %s (line %zu)", name, i + 1);
      *bad_hunk = 0;
      free(buf);
      free(im.v);
      free(pre.v);
      free(post.v);
      return -1;
    }
    memcpy(buf + w, im.v[i].s, im.v[i].n);
    w += im.v[i].n;
  }
  buf[w] = '\0';
  *out = buf;
  *out_len = w;
  free(im.v);
  free(pre.v);
  free(post.v);
  return 0;
}

/* ---- the run ----------------------------------------------------------- */

typedef struct {
  const fpatch *f;
  const char *status;
  hunk_result *res;
  size_t additions, deletions;
} file_report;

static char *notes[64];
static size_t nnotes;
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  if (nnotes >= sizeof notes / sizeof *notes) return;
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  notes[nnotes++] = lt_dupn(buf, strlen(buf));
}

/* mkdir -p for the folders of guest path; records the ones it made. */
static char *made_dirs[256];
static size_t nmade;
static int make_parents(const char *guest) {
  char *d = lt_dupn(guest, strlen(guest));
  size_t root = strlen(LT_ROOT);
  for (char *p = d + root + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    struct stat st;
    if (stat(d, &st) != 0) {
      if (mkdir(d, 0755) != 0) {
        free(d);
        return -1;
      }
      if (nmade < sizeof made_dirs / sizeof *made_dirs) made_dirs[nmade++] = lt_dupn(d, strlen(d));
    } else if (!S_ISDIR(st.st_mode)) {
      free(d);
      errno = ENOTDIR;
      return -1;
    }
    *p = '/';
  }
  free(d);
  return 0;
}

static char *guest_of(const char *rel) {
  size_t n = strlen(LT_ROOT) + 1 + strlen(rel) + 1;
  char *g = lt_xmalloc(n);
  snprintf(g, n, "%s/%s", LT_ROOT, rel);
  return g;
}

static void write_back(staged *s) {
  char *g = guest_of(s->path);
  if (s->on_disk) {
    char *t = lt_write_temp(g, s->orig, s->orig_len);
    if (t) rename(t, g);
  } else {
    unlink(g);
  }
  free(g);
}

/* Writes the staged tree: temporaries, then renames, then removals. */
static void commit(void) {
  char **temps = lt_xmalloc((ntree + 1) * sizeof *temps);
  memset(temps, 0, (ntree + 1) * sizeof *temps);
  for (size_t i = 0; i < ntree; i++) {
    staged *s = &tree[i];
    if (!s->touched || !s->exists) continue;
    if (s->on_disk && s->len == s->orig_len && memcmp(s->data, s->orig, s->len) == 0) continue;
    char *g = guest_of(s->path);
    if (make_parents(g) != 0 || !(temps[i] = lt_write_temp(g, s->data, s->len))) {
      int e = errno;
      for (size_t k = 0; k < i; k++)
        if (temps[k]) unlink(temps[k]);
      while (nmade) rmdir(made_dirs[--nmade]);
      char msg[600];
      snprintf(msg, sizeof msg, "cannot write %s: %s; nothing was changed", s->path, strerror(e));
      fail_at(s->path, 0, "write", msg);
    }
    free(g);
  }
  /* Renames and removals; on a failure, put back what was done. */
  for (size_t i = 0; i < ntree; i++) {
    staged *s = &tree[i];
    if (!s->touched) continue;
    char *g = guest_of(s->path);
    int r = 0;
    if (temps[i]) r = rename(temps[i], g);
    else if (!s->exists && s->on_disk) r = unlink(g);
    if (r != 0) {
      int e = errno;
      for (size_t k = i; k < ntree; k++)
        if (temps[k]) unlink(temps[k]);
      for (size_t k = 0; k < i; k++)
        if (tree[k].touched && (temps[k] || (!tree[k].exists && tree[k].on_disk))) write_back(&tree[k]);
      char msg[600];
      snprintf(msg, sizeof msg, "cannot %s %s: %s; the files changed before it were put back", temps[i] ? "replace" : "remove",
               s->path, strerror(e));
      fail_at(s->path, 0, "write", msg);
    }
    free(g);
  }
  /* git removes the folders a deletion leaves empty. */
  for (size_t i = 0; i < ntree; i++) {
    staged *s = &tree[i];
    if (!s->touched || s->exists || !s->on_disk) continue;
    char *g = guest_of(s->path);
    for (char *slash = strrchr(g, '/'); slash && (size_t)(slash - g) > strlen(LT_ROOT); slash = strrchr(g, '/')) {
      *slash = '\0';
      if (rmdir(g) != 0) break;
    }
    free(g);
  }
}

static int has_mode(const char *m, const char *want) { return strcmp(m, want) == 0; }

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"patch", "strip", "check", "fuzz", NULL};
  corral_only_fields(input, fields, NULL);
  size_t plen;
  const char *text = corral_require_string(input, "patch", &plen);
  int64_t strip = corral_get_int(input, "strip", 1);
  bool check = corral_get_bool(input, "check", false);
  int64_t fuzz = corral_get_int(input, "fuzz", 0);
  if (strip < 0 || strip > 64) corral_fail("\"strip\" must be between 0 and 64, got %lld", (long long)strip);
  if (fuzz < 0 || fuzz > 16) corral_fail("\"fuzz\" must be between 0 and 16, got %lld", (long long)fuzz);

  patch p;
  char err[600];
  if (patch_parse(text, plen, (int)strip, &p, err, sizeof err) != 0) fail_at(NULL, 0, "parse", err);
  if (p.count == 0) {
    int blank = 1;
    for (size_t i = 0; i < plen; i++)
      if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') blank = 0;
    fail_at(NULL, 0, "parse",
            blank ? "the patch is empty" : "no file sections found: expected `diff --git` or `---`/`+++` headers with @@ hunks");
  }

  /* Refusals that need no file: binary, symlinks, submodules. */
  for (size_t i = 0; i < p.count; i++) {
    const fpatch *f = &p.files[i];
    const char *name = f->new_path ? f->new_path : f->old_path;
    char msg[600];
    if (f->binary) {
      snprintf(msg, sizeof msg,
               "the patch changes the binary file %s (patch line %zu): apply-patch applies text hunks only, so nothing was "
               "changed; apply it with git apply outside the sandbox, or leave binary files out of the diff",
               name, f->patch_line);
      fail_at(name, 0, "binary", msg);
    }
    if (has_mode(f->old_mode, "120000") || has_mode(f->new_mode, "120000")) {
      snprintf(msg, sizeof msg, "the patch changes the symlink %s (mode 120000, patch line %zu); apply-patch does not create or change symlinks, so nothing was changed", name, f->patch_line);
      fail_at(name, 0, "symlink", msg);
    }
    if (has_mode(f->old_mode, "160000") || has_mode(f->new_mode, "160000")) {
      snprintf(msg, sizeof msg, "the patch changes the submodule %s (patch line %zu); apply-patch does not handle submodules", name, f->patch_line);
      fail_at(name, 0, "submodule", msg);
    }
  }

  file_report *rep = lt_xmalloc(p.count * sizeof *rep);
  const char *conflict_file = NULL;
  size_t conflict_hunk = 0;
  const char *conflict_reason = NULL;
  char conflict_msg[1200] = "";
  size_t done = 0;
  for (size_t i = 0; i < p.count && !conflict_reason; i++) {
    const fpatch *f = &p.files[i];
    file_report *r = &rep[i];
    memset(r, 0, sizeof *r);
    r->f = f;
    r->res = lt_xmalloc((f->nhunks + 1) * sizeof *r->res);
    for (size_t h = 0; h < f->nhunks; h++)
      for (size_t k = 0; k < f->hunks[h].count; k++) {
        if (f->hunks[h].lines[k].mark == '+') r->additions++;
        if (f->hunks[h].lines[k].mark == '-') r->deletions++;
      }
    const char *name = f->new_path ? f->new_path : f->old_path;
    r->status = f->is_new ? "added" : f->is_delete ? "deleted" : f->is_rename ? "renamed" : f->is_copy ? "copied" : "modified";
    staged *src = f->is_new ? NULL : lookup(f->old_path, 1);
    staged *dst = f->is_delete ? NULL : lookup(f->new_path, 1);
    if (src && !src->exists) {
      conflict_file = f->old_path;
      conflict_reason = "missing";
      snprintf(conflict_msg, sizeof conflict_msg, "%s: no such file in /workspace (the patch %s it)", f->old_path,
               f->is_delete ? "deletes" : f->is_rename ? "renames" : f->is_copy ? "copies" : "changes");
      break;
    }
    if (dst && dst != src && dst->exists) {
      conflict_file = f->new_path;
      conflict_reason = "exists";
      snprintf(conflict_msg, sizeof conflict_msg, "%s already exists in /workspace (the patch %s it)", f->new_path,
               f->is_rename ? "renames a file to" : f->is_copy ? "copies a file to" : "creates");
      break;
    }
    char *out;
    size_t out_len;
    size_t bad = 0;
    if (apply_hunks(f, name, src ? src->data : "", src ? src->len : 0, (int)fuzz, &out, &out_len, r->res, conflict_msg,
                    sizeof conflict_msg, &bad) != 0) {
      conflict_file = name;
      conflict_hunk = bad;
      conflict_reason = bad ? "hunk" : "result";
      break;
    }
    if (f->is_delete && out_len != 0) {
      conflict_file = name;
      conflict_reason = "not-empty";
      snprintf(conflict_msg, sizeof conflict_msg,
               "the patch deletes %s but its removed lines do not cover the whole file (%zu bytes would remain): the file "
               "differs from what the patch expects",
               name, out_len);
      free(out);
      break;
    }
    if (src && (f->is_delete || f->is_rename)) {
      src->exists = 0;
      src->touched = 1;
    }
    if (dst) {
      dst->exists = 1;
      dst->data = out;
      dst->len = out_len;
      dst->touched = 1;
    }
    /* Modes: WASI can neither read nor set them, and every written file is
     * a new one (temporary + rename), so it gets the host's default mode. */
    const char *mode = f->new_mode[0] ? f->new_mode : f->index_mode;
    if (f->old_mode[0] && f->new_mode[0] && strcmp(f->old_mode, f->new_mode) != 0)
      note("%s: mode change %s -> %s not applied (WASI cannot set file modes); the file gets the host's default mode", name,
           f->old_mode, f->new_mode);
    else if (dst && strcmp(mode, "100755") == 0)
      note("%s: executable (100755) in the patch, but written with the host's default mode (WASI cannot set file modes)",
           name);
    done = i + 1;
  }

  if (conflict_reason && !check) {
    char msg[1400];
    snprintf(msg, sizeof msg, "%s; nothing was changed", conflict_msg);
    fail_at(conflict_file, conflict_hunk, conflict_reason, msg);
  }
  if (!check) commit();

  corral_writer w;
  corral_writer_init(&w);
  corral_begin_object(&w);
  corral_key(&w, "applied");
  corral_bool(&w, !check);
  corral_key(&w, "check");
  corral_bool(&w, check);
  corral_key(&w, "applies");
  corral_bool(&w, conflict_reason == NULL);
  corral_key(&w, "files");
  corral_begin_array(&w);
  for (size_t i = 0; i < done; i++) {
    const file_report *r = &rep[i];
    const fpatch *f = r->f;
    corral_begin_object(&w);
    corral_key(&w, "path");
    corral_cstring(&w, f->new_path ? f->new_path : f->old_path);
    if (f->is_rename || f->is_copy) {
      corral_key(&w, "old_path");
      corral_cstring(&w, f->old_path);
    }
    corral_key(&w, "status");
    corral_cstring(&w, r->status);
    corral_key(&w, "hunks");
    corral_uint(&w, f->nhunks);
    corral_key(&w, "additions");
    corral_uint(&w, r->additions);
    corral_key(&w, "deletions");
    corral_uint(&w, r->deletions);
    if (f->old_mode[0]) {
      corral_key(&w, "old_mode");
      corral_cstring(&w, f->old_mode);
    }
    if (f->new_mode[0]) {
      corral_key(&w, "new_mode");
      corral_cstring(&w, f->new_mode);
    }
    size_t moved = 0;
    for (size_t h = 0; h < f->nhunks; h++) moved += r->res[h].offset != 0 || r->res[h].fuzz != 0;
    if (moved) {
      corral_key(&w, "offsets");
      corral_begin_array(&w);
      for (size_t h = 0; h < f->nhunks; h++) {
        if (r->res[h].offset == 0 && r->res[h].fuzz == 0) continue;
        corral_begin_object(&w);
        corral_key(&w, "hunk");
        corral_uint(&w, h + 1);
        corral_key(&w, "offset");
        corral_int(&w, r->res[h].offset);
        if (r->res[h].fuzz) {
          corral_key(&w, "fuzz");
          corral_uint(&w, r->res[h].fuzz);
        }
        corral_end_object(&w);
      }
      corral_end_array(&w);
    }
    corral_end_object(&w);
  }
  corral_end_array(&w);
  if (conflict_reason) {
    corral_key(&w, "conflict");
    corral_begin_object(&w);
    corral_key(&w, "message");
    corral_cstring(&w, conflict_msg);
    if (conflict_file) {
      corral_key(&w, "file");
      corral_cstring(&w, conflict_file);
    }
    if (conflict_hunk) {
      corral_key(&w, "hunk");
      corral_uint(&w, conflict_hunk);
    }
    corral_key(&w, "reason");
    corral_cstring(&w, conflict_reason);
    corral_end_object(&w);
  }
  corral_key(&w, "notes");
  corral_begin_array(&w);
  for (size_t i = 0; i < nnotes; i++) corral_cstring(&w, notes[i]);
  corral_end_array(&w);
  corral_end_object(&w);
  corral_output(&w);
  return 0;
}
