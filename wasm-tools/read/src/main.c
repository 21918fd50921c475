/*
 * read: a file of the mounted /workspace, or a line range of it, with line
 * numbers (as `cat -n` prints them), line and byte limits and a marker when
 * the answer is cut short.
 *
 * Input:  {"path", "offset_line"?: 1, "limit_lines"?: 2000, "max_bytes"?: 262144}
 * Output: {"path", "encoding", "line_endings", "total_lines", "total_bytes",
 *          "start_line", "end_line", "content", "truncated",
 *          "next_offset_line"?, "invalid_utf8_bytes"?, "notes"}
 *
 * - Binary files (a NUL byte in the first 8000 bytes: git's test) are
 *   refused with a hint.
 * - UTF-16 with a byte order mark is decoded and said so; UTF-32 is refused;
 *   a UTF-8 byte order mark is reported and not shown.
 * - Bytes that are not UTF-8 are reported (how many, where the first is);
 *   JSON output cannot carry them, so they show as U+FFFD.
 */
#include <stdint.h>

#include "../../lib-text/text.h"

#define DEFAULT_LIMIT_LINES 2000
#define DEFAULT_MAX_BYTES (256 * 1024)
/* The whole file is read into memory; bigger files are refused with a hint. */
#define MAX_FILE_BYTES (64u * 1024 * 1024)

/* Decodes UTF-16 (after its BOM) to UTF-8; unpaired surrogates become
 * U+FFFD and are counted in *bad. */
static char *utf16_to_utf8(const unsigned char *s, size_t n, int big_endian,
                           size_t *out_len, size_t *bad) {
  char *out = lt_xmalloc(n / 2 * 3 + 4);
  size_t w = 0;
  *bad = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    uint32_t u = big_endian ? (uint32_t)(s[i] << 8 | s[i + 1])
                            : (uint32_t)(s[i + 1] << 8 | s[i]);
    if (u >= 0xD800 && u <= 0xDBFF && i + 3 < n) {
      uint32_t v = big_endian ? (uint32_t)(s[i + 2] << 8 | s[i + 3])
                              : (uint32_t)(s[i + 3] << 8 | s[i + 2]);
      if (v >= 0xDC00 && v <= 0xDFFF) {
        u = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00);
        i += 2;
      } else {
        u = 0xFFFD;
        (*bad)++;
      }
    } else if (u >= 0xD800 && u <= 0xDFFF) {
      u = 0xFFFD;
      (*bad)++;
    }
    if (u < 0x80) {
      out[w++] = (char)u;
    } else if (u < 0x800) {
      out[w++] = (char)(0xC0 | u >> 6);
      out[w++] = (char)(0x80 | (u & 0x3F));
    } else if (u < 0x10000) {
      out[w++] = (char)(0xE0 | u >> 12);
      out[w++] = (char)(0x80 | ((u >> 6) & 0x3F));
      out[w++] = (char)(0x80 | (u & 0x3F));
    } else {
      out[w++] = (char)(0xF0 | u >> 18);
      out[w++] = (char)(0x80 | ((u >> 12) & 0x3F));
      out[w++] = (char)(0x80 | ((u >> 6) & 0x3F));
      out[w++] = (char)(0x80 | (u & 0x3F));
    }
  }
  out[w] = '\0';
  *out_len = w;
  return out;
}

/* Sentences about the file that the answer carries in "notes". */
static char *notes[8];
static size_t n_notes;
static void add_note(const char *s) {
  if (n_notes < sizeof notes / sizeof *notes) notes[n_notes++] = lt_dupn(s, strlen(s));
}

/* The longest prefix of s[0..n) that does not end inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n) {
  size_t k = n;
  /* Step back over at most 3 continuation bytes to the lead byte. */
  size_t back = 0;
  while (k > 0 && back < 3 && ((unsigned char)s[k - 1] & 0xC0) == 0x80) {
    k--;
    back++;
  }
  if (k == 0) return n;
  unsigned char lead = (unsigned char)s[k - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (lead >= 0xC0 && back + 1 < need) return k - 1; /* sequence cut short */
  return n;
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"path", "offset_line", "limit_lines",
                                       "max_bytes", NULL};
  corral_only_fields(input, fields, NULL);

  size_t path_len;
  const char *path_in = corral_require_string(input, "path", &path_len);
  lt_path path = lt_field_path("path", path_in, path_len);
  int64_t offset = corral_get_int(input, "offset_line", 1);
  int64_t limit = corral_get_int(input, "limit_lines", DEFAULT_LIMIT_LINES);
  int64_t max_bytes = corral_get_int(input, "max_bytes", DEFAULT_MAX_BYTES);
  if (offset < 1) corral_fail("\"offset_line\" must be 1 or more (lines count from 1), got %lld", (long long)offset);
  if (limit < 1) corral_fail("\"limit_lines\" must be 1 or more, got %lld", (long long)limit);
  if (max_bytes < 1) corral_fail("\"max_bytes\" must be 1 or more, got %lld", (long long)max_bytes);

  char *raw;
  size_t raw_len;
  int e = lt_read_file(path.guest, MAX_FILE_BYTES, &raw, &raw_len);
  if (e == EFBIG)
    corral_fail("%s is larger than %u MiB, more than read loads; search it with grep instead",
                path.rel, MAX_FILE_BYTES >> 20);
  if (e) corral_fail("cannot read %s: %s", path.rel, lt_read_error(e));


  /* ---- encoding ---------------------------------------------------------- */
  lt_bom bom = lt_detect_bom(raw, raw_len);
  const char *encoding = "utf-8";
  char *text = raw;
  size_t len = raw_len;
  size_t invalid = 0, first_invalid = 0;
  char note[512];
  if (bom == LT_BOM_UTF32LE || bom == LT_BOM_UTF32BE)
    corral_fail("%s is %s text (byte order mark); read shows UTF-8 and UTF-16 only: "
                "convert it first (iconv -f UTF-32 -t UTF-8)",
                path.rel, bom == LT_BOM_UTF32LE ? "UTF-32LE" : "UTF-32BE");
  if (bom == LT_BOM_UTF16LE || bom == LT_BOM_UTF16BE) {
    size_t bad;
    text = utf16_to_utf8((const unsigned char *)raw + 2, raw_len - 2,
                         bom == LT_BOM_UTF16BE, &len, &bad);
    encoding = lt_bom_name(bom);
    snprintf(note, sizeof note,
             "decoded from %s (the file starts with its byte order mark); the "
             "content is shown as UTF-8 and line numbers count its lines. edit and "
             "apply-patch work on UTF-8 bytes and cannot change this file as text",
             bom == LT_BOM_UTF16LE ? "UTF-16LE" : "UTF-16BE");
    add_note(note);
    if (bad) {
      snprintf(note, sizeof note, "%zu unpaired UTF-16 surrogates are shown as U+FFFD", bad);
      add_note(note);
    }
    if ((raw_len - 2) % 2) add_note("the UTF-16 text has an odd number of bytes; the last byte is not shown");
  } else {
    long nul = lt_binary_offset(raw, raw_len);
    if (nul >= 0)
      corral_fail("%s looks binary (a NUL byte at offset %ld, in the first 8000 bytes "
                  "as git checks): read shows text only. Use file-stats for its size, or "
                  "grep for text inside it; if it is UTF-16 without a byte order mark, "
                  "convert it first",
                  path.rel, nul);
    if (bom == LT_BOM_UTF8) {
      text += 3;
      len -= 3;
      encoding = "utf-8-bom";
      add_note("the file starts with a UTF-8 byte order mark (EF BB BF); it is not shown in the content");
    }
    invalid = lt_utf8_invalid(text, len, &first_invalid);
    if (invalid) {
      encoding = "non-utf-8";
      snprintf(note, sizeof note,
               "%zu byte%s not valid UTF-8 (the first at line %zu, byte offset %zu); "
               "the content shows each as U+FFFD. The file may be Latin-1 or Windows-1252: "
               "edit matches exact bytes, so text with those bytes cannot be matched",
               invalid, invalid == 1 ? " is" : "s are", lt_line_of(text, first_invalid), first_invalid + (text - raw));
      add_note(note);
    }
  }

  /* ---- lines ------------------------------------------------------------- */
  size_t total_lines = 0, lf = 0, crlf = 0;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') {
      total_lines++;
      if (i > 0 && text[i - 1] == '\r') crlf++;
      else lf++;
    }
  if (len > 0 && text[len - 1] != '\n') total_lines++;
  const char *endings = crlf && lf ? "mixed" : crlf ? "crlf" : lf ? "lf" : "none";
  if (crlf)
    add_note("lines end with CRLF: the \\r is part of each line's content (and of old_text for edit)");

  if ((uint64_t)offset > (total_lines ? total_lines : 1))
    corral_fail("\"offset_line\" %lld is past the end of %s, which has %zu line%s",
                (long long)offset, path.rel, total_lines, total_lines == 1 ? "" : "s");

  /* Walk to the first line asked for. */
  size_t pos = 0;
  for (int64_t l = 1; l < offset; l++) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    pos = nl ? (size_t)(nl - text) + 1 : len;
  }

  corral_writer content;
  corral_writer_init(&content);
  size_t shown = 0, used = 0, line = (size_t)offset, cut_len = 0;
  int truncated = 0, line_cut = 0;
  const char *reason = NULL;
  while (pos < len) {
    if (shown == (uint64_t)limit) {
      truncated = 1;
      reason = "limit_lines";
      break;
    }
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) + 1 : len;
    size_t n = end - pos;
    if (used + n > (uint64_t)max_bytes) {
      truncated = 1;
      reason = "max_bytes";
      if (shown == 0) {
        /* One line longer than the budget: show its start. */
        size_t keep = utf8_cut(text + pos, (size_t)max_bytes);
        corral_appendf(&content, "%6zu\t", line);
        corral_append(&content, text + pos, keep);
        corral_append(&content, "\n", 1);
        shown = 1;
        used = keep;
        line_cut = 1;
        cut_len = n;
        line++;
      }
      break;
    }
    corral_appendf(&content, "%6zu\t", line);
    corral_append(&content, text + pos, n);
    if (!nl) corral_append(&content, "\n", 1); /* a last line without a newline */
    used += n;
    shown++;
    line++;
    pos = end;
  }
  size_t start_line = shown ? (size_t)offset : 0;
  size_t end_line = shown ? line - 1 : 0;
  if (truncated) {
    if (line_cut)
      corral_appendf(&content,
                     "[truncated: line %zu is %zu bytes, longer than max_bytes %lld; showed its first %zu bytes. "
                     "%zu line%s in the file; continue with offset_line %zu]\n",
                     start_line, cut_len,
                     (long long)max_bytes, used, total_lines, total_lines == 1 ? "" : "s", line);
    else
      corral_appendf(&content,
                     "[truncated: showed lines %zu-%zu of %zu (%s %lld reached); continue with offset_line %zu]\n",
                     start_line, end_line, total_lines, reason,
                     (long long)(reason[0] == 'l' ? limit : max_bytes), line);
  }
  if (!truncated && len > 0 && text[len - 1] != '\n')
    add_note("the last line has no newline at its end");

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  corral_key(&out, "path");
  corral_cstring(&out, path.rel);
  corral_key(&out, "encoding");
  corral_cstring(&out, encoding);
  corral_key(&out, "line_endings");
  corral_cstring(&out, endings);
  corral_key(&out, "total_lines");
  corral_uint(&out, total_lines);
  corral_key(&out, "total_bytes");
  corral_uint(&out, raw_len);
  corral_key(&out, "start_line");
  corral_uint(&out, start_line);
  corral_key(&out, "end_line");
  corral_uint(&out, end_line);
  corral_key(&out, "content");
  corral_string(&out, content.data ? content.data : "", content.len);
  corral_key(&out, "truncated");
  corral_bool(&out, truncated);
  if (truncated && line <= total_lines) {
    corral_key(&out, "next_offset_line");
    corral_uint(&out, line);
  }
  if (invalid) {
    corral_key(&out, "invalid_utf8_bytes");
    corral_uint(&out, invalid);
  }
  corral_key(&out, "notes");
  corral_begin_array(&out);
  for (size_t i = 0; i < n_notes; i++) corral_cstring(&out, notes[i]);
  corral_end_array(&out);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
