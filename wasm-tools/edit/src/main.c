/*
 * edit: exact text replacement in a file of the mounted /workspace.
 *
 * Input:  {"path", "edits": [{"old_text", "new_text", "replace_all"?}]}
 * Output: {"path", "changed", "edits": [{"replacements", "lines"}],
 *          "additions", "deletions", "diff"}
 *
 * - Edits apply in order, each to the text the previous ones left.
 * - old_text must occur exactly once, unless replace_all (then at least
 *   once); no match fails naming the edit, several fail with their count
 *   and line numbers. Matches are exact bytes: no whitespace or line-ending
 *   folding.
 * - All or nothing: every edit is done in memory first; the file is then
 *   written to a temporary beside it and renamed over it, so a failed edit
 *   or a failed write leaves the file as it was.
 * - The answer carries a git-style unified diff of the whole change.
 */
#include <stdint.h>

#include "../../lib-text/text.h"
#include "udiff.h"

#define MAX_FILE_BYTES (64u * 1024 * 1024)
#define MAX_LISTED_LINES 20

typedef struct {
  size_t *at; /* match offsets */
  size_t count, cap;
} matches;

/* Non-overlapping occurrences of needle, left to right (as str.replace). */
static void find_all(const char *hay, size_t hn, const char *needle, size_t nn,
                     matches *m) {
  m->count = 0;
  if (nn == 0 || nn > hn) return;
  const char *p = hay, *end = hay + hn - nn + 1;
  while (p < end) {
    const char *q = memchr(p, needle[0], (size_t)(end - p));
    if (!q) break;
    if (memcmp(q, needle, nn) == 0) {
      if (m->count == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->at = lt_xrealloc(m->at, m->cap * sizeof *m->at);
      }
      m->at[m->count++] = (size_t)(q - hay);
      p = q + nn;
    } else {
      p = q + 1;
    }
  }
}

/* "4, 10, 22" (line numbers of the matches), at most MAX_LISTED_LINES. */
static void list_lines(corral_writer *w, const char *text, const matches *m) {
  size_t line = 1, pos = 0;
  for (size_t i = 0; i < m->count && i < MAX_LISTED_LINES; i++) {
    for (; pos < m->at[i]; pos++)
      if (text[pos] == '\n') line++;
    corral_appendf(w, "%s%zu", i ? ", " : "", line);
  }
  if (m->count > MAX_LISTED_LINES) corral_appendf(w, ", ...");
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"path", "edits", NULL};
  corral_only_fields(input, fields, NULL);
  size_t path_len;
  const char *path_in = corral_require_string(input, "path", &path_len);
  lt_path path = lt_field_path("path", path_in, path_len);
  const corral_value *edits = corral_get_array(input, "edits");
  if (!edits) corral_fail("missing required input field \"edits\"");
  if (edits->length == 0) corral_fail("\"edits\" is empty: give at least one {old_text, new_text}");

  char *orig;
  size_t orig_len;
  int e = lt_read_file(path.guest, MAX_FILE_BYTES, &orig, &orig_len);
  if (e == ENOENT)
    corral_fail("cannot edit %s: no such file (edit changes existing files; create one with apply-patch)", path.rel);
  if (e == EFBIG) corral_fail("cannot edit %s: larger than %u MiB", path.rel, MAX_FILE_BYTES >> 20);
  if (e) corral_fail("cannot edit %s: %s", path.rel, lt_read_error(e));
  lt_bom bom = lt_detect_bom(orig, orig_len);
  if (bom != LT_BOM_NONE && bom != LT_BOM_UTF8)
    corral_fail("cannot edit %s: it is %s text (byte order mark), and edit matches UTF-8 bytes", path.rel,
                lt_bom_name(bom));
  long nul = lt_binary_offset(orig, orig_len);
  if (nul >= 0)
    corral_fail("cannot edit %s: it looks binary (a NUL byte at offset %ld, in the first 8000 bytes as git checks)",
                path.rel, nul);
  int crlf = memmem(orig, orig_len, "\r\n", 2) != NULL;

  /* Validate every edit before doing any. */
  for (size_t i = 0; i < edits->length; i++) {
    const corral_value *ed = &edits->items[i];
    if (ed->type != CORRAL_OBJECT) corral_fail("edits[%zu] must be an object, got %s", i, corral_type_name(ed->type));
    static const char *const edit_fields[] = {"old_text", "new_text", "replace_all", NULL};
    for (size_t k = 0; k < ed->length; k++) {
      const char *key = ed->members[k].key;
      int known = 0;
      for (const char *const *f = edit_fields; *f; f++) known |= strcmp(key, *f) == 0;
      if (!known)
        corral_fail("edits[%zu] has an unknown field \"%s\" (expected old_text, new_text, replace_all)", i, key);
    }
    size_t on, nn;
    const char *o = corral_get_string(ed, "old_text", NULL, &on);
    const char *n = corral_get_string(ed, "new_text", NULL, &nn);
    if (!o) corral_fail("edits[%zu] has no \"old_text\"", i);
    if (!n) corral_fail("edits[%zu] has no \"new_text\"", i);
    if (on == 0) corral_fail("edits[%zu]: \"old_text\" is empty; give the exact text to replace", i);
    if (on == nn && memcmp(o, n, on) == 0)
      corral_fail("edits[%zu]: \"old_text\" and \"new_text\" are the same; nothing to change", i);
  }

  /* Apply them in memory, in order. */
  char *text = lt_dupn(orig, orig_len);
  size_t len = orig_len;
  matches m = {0};
  size_t *counts = lt_xmalloc(edits->length * sizeof *counts);
  /* Per edit: the line of each replacement, in the text before it. */
  size_t **lines = lt_xmalloc(edits->length * sizeof *lines);
  for (size_t i = 0; i < edits->length; i++) {
    const corral_value *ed = &edits->items[i];
    size_t on, nn;
    const char *o = corral_get_string(ed, "old_text", NULL, &on);
    const char *n = corral_get_string(ed, "new_text", NULL, &nn);
    bool all = corral_get_bool(ed, "replace_all", false);
    find_all(text, len, o, on, &m);
    if (m.count == 0) {
      corral_writer why;
      corral_writer_init(&why);
      corral_appendf(&why, "edits[%zu]: old_text not found in %s", i, path.rel);
      matches before = {0};
      if (i > 0) find_all(orig, orig_len, o, on, &before);
      if (before.count)
        corral_appendf(&why, " (it is in the file as it was, but an earlier edit of this call changed it; "
                             "the edits apply in order, each to the result of the previous ones)");
      else if (crlf && memchr(o, '\n', on) && !memmem(o, on, "\r\n", 2))
        corral_appendf(&why, " (the file's lines end with CRLF and old_text's with LF: include the \\r)");
      else
        corral_appendf(&why, "; the match is exact, whitespace and line endings included: read the file and copy the text");
      corral_appendf(&why, "; nothing was changed");
      corral_append(&why, "", 1);
      corral_fail("%s", why.data);
    }
    if (m.count > 1 && !all) {
      corral_writer why;
      corral_writer_init(&why);
      corral_appendf(&why, "edits[%zu]: old_text matches %zu times in %s (lines ", i, m.count, path.rel);
      list_lines(&why, text, &m);
      corral_appendf(&why, "); include more surrounding text so it matches once, or set replace_all: true; "
                           "nothing was changed");
      corral_append(&why, "", 1);
      corral_fail("%s", why.data);
    }
    lines[i] = lt_xmalloc(m.count * sizeof **lines);
    size_t line = 1, pos = 0;
    for (size_t k = 0; k < m.count; k++) {
      for (; pos < m.at[k]; pos++)
        if (text[pos] == '\n') line++;
      lines[i][k] = line;
    }
    counts[i] = m.count;

    size_t out_len = len - m.count * on + m.count * nn;
    char *next = lt_xmalloc(out_len + 1);
    size_t w = 0, r = 0;
    for (size_t k = 0; k < m.count; k++) {
      memcpy(next + w, text + r, m.at[k] - r);
      w += m.at[k] - r;
      memcpy(next + w, n, nn);
      w += nn;
      r = m.at[k] + on;
    }
    memcpy(next + w, text + r, len - r);
    w += len - r;
    next[w] = '\0';
    free(text);
    text = next;
    len = w;
  }

  int changed = len != orig_len || memcmp(text, orig, len) != 0;
  if (changed) {
    char *tmp = lt_write_temp(path.guest, text, len);
    if (!tmp) corral_fail("cannot write %s: %s; nothing was changed", path.rel, strerror(errno));
    if (rename(tmp, path.guest) != 0) {
      int err = errno;
      unlink(tmp);
      corral_fail("cannot replace %s: %s; nothing was changed", path.rel, strerror(err));
    }
  }

  corral_writer diff;
  corral_writer_init(&diff);
  size_t additions = 0, deletions = 0;
  udiff(&diff, path.rel, orig, orig_len, text, len, &additions, &deletions);

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  corral_key(&out, "path");
  corral_cstring(&out, path.rel);
  corral_key(&out, "changed");
  corral_bool(&out, changed);
  corral_key(&out, "edits");
  corral_begin_array(&out);
  for (size_t i = 0; i < edits->length; i++) {
    corral_begin_object(&out);
    corral_key(&out, "replacements");
    corral_uint(&out, counts[i]);
    corral_key(&out, "lines");
    corral_begin_array(&out);
    for (size_t k = 0; k < counts[i]; k++) corral_uint(&out, lines[i][k]);
    corral_end_array(&out);
    corral_end_object(&out);
  }
  corral_end_array(&out);
  corral_key(&out, "additions");
  corral_uint(&out, additions);
  corral_key(&out, "deletions");
  corral_uint(&out, deletions);
  corral_key(&out, "diff");
  corral_string(&out, diff.data ? diff.data : "", diff.len);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
