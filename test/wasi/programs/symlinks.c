/*
 * Symbolic links: a relative link inside the mount stores its target
 * (path_readlink returns it byte for byte) and opens through to its target;
 * a link whose target leaves the preopened directory never leads out of it
 * (path resolution must stay beneath the preopen); a loop is ELOOP; a path
 * opened without lookupflags::symlink_follow does not follow the last link.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>

static void content(const char *label, const char *path) {
  char buf[64] = {0};
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    printf("%s: %s\n", label, ename(errno));
    return;
  }
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = 0;
  printf("%s: \"%s\"\n", label, n < 0 ? "read failed" : buf);
}

static void readlink_of(const char *label, const char *path) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  if (n < 0) {
    printf("%s: %s\n", label, ename(errno));
    return;
  }
  buf[n] = 0;
  printf("%s: \"%s\"\n", label, buf);
}

/*
 * A link to `target` at `name` must not lead out: either making it is
 * refused, or making it works and opening through it is refused. The
 * sandbox errnos allowed are EPERM, ENOTCAPABLE and EACCES.
 */
static void escape(const char *label, const char *target, const char *name) {
  if (symlink(target, name) < 0) {
    fprintf(stderr, "%s: symlink refused with %s\n", label, ename(errno));
    printf("%s: %s\n", label,
           errno == EPERM || errno == ENOTCAPABLE || errno == EACCES ? "stays inside" : ename(errno));
    return;
  }
  int fd = open(name, O_RDONLY);
  if (fd >= 0) {
    printf("%s: LEADS OUT (open worked)\n", label);
    return;
  }
  fprintf(stderr, "%s: symlink made, open refused with %s\n", label, ename(errno));
  printf("%s: %s\n", label,
         errno == EPERM || errno == ENOTCAPABLE || errno == EACCES ? "stays inside" : ename(errno));
  unlink(name);
}

int main(void) {
  struct stat s, l, t;
  result("symlink ln -> file.txt", symlink("file.txt", ROOT "/ln"));
  readlink_of("readlink ln", ROOT "/ln");
  content("open ln", ROOT "/ln");
  MUST(lstat(ROOT "/ln", &l));
  printf("lstat ln is a link: %s\n", S_ISLNK(l.st_mode) ? "yes" : "no");
  printf("lstat ln size is the target's length: %s\n", l.st_size == 8 ? "yes" : "no");
  MUST(stat(ROOT "/ln", &s));
  MUST(stat(ROOT "/file.txt", &t));
  same("stat ln vs file.txt", s.st_ino == t.st_ino && s.st_dev == t.st_dev);

  result("symlink down -> dir/inner.txt", symlink("dir/inner.txt", ROOT "/down"));
  content("open down", ROOT "/down");
  result("symlink dirlink -> dir", symlink("dir", ROOT "/dirlink"));
  content("open dirlink/inner.txt", ROOT "/dirlink/inner.txt");
  result("symlink dir/sib -> inner.txt", symlink("inner.txt", ROOT "/dir/sib"));
  content("open dir/sib", ROOT "/dir/sib");

  result("symlink dangling -> nothing", symlink("nothing", ROOT "/dangling"));
  readlink_of("readlink dangling", ROOT "/dangling");
  result("open dangling", open(ROOT "/dangling", O_RDONLY));
  result("lstat dangling", lstat(ROOT "/dangling", &l));
  result("symlink over an existing name", symlink("file.txt", ROOT "/dir"));

  result("open ln O_NOFOLLOW", open(ROOT "/ln", O_RDONLY | O_NOFOLLOW));
  result("readlink of a file", readlink(ROOT "/file.txt", (char[8]){0}, 8));
  char small[4];
  ssize_t n = readlink(ROOT "/ln", small, sizeof small);
  printf("readlink into 4 bytes: %zd \"%.*s\"\n", n, n > 0 ? (int)n : 0, small);

  escape("absolute target /etc/passwd", "/etc/passwd", ROOT "/abs");
  escape("absolute target /", "/", ROOT "/absroot");
  escape("target ../../../../../../etc/passwd", "../../../../../../etc/passwd", ROOT "/climb");
  escape("target .. from the root", "..", ROOT "/up");

  result("symlink loop1 -> loop2", symlink("loop2", ROOT "/loop1"));
  result("symlink loop2 -> loop1", symlink("loop1", ROOT "/loop2"));
  result("open loop1", open(ROOT "/loop1", O_RDONLY));
  result("stat loop1", stat(ROOT "/loop1", &s));
  result("symlink self -> self", symlink("self", ROOT "/self"));
  result("open self", open(ROOT "/self", O_RDONLY));
  result("open self/x", open(ROOT "/self/x", O_RDONLY));

  result("unlink ln", unlink(ROOT "/ln"));
  result("file.txt survives", stat(ROOT "/file.txt", &s));
  return 0;
}
