/*
 * The shared part of glob and grep (walk.h says what is here).
 *
 * .gitignore, as gitignore(5) describes it and `git ls-files --others
 * --exclude-standard` behaves:
 *   - blank lines and "#" lines are no rules; "\#" and "\!" start a
 *     literal; trailing spaces are dropped unless escaped with "\";
 *   - "!" negates (re-includes), a trailing "/" matches folders only;
 *   - a pattern with a "/" at the start or in the middle is anchored to the
 *     folder of its .gitignore (matched with wildmatch, WM_PATHNAME, "**"
 *     segments); one without matches the name at any depth below it;
 *   - a deeper .gitignore decides before a shallower one, the last
 *     matching line of a file before earlier ones; .git/info/exclude
 *     decides last;
 *   - an ignored folder is not entered, so nothing under it can be
 *     re-included (git: "It is not possible to re-include a file if a
 *     parent directory of that file is excluded").
 * Not read: core.excludesFile (the user's global file is not in the
 * mount). A .gitignore that is a symlink is not read (git >= 2.32).
 *
 * The walk keeps its own stack of folders (no recursion), lists entries
 * with lstat semantics (a symlink is reported, never followed: a link to
 * a folder is a path, as git stores it) and sorts each folder's names as
 * git orders paths: by bytes, a folder compared as if its name ended in
 * "/". Depth-first in that order gives the byte order of whole paths, the
 * order of `git ls-files`.
 */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral.h"

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) corral_fail("out of memory");
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) corral_fail("out of memory");
  return p;
}

static char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void strlist_push(strlist *l, char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->items = xrealloc(l->items, l->cap * sizeof *l->items);
  }
  l->items[l->n++] = s;
}

char *ws_check_path(const char *p, size_t len, const char *field) {
  if (strlen(p) != len) corral_fail("\"%s\" must not contain NUL characters", field);
  if (strncmp(p, WS_ROOT, WS_ROOT_LEN) != 0 || (p[WS_ROOT_LEN] != '\0' && p[WS_ROOT_LEN] != '/'))
    corral_fail("\"%s\" must be /workspace or a path under it, got \"%.200s\"", field, p);
  char *out = xmalloc(len + 1);
  size_t w = 0;
  const char *s = p;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    const char *seg = s;
    while (*s && *s != '/') s++;
    size_t sl = (size_t)(s - seg);
    if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
      corral_fail("\"%s\" must not contain '.' or '..' segments", field);
    out[w++] = '/';
    memcpy(out + w, seg, sl);
    w += sl;
  }
  out[w] = '\0';
  return out;
}

/* ---- braces ------------------------------------------------------------------ */

static void expand(const char *p, strlist *out, size_t limit) {
  for (size_t i = 0; p[i]; i++) {
    if (p[i] == '\\') {
      if (p[i + 1]) i++;
      continue;
    }
    if (p[i] != '{') continue;
    /* Find the matching '}' and the commas at this level. */
    size_t depth = 0, close = 0, ncomma = 0;
    for (size_t j = i; p[j]; j++) {
      if (p[j] == '\\') {
        if (p[j + 1]) j++;
        continue;
      }
      if (p[j] == '{') depth++;
      else if (p[j] == '}' && --depth == 0) {
        close = j;
        break;
      } else if (p[j] == ',' && depth == 1) ncomma++;
    }
    if (!close || !ncomma) continue; /* literal '{' */
    size_t start = i + 1, plen = strlen(p);
    depth = 0;
    for (size_t j = i + 1; j <= close; j++) {
      if (p[j] == '\\' && j + 1 < close) {
        j++;
        continue;
      }
      if (p[j] == '{') depth++;
      else if (p[j] == '}' && depth > 0) {
        depth--;
        continue;
      }
      if ((p[j] == ',' && depth == 0) || j == close) {
        size_t alt = j - start;
        char *s = xmalloc(plen + 1);
        memcpy(s, p, i);
        memcpy(s + i, p + start, alt);
        memcpy(s + i + alt, p + close + 1, plen - close - 1);
        s[i + alt + plen - close - 1] = '\0';
        expand(s, out, limit);
        free(s);
        start = j + 1;
      }
    }
    return;
  }
  if (out->n >= limit) corral_fail("the braces expand to more than %zu patterns", limit);
  strlist_push(out, xstrndup(p, strlen(p)));
}

void brace_expand(const char *pattern, strlist *out, size_t limit) { expand(pattern, out, limit); }

/* ---- .gitignore ------------------------------------------------------------ */

bool ign_parse(const char *line, size_t len, ign_rule *rule) {
  if (len && line[len - 1] == '\r') len--; /* CRLF files */
  if (len == 0 || line[0] == '#') return false;
  /* Trailing spaces go, unless the last one is escaped. */
  while (len && line[len - 1] == ' ') {
    size_t bs = 0;
    while (bs + 1 < len && line[len - 2 - bs] == '\\') bs++;
    if (bs % 2) break;
    len--;
  }
  if (len == 0) return false;
  unsigned flags = 0;
  if (line[0] == '!') {
    flags |= IGN_NEGATE;
    line++;
    len--;
  } else if (line[0] == '\\' && len > 1 && (line[1] == '#' || line[1] == '!')) {
    line++;
    len--;
  }
  if (len && line[len - 1] == '/') {
    flags |= IGN_DIRONLY;
    len--;
  }
  if (len == 0) return false;
  if (memchr(line, '/', len)) flags |= IGN_ANCHORED;
  if (line[0] == '/') {
    line++;
    len--;
  }
  if (memchr(line, '\0', len)) return false;
  rule->pattern = xstrndup(line, len);
  rule->flags = flags;
  return true;
}

static char *read_small_file(int dirfd, const char *path, size_t *len) {
  int fd = dirfd >= 0 ? openat(dirfd, path, O_RDONLY) : open(path, O_RDONLY);
  if (fd < 0) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = xmalloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap >= (size_t)16 << 20) break; /* a 16 MiB .gitignore is enough */
      cap *= 2;
      buf = xrealloc(buf, cap + 1);
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  *len = n;
  return buf;
}

void ign_push_file(ign_stack *st, int dirfd, const char *path, const char *base) {
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 16;
    st->sets = xrealloc(st->sets, st->cap * sizeof *st->sets);
  }
  ign_set *set = &st->sets[st->n++];
  set->base_len = strlen(base);
  set->base = xstrndup(base, set->base_len);
  set->rules = NULL;
  set->n = 0;
  size_t len;
  char *text = read_small_file(dirfd, path, &len);
  if (!text) return;
  size_t cap = 0;
  const char *p = text, *end = text + len;
  /* A UTF-8 byte order mark is skipped, as git does. */
  if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
    ign_rule r;
    if (ign_parse(p, ll, &r)) {
      if (set->n == cap) {
        cap = cap ? cap * 2 : 16;
        set->rules = xrealloc(set->rules, cap * sizeof *set->rules);
      }
      set->rules[set->n++] = r;
    }
    p += ll + 1;
  }
  free(text);
}

void ign_pop_to(ign_stack *st, size_t n) {
  while (st->n > n) {
    ign_set *set = &st->sets[--st->n];
    for (size_t i = 0; i < set->n; i++) free(set->rules[i].pattern);
    free(set->rules);
    free(set->base);
  }
}

bool ign_rule_matches(const ign_rule *r, const char *base, size_t base_len, const char *rel, const char *name,
                      bool is_dir) {
  if ((r->flags & IGN_DIRONLY) && !is_dir) return false;
  if (!(r->flags & IGN_ANCHORED)) return wildmatch(r->pattern, name, 0);
  if (strncmp(rel, base, base_len) != 0) return false;
  return wildmatch(r->pattern, rel + base_len, WM_PATHNAME);
}

bool ign_is_ignored(const ign_stack *st, const char *rel, const char *name, bool is_dir) {
  for (size_t s = st->n; s-- > 0;) {
    const ign_set *set = &st->sets[s];
    for (size_t i = set->n; i-- > 0;) {
      const ign_rule *r = &set->rules[i];
      if (ign_rule_matches(r, set->base, set->base_len, rel, name, is_dir)) return !(r->flags & IGN_NEGATE);
    }
  }
  return false;
}

/* ---- the walk ------------------------------------------------------------------- */

typedef struct {
  char *name;
  unsigned char type; /* DT_DIR, DT_REG, DT_LNK, other */
} entry;

typedef struct {
  DIR *dir; /* kept open: its descriptor is what names inside it are opened from */
  int fd;
  entry *ents;
  size_t n, i;
  size_t path_len; /* length of this folder's path in the buffer */
  size_t ign_mark; /* ignore sets to keep when leaving it */
} frame;

/* git's path order: bytes, with a folder's name compared as "name/". */
static int cmp_entries(const void *a, const void *b) {
  const entry *x = a, *y = b;
  const unsigned char *p = (const unsigned char *)x->name, *q = (const unsigned char *)y->name;
  while (*p && *p == *q) p++, q++;
  unsigned c1 = *p ? *p : (x->type == DT_DIR ? '/' : 0);
  unsigned c2 = *q ? *q : (y->type == DT_DIR ? '/' : 0);
  return (int)c1 - (int)c2;
}

typedef struct {
  char *buf;
  size_t len, cap;
} pathbuf;

static void path_set_len(pathbuf *pb, size_t len) {
  pb->len = len;
  pb->buf[len] = '\0';
}

static void path_add(pathbuf *pb, const char *name) {
  size_t nl = strlen(name);
  if (pb->len + nl + 2 > pb->cap) {
    while (pb->len + nl + 2 > pb->cap) pb->cap *= 2;
    pb->buf = xrealloc(pb->buf, pb->cap);
  }
  pb->buf[pb->len++] = '/';
  memcpy(pb->buf + pb->len, name, nl + 1);
  pb->len += nl;
}

/* Reads and sorts the folder open at fd (which becomes the frame's); false
 * when it cannot be read. Names are later opened relative to it, so the
 * runtime resolves one name per call, not the whole path again. */
static bool read_folder(int fd, frame *f) {
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return false;
  }
  f->dir = d;
  f->fd = fd;
  size_t cap = 0;
  f->ents = NULL;
  f->n = 0;
  f->i = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (f->n == cap) {
      cap = cap ? cap * 2 : 32;
      f->ents = xrealloc(f->ents, cap * sizeof *f->ents);
    }
    entry *en = &f->ents[f->n++];
    en->name = xstrndup(e->d_name, strlen(e->d_name));
    en->type = e->d_type;
    if (en->type != DT_DIR && en->type != DT_REG && en->type != DT_LNK) {
      /* The host did not say: ask (no follow, so a link stays a link). */
      struct stat st;
      if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        en->type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
    }
  }
  if (f->n > 1) qsort(f->ents, f->n, sizeof *f->ents, cmp_entries);
  return true;
}

static void free_frame(frame *f) {
  closedir(f->dir);
  for (size_t i = 0; i < f->n; i++) free(f->ents[i].name);
  free(f->ents);
}

/* Reads the .gitignore of the folder just read into f (its path is in pb)
 * onto the stack, and remembers what to pop when leaving it. */
static void enter_ignores(frame *f, ign_stack *ign, bool gitignore, const pathbuf *pb) {
  f->ign_mark = ign->n;
  if (!gitignore) return;
  for (size_t k = 0; k < f->n; k++) {
    if (f->ents[k].type != DT_REG || strcmp(f->ents[k].name, ".gitignore") != 0) continue;
    /* Its base: the folder relative to /workspace, ending in '/' ("" at the top). */
    char *base = xmalloc(pb->len + 2);
    if (pb->len > WS_ROOT_LEN)
      sprintf(base, "%.*s/", (int)(pb->len - WS_ROOT_LEN - 1), pb->buf + WS_ROOT_LEN + 1);
    else
      base[0] = '\0';
    ign_push_file(ign, f->fd, ".gitignore", base);
    free(base);
    return;
  }
}

void walk_tree(const walk_opts *o) {
  size_t root_len = strlen(o->root);
  pathbuf pb = {xmalloc(root_len + 256), 0, root_len + 256};
  memcpy(pb.buf, o->root, root_len + 1);
  pb.len = root_len;
  /* rel to root: after root and its '/'; rel to /workspace likewise. */
  size_t rel_off = root_len + 1, ws_off = WS_ROOT_LEN + 1;

  ign_stack ign = {0};
  if (o->gitignore) {
    /* Lowest priority first: .git/info/exclude, then the .gitignore of
     * each folder above root (root's own is read on entering it). */
    ign_push_file(&ign, -1, WS_ROOT "/.git/info/exclude", "");
    char *dir = xstrndup(o->root, root_len);
    for (size_t i = WS_ROOT_LEN; i < root_len; i++) {
      if (dir[i] != '/') continue;
      dir[i] = '\0';
      char *file = xmalloc(i + 16);
      sprintf(file, "%s/.gitignore", dir);
      char *base = xmalloc(i + 2);
      sprintf(base, "%s/", dir + (i > WS_ROOT_LEN ? ws_off : i));
      if (i == WS_ROOT_LEN) base[0] = '\0';
      ign_push_file(&ign, -1, file, base);
      free(file);
      free(base);
      dir[i] = '/';
    }
    free(dir);
  }

  size_t cap = 16, depth = 0;
  frame *stack = xmalloc(cap * sizeof *stack);
  int root_fd = open(o->root, O_RDONLY | O_DIRECTORY);
  if (root_fd < 0 || !read_folder(root_fd, &stack[0])) corral_fail("cannot list %s: %s", o->root, strerror(errno));
  stack[0].path_len = root_len;
  stack[0].ign_mark = ign.n;
  depth = 1;
  bool stop = false;

  enter_ignores(&stack[0], &ign, o->gitignore, &pb);

  while (depth > 0 && !stop) {
    frame *f = &stack[depth - 1];
    if (f->i == f->n) {
      ign_pop_to(&ign, f->ign_mark);
      free_frame(f);
      depth--;
      if (depth > 0) path_set_len(&pb, stack[depth - 1].path_len);
      continue;
    }
    entry *e = &f->ents[f->i++];
    if (strcmp(e->name, ".git") == 0) continue;
    path_set_len(&pb, f->path_len);
    path_add(&pb, e->name);
    const char *rel = pb.buf + rel_off;
    const char *wsrel = pb.buf + ws_off;
    if (e->type == DT_DIR) {
      if (o->gitignore && ign_is_ignored(&ign, wsrel, e->name, true)) continue;
      if (o->enter_dir && !o->enter_dir(o->ctx, rel)) continue;
      if (depth >= WALK_MAX_DEPTH) {
        fprintf(stderr, "warning: %s: deeper than %d levels, not descending\n", pb.buf, WALK_MAX_DEPTH);
        continue;
      }
      if (depth == cap) {
        cap *= 2;
        stack = xrealloc(stack, cap * sizeof *stack);
      }
      frame *nf = &stack[depth];
      int fd = openat(f->fd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (fd < 0 || !read_folder(fd, nf)) {
        fprintf(stderr, "warning: cannot list %s: %s\n", pb.buf, strerror(errno));
        continue;
      }
      nf->path_len = pb.len;
      enter_ignores(nf, &ign, o->gitignore, &pb);
      depth++;
      continue;
    }
    if (o->gitignore && ign_is_ignored(&ign, wsrel, e->name, false)) continue;
    int kind = e->type == DT_REG ? WALK_FILE : e->type == DT_LNK ? WALK_LINK : WALK_OTHER;
    if (o->visit(o->ctx, f->fd, e->name, rel, kind)) stop = true;
  }
  while (depth > 0) free_frame(&stack[--depth]);
  free(stack);
  ign_pop_to(&ign, 0);
  free(ign.sets);
  free(pb.buf);
}
