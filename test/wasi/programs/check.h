/*
 * Shared by the conformance programs in this folder. Each program prints
 * facts to stdout, one "label: value" per line, in a form that is the same
 * on every host that follows the WASI preview1 specification; where the
 * specification allows several answers (several errnos, say) the program
 * prints the whole allowed set, and the answer the host actually gave goes
 * to stderr. A setup step that fails (not the behaviour under test) ends the
 * program with status 2 and a message on stderr.
 *
 * The mount under test is the preopened directory /sandbox; it starts as
 *   file.txt  "hello\n"
 *   dir/inner.txt  "inner\n"
 *   dir/sub/
 *   empty/
 */
#ifndef CONFORMANCE_CHECK_H
#define CONFORMANCE_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROOT "/sandbox"

/* Line by line, so a program that traps or hangs still shows how far it got. */
__attribute__((constructor)) static void line_buffered(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

/* wasi-libc's errno values are the preview1 errno codes. */
static inline const char *ename(int e) {
  switch (e) {
    case 0: return "ok";
    case E2BIG: return "E2BIG";
    case EACCES: return "EACCES";
    case EBADF: return "EBADF";
    case EEXIST: return "EEXIST";
    case EFAULT: return "EFAULT";
    case EILSEQ: return "EILSEQ";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOENT: return "ENOENT";
    case ENOSYS: return "ENOSYS";
    case ENOTCAPABLE: return "ENOTCAPABLE";
    case ENOTDIR: return "ENOTDIR";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ENOTSOCK: return "ENOTSOCK";
    case ENOTSUP: return "ENOTSUP";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ESPIPE: return "ESPIPE";
    case EXDEV: return "EXDEV";
    default: {
      static char buf[24];
      snprintf(buf, sizeof buf, "errno%d", e);
      return buf;
    }
  }
}

static inline void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("setup failed: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stdout);
  exit(2);
}

/* A setup call that must succeed. */
#define MUST(call) \
  do { if ((call) < 0) die("%s: %s", #call, ename(errno)); } while (0)

/* The outcome of a call that returns -1 and sets errno: "ok" or the errno name. */
static inline const char *outcome(long rc) { return rc < 0 ? ename(errno) : "ok"; }

/* Print the outcome of a call whose only correct answer is `want` ("ok" or an errno name). */
static inline void result(const char *label, long rc) {
  printf("%s: %s\n", label, outcome(rc));
}

/*
 * Print `allowed` (a "|"-separated list of errno names, or "ok") when the
 * outcome is one of them, and the outcome itself otherwise; the outcome
 * always goes to stderr too.
 */
static inline void one_of(const char *label, long rc, const char *allowed) {
  const char *got = outcome(rc);
  size_t n = strlen(got);
  const char *p = allowed;
  int match = 0;
  while (*p) {
    const char *end = strchr(p, '|');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, got, n) == 0) match = 1;
    p += len + (end ? 1 : 0);
    if (!end) break;
  }
  fprintf(stderr, "%s: %s\n", label, got);
  printf("%s: %s\n", label, match ? allowed : got);
}

/* Print "same" or "different". */
static inline void same(const char *label, int equal) { printf("%s: %s\n", label, equal ? "same" : "different"); }

#endif
