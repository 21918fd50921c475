/*
 * What glob and grep share: checking a /workspace path, expanding {a,b}
 * braces, .gitignore rules with git's semantics, and an iterative walk of
 * a read mount in git's order (see walk.c). The tools compile this folder
 * by including the lib .c files from a file of their own src/ (src/lib.c), so the
 * build needs no extra step.
 */
#ifndef CORRAL_WALK_H
#define CORRAL_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include "wildmatch.h"

#define WS_ROOT "/workspace"
#define WS_ROOT_LEN 10

/* A growable list of owned strings. */
typedef struct {
  char **items;
  size_t n, cap;
} strlist;
void strlist_push(strlist *l, char *s); /* takes ownership */

/* Accepts "/workspace" and "/workspace/..." without "." or ".." segments
 * and returns a copy with duplicate and trailing slashes removed; anything
 * else ends the tool with a message naming `field`. */
char *ws_check_path(const char *p, size_t len, const char *field);

/* Appends the brace expansions of `pattern` to `out`, as a shell does:
 * "src/{a,b}/x.{c,h}" gives four patterns; a group without a comma, and
 * "\{", stay literal. Fails beyond `limit` patterns in all. */
void brace_expand(const char *pattern, strlist *out, size_t limit);

/* ---- .gitignore rules ---------------------------------------------------- */

#define IGN_NEGATE 1u   /* "!pattern": re-includes */
#define IGN_DIRONLY 2u  /* "pattern/": folders only */
#define IGN_ANCHORED 4u /* has a '/': relative to the file's folder */

typedef struct {
  char *pattern;
  unsigned flags;
} ign_rule;

typedef struct {
  char *base; /* folder of the .gitignore, relative to /workspace, "" or ending in '/' */
  size_t base_len;
  ign_rule *rules;
  size_t n;
} ign_set;

typedef struct {
  ign_set *sets; /* shallowest first; the deepest decides first */
  size_t n, cap;
} ign_stack;

/* Parses one rule line as git does (comments, "\#", "\!", trailing spaces
 * unless escaped, "!" and a trailing "/"); false for a line with no rule. */
bool ign_parse(const char *line, size_t len, ign_rule *rule);

/* Pushes the rules of the file `path` (relative to the folder open at
 * dirfd, or absolute when dirfd is -1; no file: an empty set) for the
 * folder `base`. */
void ign_push_file(ign_stack *st, int dirfd, const char *path, const char *base);
void ign_pop_to(ign_stack *st, size_t n);

/* Does one rule match? `rel` is relative to /workspace, `name` its last
 * segment. */
bool ign_rule_matches(const ign_rule *r, const char *base, size_t base_len, const char *rel, const char *name,
                      bool is_dir);

/* Is the path ignored: the last matching rule of the deepest file that has
 * one decides; a "!" rule means not ignored. */
bool ign_is_ignored(const ign_stack *st, const char *rel, const char *name, bool is_dir);

/* ---- the walk --------------------------------------------------------------- */

enum { WALK_FILE = 1, WALK_LINK = 2, WALK_OTHER = 3 };

typedef struct {
  const char *root; /* a folder: "/workspace" or under it, as ws_check_path gives */
  bool gitignore;   /* honour .gitignore files and .git/info/exclude */
  void *ctx;
  /* Called for each folder before it is read; false skips it. `rel` is
   * relative to root. Optional. */
  bool (*enter_dir)(void *ctx, const char *rel);
  /* Called for each file, symlink (never followed) and other entry, in
   * the byte order of the whole path (git's index order). `rel` is
   * relative to root; open it as `name` in the folder open at `dirfd`.
   * Returns true to stop. */
  bool (*visit)(void *ctx, int dirfd, const char *name, const char *rel, int kind);
} walk_opts;

/* Walks without recursion; ".git" entries are never listed or entered;
 * folders deeper than WALK_MAX_DEPTH are skipped with a warning. */
#define WALK_MAX_DEPTH 256
void walk_tree(const walk_opts *o);

#endif
