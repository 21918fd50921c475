/*
 * grep: search the files of the mounted /workspace for a regular
 * expression, the way `git grep -n --column -I -E` does, and answer with
 * structured matches (README.md has the details).
 *
 * Input:  {"pattern", "path"?, "ignore_case"?, "fixed_strings"?, "word"?,
 *          "context"?, "before_context"?, "after_context"?, "include"?,
 *          "exclude"?, "gitignore"?, "max_results"?, "max_line_length"?}
 * Output: {"root", "matches": [{"path","line","column","text",...}],
 *          "count", "truncated", "files_searched", "files_skipped"}
 *
 * Matching is per line and by bytes (git grep in the C locale): POSIX
 * extended regular expressions through wasi-libc's regcomp/regexec,
 * REG_ICASE folding ASCII letters only. Speed comes from not calling
 * regexec on most lines: a literal every match must contain (the whole
 * pattern for fixed strings, else the longest run of plain characters
 * outside any group, alternation or optional part) is searched in the
 * whole file with memmem, and only the lines that contain it are run
 * through the matcher. Without such a literal, regexec runs over the whole
 * file once per matching line (REG_NEWLINE, so '.' and [^x] stay in a
 * line) and each hit is checked again on its line alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/walk.h"
#include "corral.h"

#define DEFAULT_MAX 1000
#define MAX_MAX 100000
#define DEFAULT_LINE 1000
#define MAX_CONTEXT 100
#define BINARY_PROBE 8000 /* git's buffer_is_binary looks at this much */
#define MAX_FILE ((size_t)32 << 20)
#define MAX_PATTERNS 1024
/* Corral caps a tool's stdout (1 MiB by default): past this much JSON the
 * answer stops, truncated, rather than being refused as too large. */
#define OUTPUT_BUDGET ((size_t)768 << 10)

typedef struct {
  bool fixed, icase, word;
  bool has_re;
  regex_t re;
  char *lit; /* fixed: the pattern; regex: a literal every match contains, or NULL */
  size_t lit_len;
} matcher;

typedef struct {
  ign_rule *rules;
  size_t n;
} ruleset;

typedef struct {
  matcher m;
  ruleset include, exclude;
  int before, after;
  int64_t max;
  size_t max_line;
  size_t count, searched, skipped;
  bool truncated;
  corral_writer *out;
  char *buf;
  size_t cap;
} grep_ctx;

static unsigned char lower[256];

static bool word_char(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* ---- the literal every match contains ----------------------------------------- */

/* Longest run of plain characters at the top level of an ERE, each of them
 * required (not under ?, * or {0,}); none when the pattern has a '|'
 * anywhere, or anything this reading is not sure about. */
static void required_literal(const char *re, char **out, size_t *out_len) {
  size_t n = strlen(re);
  char *run = malloc(n + 1), *best = malloc(n + 1);
  if (!run || !best) corral_fail("out of memory");
  size_t rl = 0, bl = 0;
  *out = NULL;
  *out_len = 0;
#define END_RUN()                  \
  do {                             \
    if (rl > bl) {                 \
      memcpy(best, run, rl);       \
      bl = rl;                     \
    }                              \
    rl = 0;                        \
  } while (0)
  /* '|' anywhere (outside a bracket expression) makes every part optional. */
  for (size_t i = 0; i < n; i++) {
    if (re[i] == '\\') {
      i++;
      continue;
    }
    if (re[i] == '[') {
      size_t j = i + 1;
      if (re[j] == '^') j++;
      if (re[j] == ']') j++;
      while (j < n && re[j] != ']') {
        if (re[j] == '[' && (re[j + 1] == ':' || re[j + 1] == '.' || re[j + 1] == '=')) {
          char kind = re[j + 1];
          j += 2;
          while (j + 1 < n && !(re[j] == kind && re[j + 1] == ']')) j++;
          j += 2;
          continue;
        }
        j++;
      }
      if (j >= n) goto give_up;
      i = j;
      continue;
    }
    if (re[i] == '|') goto give_up;
  }
  for (size_t i = 0; i < n;) {
    char c = re[i];
    bool literal = false;
    char ch = 0;
    if (c == '(') {
      int depth = 0;
      size_t j = i;
      for (; j < n; j++) {
        if (re[j] == '\\') {
          j++;
          continue;
        }
        if (re[j] == '[') { /* skip a bracket expression (checked above) */
          size_t k = j + 1;
          if (re[k] == '^') k++;
          if (re[k] == ']') k++;
          while (k < n && re[k] != ']') {
            if (re[k] == '[' && (re[k + 1] == ':' || re[k + 1] == '.' || re[k + 1] == '=')) {
              char kind = re[k + 1];
              k += 2;
              while (k + 1 < n && !(re[k] == kind && re[k + 1] == ']')) k++;
              k += 2;
              continue;
            }
            k++;
          }
          j = k;
          continue;
        }
        if (re[j] == '(') depth++;
        else if (re[j] == ')' && --depth == 0) break;
      }
      if (j >= n) goto give_up;
      i = j + 1;
    } else if (c == '[') {
      size_t j = i + 1;
      if (re[j] == '^') j++;
      if (re[j] == ']') j++;
      while (j < n && re[j] != ']') {
        if (re[j] == '[' && (re[j + 1] == ':' || re[j + 1] == '.' || re[j + 1] == '=')) {
          char kind = re[j + 1];
          j += 2;
          while (j + 1 < n && !(re[j] == kind && re[j + 1] == ']')) j++;
          j += 2;
          continue;
        }
        j++;
      }
      i = j + 1;
    } else if (c == '.' || c == '^' || c == '$') {
      i++;
    } else if (c == '\\') {
      unsigned char e = (unsigned char)re[i + 1];
      if (!e) goto give_up;
      /* \w, \<, \1, \n ...: classes, assertions, escapes; punctuation is itself. */
      if (word_char(e) || e == '<' || e == '>' || e == '`' || e == '\'' || e >= 0x80) {
        i += 2;
      } else {
        literal = true;
        ch = (char)e;
        i += 2;
      }
    } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')') {
      goto give_up; /* a quantifier with nothing before it: leave it to regcomp */
    } else {
      literal = true;
      ch = c;
      i++;
    }
    /* The quantifier after the atom, if any. */
    char q = re[i];
    if (q == '*' || q == '?') {
      END_RUN();
      i++;
    } else if (q == '+' || q == '{') {
      bool optional = false;
      if (q == '{') {
        size_t j = i + 1;
        if (re[j] < '0' || re[j] > '9') goto give_up;
        optional = re[j] == '0' && (re[j + 1] == ',' || re[j + 1] == '}');
        while (j < n && re[j] != '}') j++;
        if (j >= n) goto give_up;
        i = j + 1;
      } else {
        i++;
      }
      if (literal && !optional) run[rl++] = ch;
      END_RUN();
    } else if (literal) {
      run[rl++] = ch;
    } else {
      END_RUN();
    }
    if (re[i] == '*' || re[i] == '+' || re[i] == '?' || re[i] == '{') goto give_up;
  }
  END_RUN();
  if (bl > 0) {
    best[bl] = '\0';
    *out = best;
    *out_len = bl;
    free(run);
    return;
  }
give_up:
#undef END_RUN
  free(run);
  free(best);
  *out = NULL;
  *out_len = 0;
}

/* ---- finding ------------------------------------------------------------------- */

/* First occurrence of lit in [p, p+n), ASCII case folded when icase. */
static const char *find_literal(const matcher *m, const char *p, size_t n) {
  size_t k = m->lit_len;
  if (k == 0) return p;
  if (n < k) return NULL;
  if (!m->icase) return memmem(p, n, m->lit, k);
  const unsigned char *s = (const unsigned char *)p, *lit = (const unsigned char *)m->lit;
  unsigned char f0 = lower[lit[0]];
  for (size_t i = 0; i + k <= n; i++) {
    if (lower[s[i]] != f0) continue;
    size_t j = 1;
    while (j < k && lower[s[i + j]] == lower[lit[j]]) j++;
    if (j == k) return p + i;
  }
  return NULL;
}

/* The leftmost match in a line (NUL-terminated at p[n]). */
static bool raw_find(const matcher *m, const char *p, size_t n, int eflags, size_t *so, size_t *eo) {
  if (m->fixed) {
    const char *h = find_literal(m, p, n);
    if (!h) return false;
    *so = (size_t)(h - p);
    *eo = *so + m->lit_len;
    return true;
  }
  regmatch_t rm[1];
  if (regexec(&m->re, p, 1, rm, eflags) != 0) return false;
  *so = (size_t)rm[0].rm_so;
  *eo = (size_t)rm[0].rm_eo;
  return true;
}

/* Does the line match, and where first? `git grep -w` semantics: a hit
 * counts when it is not empty and has no word character just before or
 * after it; otherwise the search goes on from the next position after a
 * non-word character, with ^ no longer matching. */
static bool line_match(const matcher *m, char *bol, size_t len, size_t *col) {
  size_t off = 0;
  int eflags = 0;
  for (;;) {
    size_t so, eo;
    if (!raw_find(m, bol + off, len - off, eflags, &so, &eo)) return false;
    so += off;
    eo += off;
    if (!m->word) {
      *col = so;
      return true;
    }
    const unsigned char *b = (const unsigned char *)bol;
    if ((so == 0 || !word_char(b[so - 1])) && (eo == len || !word_char(b[eo])) && so != eo) {
      *col = so;
      return true;
    }
    if (so + 1 >= len) return false;
    size_t next = so + 1;
    while (next < len && word_char(b[next - 1])) next++;
    if (next >= len) return false;
    off = next;
    eflags |= REG_NOTBOL;
  }
}

/* ---- output --------------------------------------------------------------------- */

/* A line, cut at max_line bytes (not inside a UTF-8 sequence). */
static bool put_line(grep_ctx *ctx, const char *p, size_t n) {
  bool cut = false;
  if (n > ctx->max_line) {
    n = ctx->max_line;
    while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80) n--;
    cut = true;
  }
  corral_string(ctx->out, p, n);
  return cut;
}

static size_t line_end(const char *buf, size_t len, size_t from) {
  const char *nl = memchr(buf + from, '\n', len - from);
  return nl ? (size_t)(nl - buf) : len;
}

static void emit(grep_ctx *ctx, const char *rel, const char *buf, size_t len, size_t bol, size_t eol,
                 size_t lineno, size_t col) {
  corral_writer *w = ctx->out;
  corral_begin_object(w);
  corral_key(w, "path");
  corral_cstring(w, rel);
  corral_key(w, "line");
  corral_uint(w, lineno);
  corral_key(w, "column");
  corral_uint(w, col + 1);
  corral_key(w, "text");
  bool cut = put_line(ctx, buf + bol, eol - bol);
  if (cut) {
    corral_key(w, "text_truncated");
    corral_bool(w, true);
  }
  if (ctx->before > 0) {
    size_t starts[MAX_CONTEXT];
    int k = 0;
    size_t s = bol;
    while (k < ctx->before && s > 0) {
      size_t e = s - 1; /* the '\n' ending the previous line */
      size_t b = e;
      while (b > 0 && buf[b - 1] != '\n') b--;
      starts[k++] = b;
      s = b;
    }
    corral_key(w, "before");
    corral_begin_array(w);
    while (k-- > 0) put_line(ctx, buf + starts[k], line_end(buf, len, starts[k]) - starts[k]);
    corral_end_array(w);
  }
  if (ctx->after > 0) {
    corral_key(w, "after");
    corral_begin_array(w);
    size_t s = eol + 1;
    for (int k = 0; k < ctx->after && s < len; k++) {
      size_t e = line_end(buf, len, s);
      put_line(ctx, buf + s, e - s);
      s = e + 1;
    }
    corral_end_array(w);
  }
  corral_end_object(w);
}

/* ---- one file --------------------------------------------------------------------- */

static bool read_file(grep_ctx *ctx, int dirfd, const char *path, size_t *len) {
  int fd = dirfd >= 0 ? openat(dirfd, path, O_RDONLY) : open(path, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "warning: cannot open %s: %s\n", path, strerror(errno));
    return false;
  }
  struct stat st;
  size_t want = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
  if (want > MAX_FILE) {
    close(fd);
    fprintf(stderr, "note: %s is larger than %zu MiB, skipped\n", path, MAX_FILE >> 20);
    return false;
  }
  size_t n = 0;
  for (;;) {
    if (n + 1 >= ctx->cap || want + 1 > ctx->cap) {
      size_t nc = ctx->cap ? ctx->cap : 65536;
      while (nc < want + 2 || nc <= n + 1) nc *= 2;
      char *nb = realloc(ctx->buf, nc);
      if (!nb) corral_fail("out of memory reading %s", path);
      ctx->buf = nb;
      ctx->cap = nc;
    }
    ssize_t r = read(fd, ctx->buf + n, ctx->cap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      fprintf(stderr, "warning: cannot read %s: %s\n", path, strerror(errno));
      close(fd);
      return false;
    }
    if (r == 0) break;
    n += (size_t)r;
    if (n == want) break; /* the size fstat gave: no extra call to see the end */
    if (n > MAX_FILE) {
      close(fd);
      return false;
    }
  }
  close(fd);
  ctx->buf[n] = '\0';
  *len = n;
  return true;
}

/* Returns true when the result cap is reached. */
static bool search_file(grep_ctx *ctx, int dirfd, const char *path, const char *rel) {
  size_t len;
  if (!read_file(ctx, dirfd, path, &len)) {
    ctx->skipped++;
    return false;
  }
  char *buf = ctx->buf;
  if (memchr(buf, '\0', len < BINARY_PROBE ? len : BINARY_PROBE)) {
    ctx->skipped++; /* binary, as git grep -I decides */
    return false;
  }
  ctx->searched++;
  const matcher *m = &ctx->m;
  /* A NUL further on would end the whole-buffer regexec early: go line by line. */
  bool per_line = !m->lit_len && memchr(buf, '\0', len) != NULL;
  size_t pos = 0, lineno = 1, counted = 0;
  while (pos < len) {
    size_t cand;
    if (m->lit_len) {
      const char *h = find_literal(m, buf + pos, len - pos);
      if (!h) break;
      cand = (size_t)(h - buf);
    } else if (per_line) {
      cand = pos;
    } else {
      regmatch_t rm[1];
      if (regexec(&m->re, buf + pos, 1, rm, 0) != 0) break;
      cand = pos + (size_t)rm[0].rm_so;
      if (cand > len) break;
    }
    size_t bol = cand;
    while (bol > pos && buf[bol - 1] != '\n') bol--;
    size_t eol = line_end(buf, len, cand);
    for (size_t i = counted; i < bol; i++) {
      const char *nl = memchr(buf + i, '\n', bol - i);
      if (!nl) break;
      lineno++;
      i = (size_t)(nl - buf);
    }
    counted = bol;
    char saved = buf[eol];
    buf[eol] = '\0';
    size_t col;
    bool hit = line_match(m, buf + bol, eol - bol, &col);
    buf[eol] = saved;
    if (hit) {
      if ((int64_t)ctx->count == ctx->max || ctx->out->len > OUTPUT_BUDGET) {
        ctx->truncated = true;
        return true;
      }
      emit(ctx, rel, buf, len, bol, eol, lineno, col);
      ctx->count++;
    }
    pos = eol + 1;
  }
  return false;
}

/* ---- include / exclude ------------------------------------------------------------- */

/* .gitignore-style: a pattern without '/' matches a name at any depth, one
 * with a '/' the path from root; a trailing '/' matches folders only. */
static void add_rules(const corral_value *input, const char *key, ruleset *rs) {
  const corral_value *v = corral_get(input, key);
  if (!v) return;
  strlist pats = {0};
  if (v->type == CORRAL_STRING) {
    brace_expand(v->string, &pats, MAX_PATTERNS);
  } else if (v->type == CORRAL_ARRAY) {
    for (size_t i = 0; i < v->length; i++) {
      const corral_value *s = &v->items[i];
      if (s->type != CORRAL_STRING) corral_fail("%s[%zu] must be a string, got %s", key, i, corral_type_name(s->type));
      brace_expand(s->string, &pats, MAX_PATTERNS);
    }
  } else {
    corral_fail("\"%s\" must be a string or an array of strings, got %s", key, corral_type_name(v->type));
  }
  rs->rules = calloc(pats.n ? pats.n : 1, sizeof *rs->rules);
  if (!rs->rules) corral_fail("out of memory");
  for (size_t i = 0; i < pats.n; i++) {
    char *p = pats.items[i];
    size_t len = strlen(p);
    unsigned flags = 0;
    if (len && p[len - 1] == '/') {
      flags |= IGN_DIRONLY;
      p[--len] = '\0';
    }
    if (strchr(p, '/')) flags |= IGN_ANCHORED;
    while (*p == '/') p++;
    if (!*p) corral_fail("empty %s pattern", key);
    rs->rules[rs->n].pattern = p;
    rs->rules[rs->n].flags = flags;
    rs->n++;
  }
}

static bool any_rule(const ruleset *rs, const char *rel, const char *name, bool is_dir) {
  for (size_t i = 0; i < rs->n; i++)
    if (ign_rule_matches(&rs->rules[i], "", 0, rel, name, is_dir)) return true;
  return false;
}

static const char *base_name(const char *rel) {
  const char *s = strrchr(rel, '/');
  return s ? s + 1 : rel;
}

/* Included: the file, or a folder it is in, matches an include pattern. */
static bool included(const grep_ctx *ctx, const char *rel) {
  if (ctx->include.n == 0) return true;
  if (any_rule(&ctx->include, rel, base_name(rel), false)) return true;
  char *tmp = strdup(rel);
  if (!tmp) corral_fail("out of memory");
  bool hit = false;
  for (char *s = tmp; !hit && (s = strchr(s, '/')) != NULL; s++) {
    *s = '\0';
    hit = any_rule(&ctx->include, tmp, base_name(tmp), true);
    *s = '/';
  }
  free(tmp);
  return hit;
}

static bool enter_dir(void *vctx, const char *rel) {
  grep_ctx *ctx = vctx;
  return !any_rule(&ctx->exclude, rel, base_name(rel), true);
}

static bool visit(void *vctx, int dirfd, const char *name, const char *rel, int kind) {
  grep_ctx *ctx = vctx;
  if (kind != WALK_FILE) return false; /* git grep reads regular files only */
  if (ctx->exclude.n && any_rule(&ctx->exclude, rel, base_name(rel), false)) return false;
  if (!included(ctx, rel)) return false;
  return search_file(ctx, dirfd, name, rel);
}

/* ---- main ------------------------------------------------------------------------ */

static int get_context(const corral_value *input, const char *key, int fallback) {
  int64_t v = corral_get_int(input, key, fallback);
  if (v < 0 || v > MAX_CONTEXT) corral_fail("\"%s\" must be between 0 and %d", key, MAX_CONTEXT);
  return (int)v;
}

int main(void) {
  for (int i = 0; i < 256; i++) lower[i] = (unsigned char)(i >= 'A' && i <= 'Z' ? i + 32 : i);
  const corral_value *input = corral_input();
  static const char *const fields[] = {"pattern",    "path",           "ignore_case",   "fixed_strings",
                                       "word",       "context",        "before_context", "after_context",
                                       "include",    "exclude",        "gitignore",     "max_results",
                                       "max_line_length", NULL};
  corral_only_fields(input, fields, NULL);

  size_t plen;
  const char *pattern = corral_require_string(input, "pattern", &plen);
  if (strlen(pattern) != plen) corral_fail("\"pattern\" must not contain NUL characters");
  if (strchr(pattern, '\n')) corral_fail("\"pattern\" must be one line (it is matched against each line)");
  size_t path_len;
  const char *path_in = corral_get_string(input, "path", WS_ROOT, &path_len);
  char *root = ws_check_path(path_in, path_len, "path");

  grep_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  matcher *m = &ctx.m;
  m->icase = corral_get_bool(input, "ignore_case", false);
  m->fixed = corral_get_bool(input, "fixed_strings", false);
  m->word = corral_get_bool(input, "word", false);
  int context = get_context(input, "context", 0);
  ctx.before = get_context(input, "before_context", context);
  ctx.after = get_context(input, "after_context", context);
  bool gitignore = corral_get_bool(input, "gitignore", true);
  ctx.max = corral_get_int(input, "max_results", DEFAULT_MAX);
  if (ctx.max < 1 || ctx.max > MAX_MAX) corral_fail("\"max_results\" must be between 1 and %d", MAX_MAX);
  int64_t max_line = corral_get_int(input, "max_line_length", DEFAULT_LINE);
  if (max_line < 1 || max_line > (1 << 20)) corral_fail("\"max_line_length\" must be between 1 and %d", 1 << 20);
  ctx.max_line = (size_t)max_line;
  add_rules(input, "include", &ctx.include);
  add_rules(input, "exclude", &ctx.exclude);

  if (m->fixed) {
    m->lit = strdup(pattern);
    m->lit_len = plen;
  } else {
    int flags = REG_EXTENDED | REG_NEWLINE | (m->icase ? REG_ICASE : 0);
    int err = regcomp(&m->re, pattern, flags);
    if (err) {
      char msg[256];
      regerror(err, &m->re, msg, sizeof msg);
      corral_fail("invalid regular expression \"%.200s\": %s", pattern, msg);
    }
    m->has_re = true;
    required_literal(pattern, &m->lit, &m->lit_len);
  }

  struct stat st;
  if (stat(root, &st) != 0) corral_fail("path not found: %s", root);

  /* One file: root is its folder, the path its name. */
  char *file = NULL;
  if (S_ISREG(st.st_mode)) {
    file = strdup(root);
    if (!file) corral_fail("out of memory");
    *strrchr(root, '/') = '\0';
  } else if (!S_ISDIR(st.st_mode)) {
    corral_fail("%s is neither a file nor a folder", root);
  }

  corral_writer out;
  corral_writer_init(&out);
  ctx.out = &out;
  corral_begin_object(&out);
  corral_key(&out, "root");
  corral_cstring(&out, root);
  corral_key(&out, "matches");
  corral_begin_array(&out);
  if (file) {
    search_file(&ctx, -1, file, strrchr(file, '/') + 1);
  } else {
    walk_opts wo = {root, gitignore, &ctx, enter_dir, visit};
    walk_tree(&wo);
  }
  corral_end_array(&out);
  corral_key(&out, "count");
  corral_uint(&out, ctx.count);
  corral_key(&out, "truncated");
  corral_bool(&out, ctx.truncated);
  corral_key(&out, "files_searched");
  corral_uint(&out, ctx.searched);
  corral_key(&out, "files_skipped");
  corral_uint(&out, ctx.skipped);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
