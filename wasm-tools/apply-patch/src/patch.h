/*
 * The parsed form of a unified diff, as apply-patch needs it: every file
 * section with its names, modes and hunks, and every hunk line kept (the
 * diff-summary parser only counts them).
 */
#ifndef APPLY_PATCH_PATCH_H
#define APPLY_PATCH_PATCH_H

#include <stddef.h>

typedef struct {
  char mark;     /* ' ', '-' or '+' */
  const char *s; /* content, inside the patch text */
  size_t n;      /* bytes, the '\n' included unless "\ No newline" followed */
} hline;

typedef struct {
  size_t os, oc, ns, nc; /* @@ -os,oc +ns,nc @@ */
  hline *lines;
  size_t count;
  size_t patch_line; /* where its @@ line is in the patch (1-based) */
} hunk;

typedef struct {
  char *old_path, *new_path; /* after strip; NULL for /dev/null */
  int is_git, is_new, is_delete, is_rename, is_copy, binary;
  char old_mode[8], new_mode[8]; /* "" unless given (new/deleted file mode goes here too) */
  char index_mode[8];            /* the mode on an "index a..b MODE" line */
  hunk *hunks;
  size_t nhunks;
  size_t patch_line; /* where the section starts (1-based) */
} fpatch;

typedef struct {
  fpatch *files;
  size_t count, cap;
} patch;

/* Parses `len` bytes of `text` (kept: hunk lines point into it), taking
 * `strip` leading components off the names as `git apply -p`. Returns 0, or
 * -1 with a sentence in err. */
int patch_parse(const char *text, size_t len, int strip, patch *out, char *err, size_t err_size);

#endif
