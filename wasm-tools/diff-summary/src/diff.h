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

/* What `git apply --check` would call a corrupt patch; reported, not
 * fatal, so a truncated diff still summarizes what could be read. */
typedef enum {
  PB_TRUNCATED,       /* the input ends inside a hunk */
  PB_SHORT_HUNK,      /* a header line arrives before the hunk is complete */
  PB_BAD_LINE,        /* a line inside a hunk that cannot be hunk content */
  PB_BAD_HUNK_HEADER, /* an @@ line that does not parse */
  PB_EXTRA_LINES,     /* an @@ header after lines that are in no hunk */
  PB_COUNT
} problem_kind;

typedef struct {
  char *path;    /* the file being read; set when its section closes */
  uint64_t line; /* 1-based line of the diff, as git apply numbers it */
  problem_kind kind;
  uint64_t old_missing, new_missing; /* for the first three kinds */
} diff_problem;

/* Reported problems beyond this are dropped (the first ones say enough). */
#define MAX_PROBLEMS 100

typedef struct {
  diff_file *files;
  size_t count, cap;
  diff_problem problems[MAX_PROBLEMS];
  size_t problem_count;
  /* Lines that looked like hunk headers outside any file; used only to
   * explain why a headerless input is rejected. */
  uint64_t orphan_hunks;
} diff_result;

const char *status_name(file_status s);
const char *problem_name(problem_kind k);

/* Parses `len` bytes of `text` into `out` (never fails: damage is listed
 * in out->problems). An input with no file headers yields zero files;
 * deciding whether that is an error is the caller's job. */
void diff_parse(const char *text, size_t len, diff_result *out);

#endif
