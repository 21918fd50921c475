/*
 * A trailing slash asks for a directory: on a file it is ENOTDIR for every
 * call that resolves the path (path_open, path_unlink_file,
 * path_filestat_get, path_rename); on a directory, or a directory that a
 * call creates, it is fine.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/stat.h>

int main(void) {
  struct stat s;
  result("open file.txt/", open(ROOT "/file.txt/", O_RDONLY));
  result("open file.txt/.", open(ROOT "/file.txt/.", O_RDONLY));
  result("stat file.txt/", stat(ROOT "/file.txt/", &s));
  result("unlink file.txt/", unlink(ROOT "/file.txt/"));
  result("rename file.txt/ -> other.txt", rename(ROOT "/file.txt/", ROOT "/other.txt"));
  result("rename file.txt -> other.txt/", rename(ROOT "/file.txt", ROOT "/other.txt/"));
  result("file.txt still there", stat(ROOT "/file.txt", &s));
  result("open dir/", open(ROOT "/dir/", O_RDONLY));
  result("open dir/ O_DIRECTORY", open(ROOT "/dir/", O_RDONLY | O_DIRECTORY));
  result("open dir/inner.txt/", open(ROOT "/dir/inner.txt/", O_RDONLY));
  result("stat dir/", stat(ROOT "/dir/", &s));
  result("mkdir made/", mkdir(ROOT "/made/", 0755));
  result("stat made", stat(ROOT "/made", &s));
  printf("made is a directory: %s\n", S_ISDIR(s.st_mode) ? "yes" : "no");
  result("rename made/ -> made2/", rename(ROOT "/made/", ROOT "/made2/"));
  result("rmdir made2/", rmdir(ROOT "/made2/"));
  result("rmdir file.txt/", rmdir(ROOT "/file.txt/"));
  /* unlink of a directory: POSIX allows EISDIR or EPERM; Linux and WASI hosts say EISDIR. */
  one_of("unlink empty/", unlink(ROOT "/empty/"), "EISDIR|EPERM");
  return 0;
}
