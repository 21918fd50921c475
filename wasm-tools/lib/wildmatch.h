/* wildmatch: git's glob matcher (see wildmatch.c). Shared by glob and grep. */
#ifndef CORRAL_WILDMATCH_H
#define CORRAL_WILDMATCH_H

#include <stddef.h>

/* '*', '?' and sets do not match '/'; "**" segments cross folders. */
#define WM_PATHNAME 1u

/* 1 when `text` matches `pattern`, else 0. */
int wildmatch(const char *pattern, const char *text, unsigned flags);

/* The length of the pattern's leading part without a glob character. */
size_t wildmatch_literal_prefix(const char *pattern);

#endif
