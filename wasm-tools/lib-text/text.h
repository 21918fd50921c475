/*
 * Shared by the read, edit and apply-patch tools: workspace paths, reading a
 * whole file, git's binary test, encoding checks and atomic writes.
 *
 * Header-only on purpose: a tool includes it as "../../lib-text/text.h",
 * so wasm-tools/build.mjs (which compiles each tool's src/ C files and the kit)
 * needs no change, and a tool pays only for what it calls (every function is
 * static; the unused ones are dropped by the compiler).
 */
#ifndef CORRAL_LIB_TEXT_H
#define CORRAL_LIB_TEXT_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral.h"

#define LT_UNUSED __attribute__((unused))
#define LT_ROOT "/workspace"
/* git's buffer_is_binary(): a NUL byte in the first 8000 bytes. */
#define LT_BINARY_PROBE 8000

typedef struct {
  char *rel;   /* "src/a.c": no leading slash, no empty/"."/".." segments */
  char *guest; /* "/workspace/src/a.c" */
} lt_path;

static LT_UNUSED void *lt_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) corral_fail("out of memory (%zu bytes)", n);
  return p;
}

static LT_UNUSED void *lt_xrealloc(void *p, size_t n) {
  void *r = realloc(p, n ? n : 1);
  if (!r) corral_fail("out of memory (%zu bytes)", n);
  return r;
}

static LT_UNUSED char *lt_dupn(const char *s, size_t n) {
  char *r = lt_xmalloc(n + 1);
  memcpy(r, s, n);
  r[n] = '\0';
  return r;
}

/*
 * A path relative to /workspace ("src/a.c"), or the same path written under
 * /workspace ("/workspace/src/a.c"). Refused, each with a sentence that says
 * why: empty, NUL bytes, another absolute path, and "." or ".." segments
 * (the sandbox would refuse an escape anyway; this says it clearly).
 * Returns 0, or -1 with the reason in err.
 */
static LT_UNUSED int lt_check_path(const char *p, size_t len, lt_path *out,
                                   char *err, size_t err_size) {
  if (strlen(p) != len) {
    snprintf(err, err_size, "must not contain NUL characters");
    return -1;
  }
  const char *s = p;
  size_t rl = strlen(LT_ROOT);
  if (s[0] == '/') {
    if (strncmp(s, LT_ROOT, rl) != 0 || (s[rl] != '\0' && s[rl] != '/')) {
      snprintf(err, err_size,
               "must be relative to /workspace (or start with /workspace/), "
               "got the absolute path \"%.200s\"",
               p);
      return -1;
    }
    s += rl;
  }
  char *rel = lt_xmalloc(len + 1);
  size_t w = 0;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    const char *seg = s;
    while (*s && *s != '/') s++;
    size_t sl = (size_t)(s - seg);
    if ((sl == 1 && seg[0] == '.') ||
        (sl == 2 && seg[0] == '.' && seg[1] == '.')) {
      free(rel);
      snprintf(err, err_size,
               "must not contain '.' or '..' segments (paths stay inside "
               "/workspace), got \"%.200s\"",
               p);
      return -1;
    }
    if (w) rel[w++] = '/';
    memcpy(rel + w, seg, sl);
    w += sl;
  }
  rel[w] = '\0';
  if (w == 0) {
    free(rel);
    snprintf(err, err_size, "must name a file under /workspace, got \"%.200s\"",
             p);
    return -1;
  }
  out->rel = rel;
  out->guest = lt_xmalloc(rl + 1 + w + 1);
  memcpy(out->guest, LT_ROOT, rl);
  out->guest[rl] = '/';
  memcpy(out->guest + rl + 1, rel, w + 1);
  return 0;
}

/* lt_check_path for an input field: fails the tool naming the field. */
static LT_UNUSED lt_path lt_field_path(const char *field, const char *p,
                                       size_t len) {
  lt_path r;
  char err[512];
  if (lt_check_path(p, len, &r, err, sizeof err) != 0)
    corral_fail("\"%s\" %s", field, err);
  return r;
}

/*
 * Reads a whole regular file into a NUL-terminated heap buffer. Returns 0,
 * or an errno value (ENOENT, EISDIR, EFBIG over max_bytes, ...) and leaves
 * *data NULL. Symlinks are followed as the sandbox allows (never out of the
 * mount).
 */
static LT_UNUSED int lt_read_file(const char *guest, size_t max_bytes,
                                  char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  struct stat st;
  if (stat(guest, &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (!S_ISREG(st.st_mode)) return EINVAL;
  if ((uint64_t)st.st_size > max_bytes) return EFBIG;
  int fd = open(guest, O_RDONLY);
  if (fd < 0) return errno;
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *buf = lt_xmalloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap > max_bytes) {
        free(buf);
        close(fd);
        return EFBIG;
      }
      cap *= 2;
      buf = lt_xrealloc(buf, cap + 1);
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(buf);
      close(fd);
      return e;
    }
    n += (size_t)r;
  }
  close(fd);
  if (n > max_bytes) {
    free(buf);
    return EFBIG;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return 0;
}

/* The sentence for an lt_read_file error on `rel`. */
static LT_UNUSED const char *lt_read_error(int e) {
  switch (e) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "a parent of it is not a folder";
    case EISDIR: return "is a folder, not a file";
    case EINVAL: return "is not a regular file";
    case EFBIG: return "is larger than this tool reads";
    case EACCES:
    case EPERM: return "permission denied (is /workspace mounted?)";
    default: return strerror(e);
  }
}

/* git's test: the offset of the first NUL in the first 8000 bytes, or -1. */
static LT_UNUSED long lt_binary_offset(const char *buf, size_t len) {
  size_t n = len < LT_BINARY_PROBE ? len : LT_BINARY_PROBE;
  const char *z = memchr(buf, '\0', n);
  return z ? (long)(z - buf) : -1;
}

typedef enum { LT_BOM_NONE, LT_BOM_UTF8, LT_BOM_UTF16LE, LT_BOM_UTF16BE, LT_BOM_UTF32LE, LT_BOM_UTF32BE } lt_bom;

static LT_UNUSED lt_bom lt_detect_bom(const char *b, size_t n) {
  const unsigned char *u = (const unsigned char *)b;
  if (n >= 4 && u[0] == 0xFF && u[1] == 0xFE && u[2] == 0 && u[3] == 0) return LT_BOM_UTF32LE;
  if (n >= 4 && u[0] == 0 && u[1] == 0 && u[2] == 0xFE && u[3] == 0xFF) return LT_BOM_UTF32BE;
  if (n >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) return LT_BOM_UTF8;
  if (n >= 2 && u[0] == 0xFF && u[1] == 0xFE) return LT_BOM_UTF16LE;
  if (n >= 2 && u[0] == 0xFE && u[1] == 0xFF) return LT_BOM_UTF16BE;
  return LT_BOM_NONE;
}

static LT_UNUSED const char *lt_bom_name(lt_bom b) {
  switch (b) {
    case LT_BOM_UTF8: return "utf-8-bom";
    case LT_BOM_UTF16LE: return "utf-16le";
    case LT_BOM_UTF16BE: return "utf-16be";
    case LT_BOM_UTF32LE: return "utf-32le";
    case LT_BOM_UTF32BE: return "utf-32be";
    default: return "utf-8";
  }
}

/*
 * Length of the valid UTF-8 sequence at s[0] (1-4), or 0 when s[0] starts
 * no valid sequence (overlongs, surrogates and > U+10FFFF are invalid).
 */
static LT_UNUSED size_t lt_utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t k;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) k = 2;
  else if (c == 0xE0) { k = 3; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) k = 3;
  else if (c == 0xED) { k = 3; hi = 0x9F; }
  else if (c >= 0xEE && c <= 0xEF) k = 3;
  else if (c == 0xF0) { k = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) k = 4;
  else if (c == 0xF4) { k = 4; hi = 0x8F; }
  else return 0;
  if (n < k) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return k;
}

/* Counts the bytes that start no valid UTF-8 sequence; *first gets the
 * offset of the first one (untouched when there is none). */
static LT_UNUSED size_t lt_utf8_invalid(const char *b, size_t n, size_t *first) {
  const unsigned char *s = (const unsigned char *)b;
  size_t bad = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = lt_utf8_seq(s + i, n - i);
    if (k == 0) {
      if (bad++ == 0 && first) *first = i;
      i++;
    } else {
      i += k;
    }
  }
  return bad;
}

/* 1-based line number of byte offset `off` ('\n'-terminated lines). */
static LT_UNUSED size_t lt_line_of(const char *b, size_t off) {
  size_t line = 1;
  for (const char *p = b, *end = b + off; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
    line++;
  return line;
}

/* Splits "dir/name" at the last slash: the folder part ("/workspace" at least). */
static LT_UNUSED char *lt_dirname(const char *guest) {
  const char *slash = strrchr(guest, '/');
  return lt_dupn(guest, slash ? (size_t)(slash - guest) : 0);
}

/*
 * Writes data to a new temporary file beside `guest` (same folder, so the
 * rename that follows is atomic on every host filesystem). Returns the
 * temporary's path, or NULL with errno set; a partial temporary is removed.
 */
static LT_UNUSED char *lt_write_temp(const char *guest, const char *data, size_t len) {
  static unsigned counter;
  const char *slash = strrchr(guest, '/');
  size_t dl = slash ? (size_t)(slash - guest) : 0;
  const char *name = slash ? slash + 1 : guest;
  for (int attempt = 0; attempt < 100; attempt++) {
    size_t cap = dl + strlen(name) + 64;
    char *tmp = lt_xmalloc(cap);
    snprintf(tmp, cap, "%.*s/.%s.corral-%u.tmp", (int)dl, guest, name,
             ++counter);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      int e = errno;
      free(tmp);
      if (e == EEXIST) continue;
      errno = e;
      return NULL;
    }
    size_t off = 0;
    while (off < len) {
      ssize_t w = write(fd, data + off, len - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        errno = e;
        return NULL;
      }
      off += (size_t)w;
    }
    if (close(fd) != 0) {
      int e = errno;
      unlink(tmp);
      free(tmp);
      errno = e;
      return NULL;
    }
    return tmp;
  }
  errno = EEXIST;
  return NULL;
}

#endif
