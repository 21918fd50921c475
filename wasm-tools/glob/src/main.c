/*
 * glob: the files of the mounted /workspace whose paths match glob
 * patterns, with git's pathspec semantics, so the answer is the set
 * `git ls-files -- ':(glob)PATTERN'` gives (README.md has the details).
 *
 * Input:  {"pattern"?: "src/(two stars)/(star).c", "patterns"?: [...],
 *          "path"?: "/workspace/...", "gitignore"?: true, "max_results"?: 1000}
 * Output: {"root", "files": ["a/b.c", ...], "count", "truncated"}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../lib/walk.h"
#include "corral.h"

#define DEFAULT_MAX 1000
#define MAX_MAX 100000
#define MAX_PATTERNS 1024

typedef struct {
  char *pattern;
  size_t len;     /* strlen(pattern); 0 means "everything" (".") */
  size_t literal; /* bytes before the first glob character */
} pathspec;

typedef struct {
  pathspec *include, *exclude;
  size_t n_include, n_exclude;
  int64_t max;
  size_t count;
  bool truncated;
  corral_writer *out;
} glob_ctx;

/* git's match_pathspec_item for a `:(glob)` item: the pattern equals the
 * path, or names a folder the path is in, or matches it with wildmatch
 * (WM_PATHNAME: '*' stays in one folder, "**" segments cross them). */
static bool ps_match(const pathspec *ps, const char *path) {
  if (ps->len == 0) return true;
  if (strncmp(ps->pattern, path, ps->len) == 0) {
    if (path[ps->len] == '\0') return true;
    if (ps->pattern[ps->len - 1] == '/' || path[ps->len] == '/') return true;
  }
  return ps->literal < ps->len && wildmatch(ps->pattern, path, WM_PATHNAME);
}

/* Can anything under folder `rel` match? Only the literal prefixes are
 * compared: this prunes folders, the real test is ps_match. */
static bool enter_dir(void *vctx, const char *rel) {
  glob_ctx *ctx = vctx;
  if (ctx->n_include == 0) return true;
  size_t rl = strlen(rel);
  for (size_t i = 0; i < ctx->n_include; i++) {
    const pathspec *ps = &ctx->include[i];
    size_t n = ps->literal < rl ? ps->literal : rl;
    if (strncmp(ps->pattern, rel, n) != 0) continue;
    if (ps->literal <= rl) return true; /* the fixed part is used up inside rel */
    /* The fixed part goes on past rel: it must continue with rel's '/'. */
    if (ps->pattern[rl] == '/') return true;
  }
  return false;
}

static bool visit(void *vctx, int dirfd, const char *name, const char *rel, int kind) {
  glob_ctx *ctx = vctx;
  if (kind == WALK_OTHER) return false; /* fifos, sockets: git has no such entries */
  bool in = ctx->n_include == 0;
  for (size_t i = 0; !in && i < ctx->n_include; i++) in = ps_match(&ctx->include[i], rel);
  if (!in) return false;
  for (size_t i = 0; i < ctx->n_exclude; i++)
    if (ps_match(&ctx->exclude[i], rel)) return false;
  if ((int64_t)ctx->count == ctx->max) {
    ctx->truncated = true;
    return true;
  }
  corral_cstring(ctx->out, rel);
  ctx->count++;
  return false;
}

/* One input pattern: strip "!" (an exclusion), accept a guest path under
 * root ("/workspace/src/x" when root is /workspace), drop leading "./",
 * expand braces, and add the results to the include or exclude list. */
static void add_pattern(const char *root, const char *p, size_t len, strlist *inc, strlist *exc) {
  if (strlen(p) != len) corral_fail("patterns must not contain NUL characters");
  bool negate = false;
  if (p[0] == '!') {
    negate = true;
    p++;
  }
  size_t rl = strlen(root);
  if (p[0] == '/') {
    if (strncmp(p, root, rl) == 0 && (p[rl] == '/' || p[rl] == '\0')) {
      p += rl;
      while (*p == '/') p++;
      if (*p == '\0') p = ".";
    } else {
      corral_fail("pattern \"%.200s\" is absolute but not under %s; patterns are relative to \"path\"", p, root);
    }
  }
  while (p[0] == '.' && p[1] == '/') {
    p += 2;
    while (*p == '/') p++;
  }
  if (*p == '\0') corral_fail("empty pattern (use \".\" or \"**\" for every file)");
  brace_expand(p, negate ? exc : inc, MAX_PATTERNS);
}

static pathspec *to_pathspecs(strlist *l) {
  pathspec *ps = calloc(l->n ? l->n : 1, sizeof *ps);
  if (!ps) corral_fail("out of memory");
  for (size_t i = 0; i < l->n; i++) {
    char *p = l->items[i];
    if (strcmp(p, ".") == 0) p[0] = '\0';
    ps[i].pattern = p;
    ps[i].len = strlen(p);
    ps[i].literal = wildmatch_literal_prefix(p);
  }
  return ps;
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"pattern", "patterns", "path", "gitignore", "max_results", NULL};
  corral_only_fields(input, fields, NULL);

  size_t path_len;
  const char *path_in = corral_get_string(input, "path", WS_ROOT, &path_len);
  char *root = ws_check_path(path_in, path_len, "path");
  bool gitignore = corral_get_bool(input, "gitignore", true);
  int64_t max = corral_get_int(input, "max_results", DEFAULT_MAX);
  if (max < 1 || max > MAX_MAX) corral_fail("\"max_results\" must be between 1 and %d", MAX_MAX);

  strlist inc = {0}, exc = {0};
  size_t given = 0;
  size_t plen;
  const char *one = corral_get_string(input, "pattern", NULL, &plen);
  if (one) {
    add_pattern(root, one, plen, &inc, &exc);
    given++;
  }
  const corral_value *many = corral_get_array(input, "patterns");
  for (size_t i = 0; many && i < many->length; i++) {
    const corral_value *v = &many->items[i];
    if (v->type != CORRAL_STRING) corral_fail("patterns[%zu] must be a string, got %s", i, corral_type_name(v->type));
    add_pattern(root, v->string, v->length, &inc, &exc);
    given++;
  }
  if (given == 0) corral_fail("missing required input field \"pattern\" (or \"patterns\")");

  struct stat st;
  if (stat(root, &st) != 0) corral_fail("path not found: %s", root);
  if (!S_ISDIR(st.st_mode)) corral_fail("%s is not a folder", root);

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  corral_key(&out, "root");
  corral_cstring(&out, root);
  corral_key(&out, "files");
  corral_begin_array(&out);
  glob_ctx ctx = {to_pathspecs(&inc), to_pathspecs(&exc), inc.n, exc.n, max, 0, false, &out};
  walk_opts wo = {root, gitignore, &ctx, enter_dir, visit};
  walk_tree(&wo);
  corral_end_array(&out);
  corral_key(&out, "count");
  corral_uint(&out, ctx.count);
  corral_key(&out, "truncated");
  corral_bool(&out, ctx.truncated);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
