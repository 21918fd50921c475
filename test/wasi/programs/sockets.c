/*
 * The preview1 socket calls on descriptors that are not sockets:
 * sock_recv, sock_send, sock_shutdown and sock_accept on a descriptor that
 * is not open are EBADF; on a regular file ENOTSOCK, or ENOTCAPABLE (a
 * file's descriptor lacks the sock_* rights, which preview1 checks first).
 */
#include "check.h"
#include <fcntl.h>
#include <wasi/api.h>

static void errno_of(const char *label, __wasi_errno_t e, const char *allowed) {
  errno = e;
  one_of(label, e ? -1 : 0, allowed);
}

static void calls(const char *label, int fd, const char *allowed) {
  char l[64];
  char byte = 'x';
  __wasi_iovec_t in = {(uint8_t *)&byte, 1};
  __wasi_ciovec_t out = {(const uint8_t *)&byte, 1};
  __wasi_size_t n;
  __wasi_roflags_t ro;
  __wasi_fd_t accepted;
  snprintf(l, sizeof l, "sock_recv on %s", label);
  errno_of(l, __wasi_sock_recv(fd, &in, 1, 0, &n, &ro), allowed);
  snprintf(l, sizeof l, "sock_send on %s", label);
  errno_of(l, __wasi_sock_send(fd, &out, 1, 0, &n), allowed);
  snprintf(l, sizeof l, "sock_shutdown on %s", label);
  errno_of(l, __wasi_sock_shutdown(fd, __WASI_SDFLAGS_RD | __WASI_SDFLAGS_WR), allowed);
  snprintf(l, sizeof l, "sock_accept on %s", label);
  errno_of(l, __wasi_sock_accept(fd, 0, &accepted), allowed);
}

int main(void) {
  calls("fd 1234", 1234, "EBADF");
  int fd = open(ROOT "/file.txt", O_RDWR);
  if (fd < 0) die("open file.txt: %s", ename(errno));
  calls("a file", fd, "ENOTSOCK|ENOTCAPABLE");
  return 0;
}
