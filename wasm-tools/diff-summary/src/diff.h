/*
 * A single-pass, linear-time reader for unified diffs: `git diff` output
 * (including renames, copies, mode changes, binary files and combined
 * `diff --cc` sections) and plain `diff -u` output without git headers.
 */
#ifndef DIFF_SUMMARY_DIFF_H
#define DIFF_SUMMARY_DIFF_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  ST_ADDED,
  ST_DELETED,
  ST_MODIFIED,
  ST_RENAMED,
  ST_COPIED,
  ST_BINARY,
  ST_COUNT
} file_status;

typedef struct {
  char *path;     /* new path; the old one for deleted files */
  char *old_path; /* set only for renames and copies */
  file_status status;
  int binary;
  uint64_t additions, deletions, hunks;
  char old_mode[8], new_mode[8]; /* both "" unless the mode changed */
} diff_file;

typedef struct {
  diff_file *files;
  size_t count, cap;
  /* Lines that looked like hunk headers outside any file; used only to
   * explain why a headerless input is rejected. */
  uint64_t orphan_hunks;
} diff_result;

const char *status_name(file_status s);

/* Parses `len` bytes of `text`. Returns 0, or -1 with a message in err
 * (e.g. a malformed hunk header). An input with no file headers yields
 * zero files; deciding whether that is an error is the caller's job. */
int diff_parse(const char *text, size_t len, diff_result *out, char *err,
               size_t err_size);

#endif
