/*
 * Directory and offset rules: fd_seek past the end then write leaves a hole
 * of zeros; fd_tell follows reads; seeking before 0 is EINVAL; rmdir of a
 * non-empty directory is ENOTEMPTY; renaming a file over a directory is
 * EISDIR and a directory over a file ENOTDIR; renaming a directory over an
 * empty one replaces it, over a non-empty one is ENOTEMPTY; fd_readdir
 * cookies resume a listing where it stopped.
 */
#include "check.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

int main(void) {
  int fd = open(ROOT "/hole.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create hole.bin: %s", ename(errno));
  printf("seek to 10: %lld\n", (long long)lseek(fd, 10, SEEK_SET));
  if (write(fd, "Z", 1) != 1) die("write: %s", ename(errno));
  printf("tell after write: %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
  struct stat s;
  MUST(fstat(fd, &s));
  printf("size: %lld\n", (long long)s.st_size);
  MUST(lseek(fd, 0, SEEK_SET));
  char buf[16];
  ssize_t n = read(fd, buf, sizeof buf);
  int zeros = 1;
  for (int i = 0; i < 10 && i < n; i++) zeros &= buf[i] == 0;
  printf("read back: %zd bytes, hole is zeros: %s, last '%c'\n", n, zeros ? "yes" : "no", n == 11 ? buf[10] : '?');
  printf("tell after read: %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
  printf("seek end-3: %lld\n", (long long)lseek(fd, -3, SEEK_END));
  printf("seek cur+1: %lld\n", (long long)lseek(fd, 1, SEEK_CUR));
  result("seek to -1", lseek(fd, -1, SEEK_SET));
  printf("read at 100: %zd\n", (lseek(fd, 100, SEEK_SET), read(fd, buf, 4)));
  close(fd);

  int dfd;
  /* POSIX says EISDIR; a preview1 directory descriptor has no fd_read right (EBADF, ENOTCAPABLE). */
  one_of("read on a directory", (dfd = open(ROOT "/dir", O_RDONLY), read(dfd, buf, 1)), "EISDIR|EBADF|ENOTCAPABLE");

  result("rmdir dir (not empty)", rmdir(ROOT "/dir"));
  result("rmdir file.txt", rmdir(ROOT "/file.txt"));
  result("rmdir missing", rmdir(ROOT "/missing"));
  result("rename file.txt over empty/", rename(ROOT "/file.txt", ROOT "/empty"));
  result("rename empty/ over file.txt", rename(ROOT "/empty", ROOT "/file.txt"));
  result("rename dir/ over empty/ (replaces it)", rename(ROOT "/empty", ROOT "/gone") == 0 &&
                                                        mkdir(ROOT "/empty", 0755) == 0
                                                    ? rename(ROOT "/dir/sub", ROOT "/empty")
                                                    : -1);
  result("empty/ is the old dir/sub", stat(ROOT "/dir/sub", &s) < 0 && errno == ENOENT ? stat(ROOT "/empty", &s) : -1);
  MUST(mkdir(ROOT "/full", 0755));
  MUST(close(open(ROOT "/full/x", O_WRONLY | O_CREAT, 0644)));
  result("rename dir over a non-empty dir", rename(ROOT "/empty", ROOT "/full"));
  result("rename a dir into itself", rename(ROOT "/full", ROOT "/full/inside"));
  result("rename a file onto itself", rename(ROOT "/file.txt", ROOT "/file.txt"));
  result("rename file.txt over dir/inner.txt", rename(ROOT "/file.txt", ROOT "/dir/inner.txt"));
  result("file.txt gone", stat(ROOT "/file.txt", &s));

  /* Cookies: read one entry, remember where, reopen and resume there. */
  for (int i = 0; i < 20; i++) {
    char name[32];
    snprintf(name, sizeof name, ROOT "/many/f%02d", i);
    if (i == 0) MUST(mkdir(ROOT "/many", 0755));
    MUST(close(open(name, O_WRONLY | O_CREAT, 0644)));
  }
  DIR *d = opendir(ROOT "/many");
  if (!d) die("opendir many: %s", ename(errno));
  int total = 0, seen[20] = {0};
  long mark = -1;
  char at_mark[64] = "";
  struct dirent *e;
  while ((e = readdir(d))) {
    total++;
    if (total == 7) mark = telldir(d);
    if (total == 8) snprintf(at_mark, sizeof at_mark, "%s", e->d_name);
    if (e->d_name[0] == 'f') seen[atoi(e->d_name + 1)]++;
  }
  int all_once = 1;
  for (int i = 0; i < 20; i++) all_once &= seen[i] == 1;
  printf("many: %d entries, each file once: %s\n", total, all_once ? "yes" : "no");
  seekdir(d, mark);
  e = readdir(d);
  printf("seekdir to the 7th cookie resumes at the 8th entry: %s\n", e && strcmp(e->d_name, at_mark) == 0 ? "yes" : "no");
  rewinddir(d);
  int again = 0;
  while (readdir(d)) again++;
  printf("rewinddir lists them all again: %s\n", again == total ? "yes" : "no");
  closedir(d);
  return 0;
}
