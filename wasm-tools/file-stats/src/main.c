/*
 * file-stats: counts lines, words and bytes of the files under a folder of
 * the mounted /workspace. It exists to prove that mounts work end to end:
 * the tool only ever sees what the runtime preopened at /workspace.
 *
 * Input:  {"path"?: "/workspace/...", "pattern"?: "*.ts"}
 * Output: {"root", "files":[{"path","lines","words","bytes"}], "totals"}
 *
 * Counting follows `wc` in the C locale: lines = number of '\n' bytes,
 * words = maximal runs of bytes that are not ASCII whitespace
 * (space, \t, \n, \v, \f, \r), bytes = bytes read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral.h"

#define ROOT "/workspace"
/* Deeper trees are almost certainly a loop or an attack; stop descending. */
#define MAX_DEPTH 128

typedef struct {
  uint64_t files, lines, words, bytes;
} totals;

typedef struct {
  const char *pattern;
  int pattern_has_slash;
  size_t base_len; /* length of the walked root, to form relative paths */
  corral_writer *out; /* inside the "files" array */
  totals sum;
} walk_ctx;

static int is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

static void count_file(walk_ctx *ctx, const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) corral_fail("cannot open %s: %s", path, strerror(errno));
  static unsigned char buf[64 * 1024];
  uint64_t lines = 0, words = 0, bytes = 0;
  int in_word = 0; /* carried across reads: a word may span two chunks */
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      corral_fail("cannot read %s: %s", path, strerror(errno));
    }
    bytes += (uint64_t)n;
    for (ssize_t i = 0; i < n; i++) {
      unsigned char c = buf[i];
      if (c == '\n') lines++;
      if (is_ws(c)) {
        in_word = 0;
      } else if (!in_word) {
        in_word = 1;
        words++;
      }
    }
  }
  close(fd);

  corral_begin_object(ctx->out);
  corral_key(ctx->out, "path");
  corral_cstring(ctx->out, path);
  corral_key(ctx->out, "lines");
  corral_uint(ctx->out, lines);
  corral_key(ctx->out, "words");
  corral_uint(ctx->out, words);
  corral_key(ctx->out, "bytes");
  corral_uint(ctx->out, bytes);
  corral_end_object(ctx->out);
  ctx->sum.files++;
  ctx->sum.lines += lines;
  ctx->sum.words += words;
  ctx->sum.bytes += bytes;
}

/* A pattern with a '/' matches the path relative to the walked folder,
 * '/' only matched literally (so "src/main-?.c" works); one without a '/'
 * matches the file name alone, in any folder. */
static int matches(const walk_ctx *ctx, const char *path, const char *name) {
  if (!ctx->pattern) return 1;
  if (ctx->pattern_has_slash) {
    const char *rel = path + ctx->base_len;
    while (*rel == '/') rel++;
    return fnmatch(ctx->pattern, rel, FNM_PATHNAME) == 0;
  }
  return fnmatch(ctx->pattern, name, 0) == 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  char *p = malloc(dl + nl + 2);
  if (!p) corral_fail("out of memory");
  memcpy(p, dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, name, nl + 1);
  return p;
}

static void walk(walk_ctx *ctx, const char *dir, int depth) {
  if (depth > MAX_DEPTH) {
    fprintf(stderr, "warning: %s: deeper than %d levels, not descending\n",
            dir, MAX_DEPTH);
    return;
  }
  DIR *d = opendir(dir);
  if (!d) corral_fail("cannot list %s: %s", dir, strerror(errno));
  /* readdir order is whatever the host filesystem gives; sort by bytes so
   * the output is the same on every host. */
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) corral_fail("out of memory");
      names = nn;
    }
    names[n] = strdup(e->d_name);
    if (!names[n]) corral_fail("out of memory");
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);

  for (size_t i = 0; i < n; i++) {
    char *child = join(dir, names[i]);
    struct stat st;
    /* lstat: a symlink is not followed, so a link cannot lead the walk out
     * of the mount or into a cycle. */
    if (lstat(child, &st) != 0) {
      fprintf(stderr, "warning: cannot stat %s: %s\n", child, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
      walk(ctx, child, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      if (matches(ctx, child, names[i])) count_file(ctx, child);
    } else {
      fprintf(stderr, "note: skipping %s (not a regular file)\n", child);
    }
    free(child);
    free(names[i]);
  }
  free(names);
}

/* Accepts "/workspace" and "/workspace/..." without "." or ".." segments;
 * returns a copy with duplicate and trailing slashes removed. */
static char *check_path(const char *p, size_t len) {
  if (strlen(p) != len) corral_fail("\"path\" must not contain NUL characters");
  size_t rl = strlen(ROOT);
  if (strncmp(p, ROOT, rl) != 0 || (p[rl] != '\0' && p[rl] != '/'))
    corral_fail("\"path\" must be /workspace or a path under it, got \"%.200s\"",
              p);
  char *out = malloc(len + 1);
  if (!out) corral_fail("out of memory");
  size_t w = 0;
  const char *s = p;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    const char *seg = s;
    while (*s && *s != '/') s++;
    size_t sl = (size_t)(s - seg);
    if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
      corral_fail("\"path\" must not contain '.' or '..' segments");
    out[w++] = '/';
    memcpy(out + w, seg, sl);
    w += sl;
  }
  out[w] = '\0';
  return out;
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"path", "pattern", NULL};
  corral_only_fields(input, fields, "\"path\" and/or \"pattern\"");

  size_t path_len;
  const char *path_in = corral_get_string(input, "path", ROOT, &path_len);
  size_t pattern_len;
  const char *pattern = corral_get_string(input, "pattern", NULL, &pattern_len);
  if (pattern && (strlen(pattern) != pattern_len || pattern_len == 0))
    corral_fail("\"pattern\" must be a non-empty glob without NUL characters");
  char *root = check_path(path_in, path_len);

  struct stat st;
  if (stat(root, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      corral_fail("path not found: %s", root);
    corral_fail("cannot access %s: %s (is /workspace mounted?)", root,
                strerror(errno));
  }

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  corral_key(&out, "root");
  corral_cstring(&out, root);
  corral_key(&out, "files");
  corral_begin_array(&out);
  walk_ctx ctx = {pattern, pattern && strchr(pattern, '/') != NULL,
                  strlen(root), &out, {0, 0, 0, 0}};
  if (S_ISDIR(st.st_mode)) {
    walk(&ctx, root, 0);
  } else if (S_ISREG(st.st_mode)) {
    const char *slash = strrchr(root, '/');
    ctx.base_len = (size_t)(slash - root);
    if (matches(&ctx, root, slash + 1)) count_file(&ctx, root);
  } else {
    corral_fail("%s is neither a file nor a folder", root);
  }
  corral_end_array(&out);
  corral_key(&out, "totals");
  corral_begin_object(&out);
  corral_key(&out, "files");
  corral_uint(&out, ctx.sum.files);
  corral_key(&out, "lines");
  corral_uint(&out, ctx.sum.lines);
  corral_key(&out, "words");
  corral_uint(&out, ctx.sum.words);
  corral_key(&out, "bytes");
  corral_uint(&out, ctx.sum.bytes);
  corral_end_object(&out);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
