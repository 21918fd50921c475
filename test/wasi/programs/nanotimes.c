/*
 * Timestamps are nanoseconds (preview1 `timestamp`): path_filestat_set_times
 * and fd_filestat_set_times store exact values that filestat reads back;
 * fstflags without ATIM/MTIM leave a time alone (UTIME_OMIT), *_NOW sets it
 * to the current time.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <wasi/api.h>

static void show(const char *label, const char *path) {
  struct stat s;
  if (stat(path, &s) < 0) die("stat %s: %s", path, ename(errno));
  printf("%s: atim %lld.%09ld mtim %lld.%09ld\n", label, (long long)s.st_atim.tv_sec, s.st_atim.tv_nsec,
         (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
}

static long long ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

int main(void) {
  const char *f = ROOT "/file.txt";
  struct timespec t[2] = {{1234567890, 123456789}, {1600000000, 987654321}};
  result("utimensat exact", utimensat(AT_FDCWD, f, t, 0));
  show("after utimensat", f);

  struct timespec whole[2] = {{1000000000, 0}, {1000000001, 0}};
  result("utimensat whole seconds", utimensat(AT_FDCWD, f, whole, 0));
  show("after whole seconds", f);

  struct timespec micro[2] = {{1300000000, 123456000}, {1300000001, 654321000}};
  result("utimensat microseconds", utimensat(AT_FDCWD, f, micro, 0));
  show("after microseconds", f);

  int fd = open(f, O_RDWR);
  if (fd < 0) die("open: %s", ename(errno));
  struct timespec ft[2] = {{1700000000, 1}, {1700000001, 999999999}};
  result("futimens exact", futimens(fd, ft));
  show("after futimens", f);
  struct stat s;
  MUST(fstat(fd, &s));
  printf("fstat mtim: %lld.%09ld\n", (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);

  /*
   * OMIT and NOW through path_filestat_set_times itself: this wasi-libc's
   * utimensat turns some UTIME_OMIT/UTIME_NOW pairs into EINVAL before any
   * host sees them.
   */
  int dir = open(ROOT, O_RDONLY | O_DIRECTORY);
  if (dir < 0) die("open root: %s", ename(errno));
  errno = __wasi_path_filestat_set_times(dir, 0, "file.txt", 0, 1500000000500000000ULL, __WASI_FSTFLAGS_MTIM);
  result("set mtim only (atim omitted)", errno ? -1 : 0);
  show("after atim omitted", f);
  errno = __wasi_path_filestat_set_times(dir, 0, "file.txt", 1400000000400000000ULL, 0, __WASI_FSTFLAGS_ATIM);
  result("set atim only (mtim omitted)", errno ? -1 : 0);
  show("after mtim omitted", f);
  errno = __wasi_path_filestat_set_times(dir, 0, "file.txt", 1, 1, __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_ATIM_NOW);
  result("ATIM with ATIM_NOW", errno ? -1 : 0);

  struct timespec before, after;
  clock_gettime(CLOCK_REALTIME, &before);
  errno = __wasi_path_filestat_set_times(dir, 0, "file.txt", 0, 0, __WASI_FSTFLAGS_MTIM_NOW);
  result("mtim NOW (atim omitted)", errno ? -1 : 0);
  clock_gettime(CLOCK_REALTIME, &after);
  MUST(stat(f, &s));
  /* A filesystem's clock may be coarser than the realtime clock: allow 50 ms. */
  long long m = ns(s.st_mtim), slack = 50000000LL;
  printf("mtim is now: %s\n", m >= ns(before) - slack && m <= ns(after) + slack ? "yes" : "no");
  printf("atim unchanged: %s\n", s.st_atim.tv_sec == 1400000000 && s.st_atim.tv_nsec == 400000000 ? "yes" : "no");
  errno = __wasi_fd_filestat_set_times(fd, 0, 0, __WASI_FSTFLAGS_ATIM_NOW);
  result("fd atim NOW (mtim omitted)", errno ? -1 : 0);
  struct stat s2;
  MUST(fstat(fd, &s2));
  printf("fd atim is now: %s\n", ns(s2.st_atim) >= ns(before) - slack ? "yes" : "no");
  printf("mtim unchanged: %s\n", ns(s2.st_mtim) == m ? "yes" : "no");

  /* Times on a directory, by path. */
  struct timespec dt[2] = {{1111111111, 111111111}, {1222222222, 222222222}};
  result("utimensat on dir", utimensat(AT_FDCWD, ROOT "/dir", dt, 0));
  show("dir", ROOT "/dir");
  return 0;
}
