/*
 * A path is a string: one with a NUL byte in it is invalid (EINVAL or
 * EILSEQ), not a permission problem. libc stops at NUL, so the raw calls
 * are made with an explicit length.
 */
#include "check.h"
#include <fcntl.h>
#include <wasi/api.h>

int main(void) {
  int dir = open(ROOT, O_RDONLY | O_DIRECTORY);
  if (dir < 0) die("open root: %s", ename(errno));
  /* "file.txt\0x": the whole path, NUL included, is what the call gets. */
  static const char path[] = "file.txt\0x";
  const size_t len = sizeof path - 1;
  __wasi_fd_t fd;
  __wasi_filestat_t st;

  /* The raw import takes (ptr, len); wasi/api.h's wrapper uses strlen. */
  extern int32_t raw_path_open(int32_t, int32_t, int32_t, int32_t, int32_t, int64_t, int64_t, int32_t, int32_t)
      __attribute__((__import_module__("wasi_snapshot_preview1"), __import_name__("path_open")));
  extern int32_t raw_path_filestat_get(int32_t, int32_t, int32_t, int32_t, int32_t)
      __attribute__((__import_module__("wasi_snapshot_preview1"), __import_name__("path_filestat_get")));
  extern int32_t raw_path_create_directory(int32_t, int32_t, int32_t)
      __attribute__((__import_module__("wasi_snapshot_preview1"), __import_name__("path_create_directory")));

  int32_t r = raw_path_open(dir, 0, (int32_t)path, len, 0, __WASI_RIGHTS_FD_READ, 0, 0, (int32_t)&fd);
  one_of("path_open with NUL", r ? (errno = r, -1) : 0, "EINVAL|EILSEQ");
  r = raw_path_filestat_get(dir, 0, (int32_t)path, len, (int32_t)&st);
  one_of("path_filestat_get with NUL", r ? (errno = r, -1) : 0, "EINVAL|EILSEQ");
  static const char newdir[] = "new\0dir";
  r = raw_path_create_directory(dir, (int32_t)newdir, sizeof newdir - 1);
  one_of("path_create_directory with NUL", r ? (errno = r, -1) : 0, "EINVAL|EILSEQ");
  static const char lone[] = "\0";
  r = raw_path_filestat_get(dir, 0, (int32_t)lone, 1, (int32_t)&st);
  one_of("path_filestat_get of a lone NUL", r ? (errno = r, -1) : 0, "EINVAL|EILSEQ");
  /* Not UTF-8 is not NUL: a host may take it (a byte name) or refuse it as EILSEQ. */
  static const char latin1[] = "caf\xe9";
  r = raw_path_filestat_get(dir, 0, (int32_t)latin1, sizeof latin1 - 1, (int32_t)&st);
  one_of("path_filestat_get of a missing non-UTF-8 name", r ? (errno = r, -1) : 0, "ENOENT|EILSEQ");
  return 0;
}
