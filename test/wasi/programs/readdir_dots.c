/*
 * fd_readdir lists "." and "..", and each dirent's d_ino is the ino that
 * filestat reports for the same entry; d_type matches the entry's type.
 * Preview1 does not say what d_ino ".." carries; the parent's ino or 0
 * (unknown) are both taken.
 */
#include "check.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static const char *type_name(unsigned char t) {
  switch (t) {
    case DT_REG: return "file";
    case DT_DIR: return "dir";
    case DT_LNK: return "link";
    case DT_UNKNOWN: return "unknown";
    default: return "other";
  }
}

/* List `path`, print the sorted names with their types, and check d_ino. */
static void list(const char *label, const char *path, const char *parent) {
  DIR *d = opendir(path);
  if (!d) die("opendir %s: %s", path, ename(errno));
  struct stat self, up;
  MUST(fstat(dirfd(d), &self));
  if (parent) MUST(stat(parent, &up));
  char *names[64];
  int n = 0, dot_ok = -1, dotdot_ok = -1, others_ok = 1;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) && n < 64) {
    char *line = malloc(strlen(e->d_name) + 16);
    sprintf(line, "%s(%s)", e->d_name, type_name(e->d_type));
    names[n++] = line;
    if (strcmp(e->d_name, ".") == 0) {
      dot_ok = e->d_ino == self.st_ino;
    } else if (strcmp(e->d_name, "..") == 0) {
      /* The parent's ino, or 0 (unknown): the preview1 adapter and Corral report 0. */
      dotdot_ok = parent ? e->d_ino == up.st_ino || e->d_ino == 0 : 1;
      if (parent && !dotdot_ok)
        fprintf(stderr, "%s/..: d_ino %llu, parent's st_ino %llu, own %llu\n", path, (unsigned long long)e->d_ino,
                (unsigned long long)up.st_ino, (unsigned long long)self.st_ino);
    } else {
      struct stat s;
      if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) die("fstatat %s: %s", e->d_name, ename(errno));
      if (s.st_ino != e->d_ino) {
        others_ok = 0;
        fprintf(stderr, "%s/%s: d_ino %llu, st_ino %llu\n", path, e->d_name, (unsigned long long)e->d_ino,
                (unsigned long long)s.st_ino);
      }
    }
  }
  if (errno) die("readdir %s: %s", path, ename(errno));
  qsort(names, n, sizeof *names, cmp);
  printf("%s entries:", label);
  for (int i = 0; i < n; i++) printf(" %s", names[i]);
  printf("\n");
  printf("%s d_ino of . is the dir's ino: %s\n", label, dot_ok < 0 ? "missing" : dot_ok ? "yes" : "no");
  if (!parent) printf("%s has ..: %s\n", label, dotdot_ok < 0 ? "no" : "yes");
  if (parent) printf("%s d_ino of .. is the parent's ino or 0: %s\n", label, dotdot_ok < 0 ? "missing" : dotdot_ok ? "yes" : "no");
  printf("%s d_ino of the other entries is their ino: %s\n", label, others_ok ? "yes" : "no");
  closedir(d);
}

int main(void) {
  /* The mount root's ".." is outside the mount: only its presence is checked. */
  list("root", ROOT, NULL);
  list("dir", ROOT "/dir", ROOT);
  list("dir/sub", ROOT "/dir/sub", ROOT "/dir");
  list("empty", ROOT "/empty", ROOT);
  return 0;
}
