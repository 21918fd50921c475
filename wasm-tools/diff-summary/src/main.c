/*
 * diff-summary: {"diff": "<unified diff>", "language"?: "en"|"zh"} on stdin
 * -> per-file statistics, totals and a one-paragraph summary on stdout.
 * See ../tool-spec.json for the exact contract.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "diff.h"

typedef enum { LANG_EN, LANG_ZH } lang;

/* Order in which the summary lists the kinds of change. */
static const file_status summary_order[] = {
    ST_ADDED, ST_DELETED, ST_RENAMED, ST_COPIED, ST_MODIFIED, ST_BINARY};

static const char *const zh_status[ST_COUNT] = {
    [ST_ADDED] = "新增", [ST_DELETED] = "删除", [ST_MODIFIED] = "修改",
    [ST_RENAMED] = "重命名", [ST_COPIED] = "复制", [ST_BINARY] = "二进制"};

#define MINUS "\xE2\x88\x92" /* U+2212 MINUS SIGN, as in "+25 −7" */

static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
      return 0;
  return 1;
}

static void append_str(corral_writer *w, const char *text) {
  corral_append(w, text, strlen(text));
}

/* Builds the summary as raw UTF-8 text in the scratch writer `s`; the
 * caller writes it out as a JSON string. */
static void build_summary(corral_writer *s, const diff_result *r, lang lg) {
  uint64_t add = 0, del = 0, hunks = 0, by_status[ST_COUNT] = {0};
  const diff_file *largest = NULL;
  for (size_t i = 0; i < r->count; i++) {
    const diff_file *f = &r->files[i];
    add += f->additions;
    del += f->deletions;
    hunks += f->hunks;
    by_status[f->status]++;
    /* First file wins ties, so the summary follows diff order. */
    if (f->additions + f->deletions > 0 &&
        (!largest || f->additions + f->deletions >
                         largest->additions + largest->deletions))
      largest = f;
  }
  if (r->count == 0) {
    append_str(s, lg == LANG_ZH ? "没有变更。" : "No changes.");
    return;
  }
  int first = 1;
  if (lg == LANG_EN) {
    corral_appendf(s, "%zu file%s changed: ", r->count, r->count == 1 ? "" : "s");
    for (size_t k = 0; k < sizeof summary_order / sizeof *summary_order; k++) {
      file_status st = summary_order[k];
      if (!by_status[st]) continue;
      corral_appendf(s, "%s%llu %s", first ? "" : ", ",
                     (unsigned long long)by_status[st], status_name(st));
      first = 0;
    }
    corral_appendf(s, "; +%llu " MINUS "%llu in %llu hunk%s.",
                   (unsigned long long)add, (unsigned long long)del,
                   (unsigned long long)hunks, hunks == 1 ? "" : "s");
    if (largest) {
      append_str(s, " Largest change: ");
      append_str(s, largest->path);
      corral_appendf(s, " (+%llu " MINUS "%llu).",
                     (unsigned long long)largest->additions,
                     (unsigned long long)largest->deletions);
    }
  } else {
    corral_appendf(s, "%zu 个文件变更：", r->count);
    for (size_t k = 0; k < sizeof summary_order / sizeof *summary_order; k++) {
      file_status st = summary_order[k];
      if (!by_status[st]) continue;
      corral_appendf(s, "%s%s %llu 个", first ? "" : "，", zh_status[st],
                     (unsigned long long)by_status[st]);
      first = 0;
    }
    corral_appendf(s, "；+%llu " MINUS "%llu，共 %llu 个变更块。",
                   (unsigned long long)add, (unsigned long long)del,
                   (unsigned long long)hunks);
    if (largest) {
      append_str(s, "改动最大的文件：");
      append_str(s, largest->path);
      corral_appendf(s, "（+%llu " MINUS "%llu）。",
                     (unsigned long long)largest->additions,
                     (unsigned long long)largest->deletions);
    }
  }
}

/* One sentence per problem, in the summary's language. */
static void problem_message(corral_writer *s, const diff_problem *p, lang lg) {
  unsigned long long o = p->old_missing, n = p->new_missing;
  switch (p->kind) {
    case PB_TRUNCATED:
      if (lg == LANG_ZH)
        corral_appendf(s, "差异在变更块中途结束：缺少 %llu 行旧内容和 %llu 行新内容", o, n);
      else
        corral_appendf(s, "the diff ends inside a hunk: %llu old and %llu new lines are missing", o, n);
      break;
    case PB_SHORT_HUNK:
      if (lg == LANG_ZH)
        corral_appendf(s, "变更块提前结束：缺少 %llu 行旧内容和 %llu 行新内容", o, n);
      else
        corral_appendf(s, "the hunk ends early: %llu old and %llu new lines are missing", o, n);
      break;
    case PB_BAD_LINE:
      if (lg == LANG_ZH)
        corral_appendf(s, "变更块中有一行不是变更内容（应以空格、-、+ 或 \\ 开头）；仍缺少 %llu 行旧内容和 %llu 行新内容", o, n);
      else
        corral_appendf(s, "a line inside a hunk that is not hunk content (a space, -, + or \\ first); %llu old and %llu new lines were still expected", o, n);
      break;
    case PB_BAD_HUNK_HEADER:
      append_str(s, lg == LANG_ZH ? "无法解析的变更块头（@@ 行），其中的行未计入"
                                  : "a hunk header (@@ line) that does not parse; its lines are not counted");
      break;
    default:
      append_str(s, lg == LANG_ZH ? "变更块头之前有不属于任何变更块的行：上一个变更块的行数比其头部所写的多"
                                  : "a hunk header after lines that are in no hunk: the previous hunk has more lines than its header says");
      break;
  }
}

static void write_output(corral_writer *o, const diff_result *r, lang lg) {
  uint64_t add = 0, del = 0, hunks = 0;
  corral_begin_object(o);
  corral_key(o, "files");
  corral_begin_array(o);
  for (size_t i = 0; i < r->count; i++) {
    const diff_file *f = &r->files[i];
    add += f->additions;
    del += f->deletions;
    hunks += f->hunks;
    corral_begin_object(o);
    corral_key(o, "path");
    corral_cstring(o, f->path);
    if (f->old_path) {
      corral_key(o, "old_path");
      corral_cstring(o, f->old_path);
    }
    corral_key(o, "status");
    corral_cstring(o, status_name(f->status));
    corral_key(o, "additions");
    corral_uint(o, f->additions);
    corral_key(o, "deletions");
    corral_uint(o, f->deletions);
    corral_key(o, "hunks");
    corral_uint(o, f->hunks);
    corral_key(o, "binary");
    corral_bool(o, f->binary);
    if (f->old_mode[0]) {
      corral_key(o, "old_mode");
      corral_cstring(o, f->old_mode);
      corral_key(o, "new_mode");
      corral_cstring(o, f->new_mode);
    }
    corral_end_object(o);
  }
  corral_end_array(o);
  /* Only when there are any, and before totals and summary: readers find
   * those two at the end of a long output (apps/web history). */
  if (r->problem_count) {
    corral_key(o, "problems");
    corral_begin_array(o);
    corral_writer m;
    corral_writer_init(&m);
    for (size_t i = 0; i < r->problem_count; i++) {
      const diff_problem *p = &r->problems[i];
      corral_begin_object(o);
      corral_key(o, "path");
      corral_cstring(o, p->path ? p->path : "");
      corral_key(o, "line");
      corral_uint(o, p->line);
      corral_key(o, "kind");
      corral_cstring(o, problem_name(p->kind));
      corral_key(o, "message");
      m.len = 0;
      problem_message(&m, p, lg);
      corral_string(o, m.data, m.len);
      corral_end_object(o);
    }
    corral_writer_free(&m);
    corral_end_array(o);
  }
  corral_key(o, "totals");
  corral_begin_object(o);
  corral_key(o, "files");
  corral_uint(o, r->count);
  corral_key(o, "additions");
  corral_uint(o, add);
  corral_key(o, "deletions");
  corral_uint(o, del);
  corral_key(o, "hunks");
  corral_uint(o, hunks);
  corral_end_object(o);
  corral_key(o, "summary");
  corral_writer s;
  corral_writer_init(&s);
  build_summary(&s, r, lg);
  corral_string(o, s.data, s.len);
  corral_writer_free(&s);
  corral_end_object(o);
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"diff", "language", NULL};
  corral_only_fields(input, fields, "\"diff\" and optionally \"language\"");

  size_t diff_len;
  const char *diff = corral_require_string(input, "diff", &diff_len);
  lang lg = LANG_EN;
  const corral_value *language = corral_get(input, "language");
  if (language) {
    if (language->type != CORRAL_STRING)
      corral_fail("\"language\" must be \"en\" or \"zh\", got %s",
                  corral_type_name(language->type));
    if (strcmp(language->string, "en") == 0 && language->length == 2) lg = LANG_EN;
    else if (strcmp(language->string, "zh") == 0 && language->length == 2) lg = LANG_ZH;
    else corral_fail("\"language\" must be \"en\" or \"zh\"");
  }

  static diff_result r; /* static: its problem list is a few KiB */
  diff_parse(diff, diff_len, &r);
  if (r.count == 0 && !is_blank(diff, diff_len)) {
    if (r.orphan_hunks)
      corral_fail("the input is not a unified diff: it has @@ hunk headers but "
                  "no file headers ('diff --git' or '---'/'+++' lines)");
    corral_fail("the input is not a unified diff: no 'diff --git' or "
                "'---'/'+++' file headers found");
  }

  corral_writer o;
  corral_writer_init(&o);
  write_output(&o, &r, lg);
  corral_output(&o);
  return 0;
}
