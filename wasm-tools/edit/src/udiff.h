/*
 * A unified diff of two texts, as `git diff` prints it: Myers' algorithm on
 * lines, 3 lines of context, hunks merged when their contexts touch,
 * "\ No newline at end of file" after a last line without one, and git's
 * header (`diff --git a/P b/P`, `--- a/P`, `+++ b/P`, names C-quoted as
 * git quotes them). The hunks may differ from git's where git's heuristics
 * (indent, sliders) pick another of several minimal diffs; the diff still
 * applies with `git apply` and gives the same file.
 */
#ifndef EDIT_UDIFF_H
#define EDIT_UDIFF_H

#include <stddef.h>

#include "corral.h"

/* Appends the diff of a -> b (empty when equal) to out; counts the lines. */
void udiff(corral_writer *out, const char *path, const char *a, size_t alen,
           const char *b, size_t blen, size_t *additions, size_t *deletions);

#endif
