/*
 * diff-summary: {"diff": "<unified diff>", "language"?: "en"|"zh"} on stdin
 * -> per-file statistics, totals and a one-paragraph summary on stdout.
 * See ../tool-spec.json for the exact contract.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/json.h"
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

/* Builds the summary as raw UTF-8 into `s`; the caller escapes it. */
static void build_summary(jbuf *s, const diff_result *r, lang lg) {
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
    jb_puts(s, lg == LANG_ZH ? "没有变更。" : "No changes.");
    return;
  }
  int first = 1;
  if (lg == LANG_EN) {
    jb_printf(s, "%zu file%s changed: ", r->count, r->count == 1 ? "" : "s");
    for (size_t k = 0; k < sizeof summary_order / sizeof *summary_order; k++) {
      file_status st = summary_order[k];
      if (!by_status[st]) continue;
      jb_printf(s, "%s%llu %s", first ? "" : ", ",
                (unsigned long long)by_status[st], status_name(st));
      first = 0;
    }
    jb_printf(s, "; +%llu " MINUS "%llu in %llu hunk%s.",
              (unsigned long long)add, (unsigned long long)del,
              (unsigned long long)hunks, hunks == 1 ? "" : "s");
    if (largest) {
      jb_puts(s, " Largest change: ");
      jb_puts(s, largest->path);
      jb_printf(s, " (+%llu " MINUS "%llu).",
                (unsigned long long)largest->additions,
                (unsigned long long)largest->deletions);
    }
  } else {
    jb_printf(s, "%zu 个文件变更：", r->count);
    for (size_t k = 0; k < sizeof summary_order / sizeof *summary_order; k++) {
      file_status st = summary_order[k];
      if (!by_status[st]) continue;
      jb_printf(s, "%s%s %llu 个", first ? "" : "，", zh_status[st],
                (unsigned long long)by_status[st]);
      first = 0;
    }
    jb_printf(s, "；+%llu " MINUS "%llu，共 %llu 个变更块。",
              (unsigned long long)add, (unsigned long long)del,
              (unsigned long long)hunks);
    if (largest) {
      jb_puts(s, "改动最大的文件：");
      jb_puts(s, largest->path);
      jb_printf(s, "（+%llu " MINUS "%llu）。",
                (unsigned long long)largest->additions,
                (unsigned long long)largest->deletions);
    }
  }
}

static void write_output(jbuf *o, const diff_result *r, lang lg) {
  uint64_t add = 0, del = 0, hunks = 0;
  jb_puts(o, "{\"files\":[");
  for (size_t i = 0; i < r->count; i++) {
    const diff_file *f = &r->files[i];
    add += f->additions;
    del += f->deletions;
    hunks += f->hunks;
    if (i) jb_putc(o, ',');
    jb_puts(o, "{\"path\":");
    jb_cstr(o, f->path);
    if (f->old_path) {
      jb_puts(o, ",\"old_path\":");
      jb_cstr(o, f->old_path);
    }
    jb_puts(o, ",\"status\":\"");
    jb_puts(o, status_name(f->status));
    jb_puts(o, "\",\"additions\":");
    jb_u64(o, f->additions);
    jb_puts(o, ",\"deletions\":");
    jb_u64(o, f->deletions);
    jb_puts(o, ",\"hunks\":");
    jb_u64(o, f->hunks);
    jb_puts(o, f->binary ? ",\"binary\":true" : ",\"binary\":false");
    if (f->old_mode[0]) {
      jb_puts(o, ",\"old_mode\":");
      jb_cstr(o, f->old_mode);
      jb_puts(o, ",\"new_mode\":");
      jb_cstr(o, f->new_mode);
    }
    jb_putc(o, '}');
  }
  jb_puts(o, "],\"totals\":{\"files\":");
  jb_u64(o, r->count);
  jb_puts(o, ",\"additions\":");
  jb_u64(o, add);
  jb_puts(o, ",\"deletions\":");
  jb_u64(o, del);
  jb_puts(o, ",\"hunks\":");
  jb_u64(o, hunks);
  jb_puts(o, "},\"summary\":");
  jbuf s;
  jb_init(&s);
  build_summary(&s, r, lg);
  jb_str(o, s.data, s.len);
  jb_free(&s);
  jb_puts(o, "}\n");
}

int main(void) {
  size_t len;
  char *input = read_all_stdin(&len);
  json_object obj;
  char err[256];
  if (json_parse_object(input, len, &obj, err, sizeof err)) json_fail("%s", err);

  const json_field *diff = NULL;
  lang lg = LANG_EN;
  for (size_t i = 0; i < obj.count; i++) {
    const json_field *f = &obj.fields[i];
    if (strcmp(f->key, "diff") == 0 && f->key_len == 4) {
      if (f->type != JSON_STRING)
        json_fail("\"diff\" must be a string, got %s", json_type_name(f->type));
      diff = f;
    } else if (strcmp(f->key, "language") == 0 && f->key_len == 8) {
      if (f->type != JSON_STRING)
        json_fail("\"language\" must be \"en\" or \"zh\", got %s",
                  json_type_name(f->type));
      if (strcmp(f->str, "en") == 0 && f->str_len == 2) lg = LANG_EN;
      else if (strcmp(f->str, "zh") == 0 && f->str_len == 2) lg = LANG_ZH;
      else json_fail("\"language\" must be \"en\" or \"zh\"");
    } else {
      jbuf k; /* escape the key: it may hold any bytes */
      jb_init(&k);
      jb_str(&k, f->key, f->key_len);
      jb_putc(&k, '\0');
      json_fail("unknown input field %s (expected \"diff\" and optionally "
                "\"language\")", k.data);
    }
  }
  if (!diff) json_fail("missing required input field \"diff\"");

  diff_result r;
  if (diff_parse(diff->str, diff->str_len, &r, err, sizeof err))
    json_fail("%s", err);
  if (r.count == 0 && !is_blank(diff->str, diff->str_len)) {
    if (r.orphan_hunks)
      json_fail("the input is not a unified diff: it has @@ hunk headers but "
                "no file headers ('diff --git' or '---'/'+++' lines)");
    json_fail("the input is not a unified diff: no 'diff --git' or "
              "'---'/'+++' file headers found");
  }

  jbuf o;
  jb_init(&o);
  write_output(&o, &r, lg);
  if (jb_flush_stdout(&o)) {
    fprintf(stderr, "error: cannot write to stdout\n");
    return 1;
  }
  return 0;
}
