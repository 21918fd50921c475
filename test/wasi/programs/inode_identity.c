/*
 * Inode identity: filestat's dev and ino name a file, whatever path or
 * descriptor reached it (path_filestat_get, fd_filestat_get, path_link,
 * path_rename).
 */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>

static struct stat st(const char *path) {
  struct stat s;
  if (stat(path, &s) < 0) die("stat %s: %s", path, ename(errno));
  return s;
}

static int ident(struct stat a, struct stat b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

int main(void) {
  struct stat file = st(ROOT "/file.txt");
  same("file.txt via ./file.txt", ident(file, st(ROOT "/./file.txt")));
  same("file.txt via dir/../file.txt", ident(file, st(ROOT "/dir/../file.txt")));

  int fd = open(ROOT "/file.txt", O_RDONLY);
  if (fd < 0) die("open file.txt: %s", ename(errno));
  struct stat f;
  MUST(fstat(fd, &f));
  same("fstat vs stat", ident(file, f));

  struct stat inner = st(ROOT "/dir/inner.txt");
  same("dev of two files in one mount", file.st_dev == inner.st_dev);
  same("ino of two files", file.st_ino == inner.st_ino);
  same("ino of two directories", st(ROOT "/dir").st_ino == st(ROOT "/empty").st_ino);
  same("dir via dir/sub/..", ident(st(ROOT "/dir"), st(ROOT "/dir/sub/..")));

  int dfd = open(ROOT "/dir", O_RDONLY | O_DIRECTORY);
  if (dfd < 0) die("open dir: %s", ename(errno));
  struct stat d;
  MUST(fstat(dfd, &d));
  same("fstat vs stat of a directory", ident(st(ROOT "/dir"), d));

  MUST(link(ROOT "/file.txt", ROOT "/hard.txt"));
  struct stat hard = st(ROOT "/hard.txt");
  same("hard link", ident(file, hard));
  printf("nlink of both names: %llu %llu\n", (unsigned long long)st(ROOT "/file.txt").st_nlink,
         (unsigned long long)hard.st_nlink);
  MUST(fstat(fd, &f));
  printf("nlink through the open fd: %llu\n", (unsigned long long)f.st_nlink);

  MUST(rename(ROOT "/hard.txt", ROOT "/dir/moved.txt"));
  same("renamed file", ident(file, st(ROOT "/dir/moved.txt")));
  MUST(unlink(ROOT "/dir/moved.txt"));
  printf("nlink after unlinking the link: %llu\n", (unsigned long long)st(ROOT "/file.txt").st_nlink);

  MUST(rename(ROOT "/empty", ROOT "/dir/empty2"));
  struct stat moved = st(ROOT "/dir/empty2");
  MUST(rename(ROOT "/dir/empty2", ROOT "/empty"));
  same("renamed directory", moved.st_ino == st(ROOT "/empty").st_ino);

  /* A new file gets an inode no other file has. */
  int nfd = open(ROOT "/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (nfd < 0) die("create new.txt: %s", ename(errno));
  struct stat n;
  MUST(fstat(nfd, &n));
  same("new file vs file.txt", n.st_ino == file.st_ino);
  same("new file vs dir/inner.txt", n.st_ino == inner.st_ino);
  same("new file fstat vs stat", ident(n, st(ROOT "/new.txt")));
  return 0;
}
