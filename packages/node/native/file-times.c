/*
 * Exact file times for host folders (Node-API, loaded by src/host-fs.ts).
 *
 * Node's utimes/futimes/lutimes take seconds as a double: at today's epoch
 * a double resolves about 240 ns, and none of them can leave one of the two
 * times unchanged, so "set only mtime" rewrites atime rounded. WASI carries
 * times as u64 nanoseconds and has a "no change" flag. utimensat(2) and
 * futimens(2) take both exactly (timespec, UTIME_NOW, UTIME_OMIT).
 *
 * Each function returns 0 or the errno of the failed call; arguments of
 * the wrong type or range return EINVAL before any system call. Node-API
 * modules are context-aware, so this loads in every worker thread.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* Nanosecond field values the JavaScript side uses for "now" and "leave it". */
#define NSEC_NOW (-1)
#define NSEC_OMIT (-2)

/* A JavaScript number that is an integer in [min, max]. */
static bool integer_arg(napi_env env, napi_value value, double min, double max, int64_t *out) {
  napi_valuetype type;
  double d;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_number) return false;
  if (napi_get_value_double(env, value, &d) != napi_ok) return false;
  if (!(d >= min && d <= max) || d != (double)(int64_t)d) return false;
  *out = (int64_t)d;
  return true;
}

/* One time from (seconds, nanoseconds): nanoseconds 0..999999999, or NSEC_NOW / NSEC_OMIT. */
static bool time_arg(napi_env env, napi_value sec, napi_value nsec, struct timespec *out) {
  int64_t s, ns;
  /* Seconds of a u64 nanosecond timestamp are below 2^35; allow the same range below zero. */
  if (!integer_arg(env, sec, -34359738368.0, 34359738368.0, &s)) return false;
  if (!integer_arg(env, nsec, NSEC_OMIT, 999999999, &ns)) return false;
  out->tv_sec = (time_t)s;
  out->tv_nsec = ns == NSEC_NOW ? UTIME_NOW : ns == NSEC_OMIT ? UTIME_OMIT : (long)ns;
  return true;
}

static napi_value errno_value(napi_env env, int err) {
  napi_value result;
  napi_create_int32(env, err, &result);
  return result;
}

/* futimens(fd, atimeSec, atimeNsec, mtimeSec, mtimeNsec) -> 0 | errno */
static napi_value js_futimens(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  int64_t fd;
  struct timespec times[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5) return errno_value(env, EINVAL);
  if (!integer_arg(env, argv[0], 0, INT32_MAX, &fd)) return errno_value(env, EINVAL);
  if (!time_arg(env, argv[1], argv[2], &times[0]) || !time_arg(env, argv[3], argv[4], &times[1])) return errno_value(env, EINVAL);
  return errno_value(env, futimens((int)fd, times) == 0 ? 0 : errno);
}

/* utimensat(path, atimeSec, atimeNsec, mtimeSec, mtimeNsec, followLast) -> 0 | errno */
static napi_value js_utimensat(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_valuetype type;
  char path[PATH_MAX];
  size_t length = 0;
  bool follow = false;
  struct timespec times[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 6) return errno_value(env, EINVAL);
  if (napi_typeof(env, argv[0], &type) != napi_ok || type != napi_string) return errno_value(env, EINVAL);
  if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &length) != napi_ok) return errno_value(env, EINVAL);
  if (length >= sizeof path) return errno_value(env, ENAMETOOLONG);
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &length) != napi_ok) return errno_value(env, EINVAL);
  /* A NUL inside the string would name another, shorter path. */
  if (length == 0 || strlen(path) != length) return errno_value(env, EINVAL);
  if (!time_arg(env, argv[1], argv[2], &times[0]) || !time_arg(env, argv[3], argv[4], &times[1])) return errno_value(env, EINVAL);
  if (napi_typeof(env, argv[5], &type) != napi_ok || type != napi_boolean) return errno_value(env, EINVAL);
  if (napi_get_value_bool(env, argv[5], &follow) != napi_ok) return errno_value(env, EINVAL);
  int flags = follow ? 0 : AT_SYMLINK_NOFOLLOW;
  return errno_value(env, utimensat(AT_FDCWD, path, times, flags) == 0 ? 0 : errno);
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "futimens", NAPI_AUTO_LENGTH, js_futimens, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "futimens", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "utimensat", NAPI_AUTO_LENGTH, js_utimensat, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "utimensat", fn) != napi_ok) return NULL;
  return exports;
}
