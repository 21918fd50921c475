/*
 * path_open's oflags, fdflags and rights: O_DIRECTORY, O_EXCL, O_TRUNC,
 * O_APPEND; a descriptor without fd_read cannot read and one without
 * fd_write cannot write; fd_fdstat_get reports the fdflags asked for.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <wasi/api.h>

static void put(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create %s: %s", path, ename(errno));
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) die("write %s", path);
  close(fd);
}

static void show(const char *label, const char *path) {
  char buf[64] = {0};
  int fd = open(path, O_RDONLY);
  if (fd < 0) die("open %s: %s", path, ename(errno));
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n < 0) die("read %s: %s", path, ename(errno));
  close(fd);
  printf("%s: \"", label);
  for (ssize_t i = 0; i < n; i++) printf(buf[i] == '\n' ? "\\n" : "%c", buf[i]);
  printf("\"\n");
}

static void flags(const char *label, int fd) {
  __wasi_fdstat_t st;
  __wasi_errno_t e = __wasi_fd_fdstat_get(fd, &st);
  if (e) die("fdstat %s: %s", label, ename(e));
  printf("%s fdflags: append=%d dsync=%d sync=%d nonblock=%d\n", label, !!(st.fs_flags & __WASI_FDFLAGS_APPEND),
         !!(st.fs_flags & __WASI_FDFLAGS_DSYNC), !!(st.fs_flags & __WASI_FDFLAGS_SYNC),
         !!(st.fs_flags & __WASI_FDFLAGS_NONBLOCK));
}

static const char *filetype(int fd) {
  __wasi_fdstat_t st;
  if (__wasi_fd_fdstat_get(fd, &st)) return "error";
  switch (st.fs_filetype) {
    case __WASI_FILETYPE_REGULAR_FILE: return "regular_file";
    case __WASI_FILETYPE_DIRECTORY: return "directory";
    default: return "other";
  }
}

int main(void) {
  char c;
  result("open dir O_RDONLY|O_DIRECTORY", open(ROOT "/dir", O_RDONLY | O_DIRECTORY));
  result("open dir O_WRONLY", open(ROOT "/dir", O_WRONLY));
  result("open dir O_WRONLY|O_DIRECTORY", open(ROOT "/dir", O_WRONLY | O_DIRECTORY));
  result("open dir O_RDWR|O_DIRECTORY", open(ROOT "/dir", O_RDWR | O_DIRECTORY));
  result("open file.txt O_DIRECTORY", open(ROOT "/file.txt", O_RDONLY | O_DIRECTORY));
  result("open missing O_RDONLY", open(ROOT "/missing", O_RDONLY));
  result("open file.txt O_CREAT|O_EXCL", open(ROOT "/file.txt", O_WRONLY | O_CREAT | O_EXCL, 0644));
  result("open dir O_CREAT|O_EXCL", open(ROOT "/dir", O_WRONLY | O_CREAT | O_EXCL, 0644));
  result("open fresh.txt O_CREAT|O_EXCL", open(ROOT "/fresh.txt", O_WRONLY | O_CREAT | O_EXCL, 0644));
  show("fresh.txt", ROOT "/fresh.txt");

  int fd = open(ROOT "/dir", O_RDONLY | O_DIRECTORY);
  printf("filetype of dir: %s\n", filetype(fd));
  close(fd);

  /* O_TRUNC empties an existing file. */
  put(ROOT "/t.txt", "abcdef");
  fd = open(ROOT "/t.txt", O_WRONLY | O_TRUNC);
  if (fd < 0) die("open O_TRUNC: %s", ename(errno));
  struct stat s;
  MUST(fstat(fd, &s));
  printf("size after O_TRUNC: %lld\n", (long long)s.st_size);
  printf("filetype of t.txt: %s\n", filetype(fd));
  flags("O_WRONLY", fd);
  /* fd_write on a descriptor without fd_read: reading is refused. */
  one_of("read on a write-only fd", read(fd, &c, 1), "EBADF|ENOTCAPABLE");
  close(fd);
  fd = open(ROOT "/t.txt", O_RDONLY);
  one_of("write on a read-only fd", write(fd, "x", 1), "EBADF|ENOTCAPABLE");
  close(fd);

  /* Without O_TRUNC, a write replaces bytes in place. */
  put(ROOT "/t.txt", "abcdef");
  fd = open(ROOT "/t.txt", O_WRONLY);
  if (write(fd, "XY", 2) != 2) die("write XY");
  close(fd);
  show("overwrite at 0", ROOT "/t.txt");

  /* O_APPEND: every write goes to the end, wherever the offset was put. */
  fd = open(ROOT "/file.txt", O_WRONLY | O_APPEND);
  if (fd < 0) die("open O_APPEND: %s", ename(errno));
  flags("O_APPEND", fd);
  MUST(lseek(fd, 0, SEEK_SET));
  if (write(fd, "A", 1) != 1) die("write A: %s", ename(errno));
  printf("offset after append: %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
  MUST(lseek(fd, 2, SEEK_SET));
  if (write(fd, "B", 1) != 1) die("write B: %s", ename(errno));
  close(fd);
  show("file.txt after appends", ROOT "/file.txt");

  fd = open(ROOT "/file.txt", O_RDWR | O_APPEND);
  if (fd < 0) die("open O_RDWR|O_APPEND: %s", ename(errno));
  char buf[4] = {0};
  ssize_t n = read(fd, buf, 3);
  printf("O_RDWR|O_APPEND reads from the start: %s\n", n == 3 && memcmp(buf, "hel", 3) == 0 ? "yes" : "no");
  close(fd);

  fd = open(ROOT "/s.txt", O_WRONLY | O_CREAT | O_SYNC, 0644);
  if (fd < 0) die("open O_SYNC: %s", ename(errno));
  flags("O_SYNC", fd);
  close(fd);
  fd = open(ROOT "/s.txt", O_WRONLY | O_DSYNC);
  if (fd < 0) die("open O_DSYNC: %s", ename(errno));
  flags("O_DSYNC", fd);
  close(fd);
  fd = open(ROOT "/s.txt", O_WRONLY | O_APPEND | O_SYNC);
  if (fd < 0) die("open O_APPEND|O_SYNC: %s", ename(errno));
  flags("O_APPEND|O_SYNC", fd);
  close(fd);
  return 0;
}
