/*
 * poll_oneoff: a relative clock subscription sleeps at least its timeout
 * and reports an event of type clock with the subscription's userdata; an
 * absolute one waits until its time; fd_read on stdin (which is at EOF or
 * has data) and on a regular file, and fd_write on stdout, are ready at
 * once; an fd subscription on a descriptor that is not open reports EBADF.
 */
#include "check.h"
#include <fcntl.h>
#include <time.h>
#include <wasi/api.h>

static __wasi_timestamp_t now(void) {
  __wasi_timestamp_t t;
  if (__wasi_clock_time_get(__WASI_CLOCKID_MONOTONIC, 1, &t)) die("clock_time_get");
  return t;
}

static const char *type_name(__wasi_eventtype_t t) {
  return t == __WASI_EVENTTYPE_CLOCK ? "clock" : t == __WASI_EVENTTYPE_FD_READ ? "fd_read" : "fd_write";
}

static __wasi_subscription_t clock_sub(__wasi_userdata_t ud, __wasi_timestamp_t timeout, int absolute) {
  __wasi_subscription_t s;
  memset(&s, 0, sizeof s);
  s.userdata = ud;
  s.u.tag = __WASI_EVENTTYPE_CLOCK;
  s.u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
  s.u.u.clock.timeout = timeout;
  s.u.u.clock.precision = 0;
  s.u.u.clock.flags = absolute ? __WASI_SUBCLOCKFLAGS_SUBSCRIPTION_CLOCK_ABSTIME : 0;
  return s;
}

static __wasi_subscription_t fd_sub(__wasi_userdata_t ud, __wasi_eventtype_t type, int fd) {
  __wasi_subscription_t s;
  memset(&s, 0, sizeof s);
  s.userdata = ud;
  s.u.tag = type;
  if (type == __WASI_EVENTTYPE_FD_READ) s.u.u.fd_read.file_descriptor = fd;
  else s.u.u.fd_write.file_descriptor = fd;
  return s;
}

/* Print each event: userdata, type, error, in userdata order. */
static void events(const char *label, __wasi_event_t *ev, __wasi_size_t n) {
  for (__wasi_size_t i = 1; i < n; i++)
    for (__wasi_size_t j = i; j > 0 && ev[j - 1].userdata > ev[j].userdata; j--) {
      __wasi_event_t t = ev[j];
      ev[j] = ev[j - 1];
      ev[j - 1] = t;
    }
  printf("%s: %u event(s)\n", label, (unsigned)n);
  for (__wasi_size_t i = 0; i < n; i++)
    printf("  userdata %llu type %s error %s\n", (unsigned long long)ev[i].userdata, type_name(ev[i].type),
           ename(ev[i].error));
}

int main(void) {
  __wasi_event_t ev[4];
  __wasi_size_t n;
  __wasi_errno_t e;

  const __wasi_timestamp_t timeout = 50000000; /* 50 ms */
  __wasi_subscription_t rel = clock_sub(0x1234, timeout, 0);
  __wasi_timestamp_t t0 = now();
  e = __wasi_poll_oneoff(&rel, ev, 1, &n);
  __wasi_timestamp_t slept = now() - t0;
  printf("relative clock: %s\n", ename(e));
  events("relative clock", ev, e ? 0 : n);
  printf("relative clock slept at least 50 ms: %s\n", slept >= timeout ? "yes" : "no");
  printf("relative clock slept less than 5 s: %s\n", slept < 5000000000ULL ? "yes" : "no");

  t0 = now();
  __wasi_subscription_t abs = clock_sub(7, t0 + 30000000, 1);
  e = __wasi_poll_oneoff(&abs, ev, 1, &n);
  __wasi_timestamp_t t1 = now();
  printf("absolute clock: %s\n", ename(e));
  events("absolute clock", ev, e ? 0 : n);
  printf("absolute clock waited until its time: %s\n", t1 >= t0 + 30000000 ? "yes" : "no");

  __wasi_subscription_t past = clock_sub(8, 0, 1);
  e = __wasi_poll_oneoff(&past, ev, 1, &n);
  printf("absolute clock in the past: %s\n", ename(e));
  events("absolute clock in the past", ev, e ? 0 : n);

  /* Ready descriptors answer at once; the long clock never fires. */
  int file = open(ROOT "/file.txt", O_RDONLY);
  if (file < 0) die("open file.txt: %s", ename(errno));
  __wasi_subscription_t io[4] = {
      fd_sub(1, __WASI_EVENTTYPE_FD_READ, 0),
      fd_sub(2, __WASI_EVENTTYPE_FD_WRITE, 1),
      fd_sub(3, __WASI_EVENTTYPE_FD_READ, file),
      clock_sub(4, 10000000000ULL, 0),
  };
  t0 = now();
  e = __wasi_poll_oneoff(io, ev, 4, &n);
  slept = now() - t0;
  printf("stdin, stdout, file and a 10 s clock: %s\n", ename(e));
  events("stdin, stdout, file and a 10 s clock", ev, e ? 0 : n);
  printf("returned before the clock: %s\n", slept < 5000000000ULL ? "yes" : "no");

  __wasi_subscription_t bad[2] = {fd_sub(5, __WASI_EVENTTYPE_FD_READ, 1234), clock_sub(6, 10000000000ULL, 0)};
  e = __wasi_poll_oneoff(bad, ev, 2, &n);
  /* The bad descriptor is reported in its event, or as the call's error. */
  if (e) printf("fd_read on fd 1234: EBADF in event or call: %s\n", e == __WASI_ERRNO_BADF ? "yes" : ename(e));
  else {
    int found = 0;
    for (__wasi_size_t i = 0; i < n; i++) found |= ev[i].userdata == 5 && ev[i].error == __WASI_ERRNO_BADF;
    printf("fd_read on fd 1234: EBADF in event or call: %s\n", found ? "yes" : "no");
  }

  e = __wasi_poll_oneoff(io, ev, 0, &n);
  printf("no subscriptions: %s\n", ename(e));
  return 0;
}
