/* See json.h for the contract. */
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ======================================================================
 * stdin
 * ==================================================================== */

char *read_all_stdin(size_t *len) {
  size_t cap = 64 * 1024, n = 0;
  char *buf = malloc(cap);
  if (!buf) json_fail("out of memory reading input");
  for (;;) {
    if (cap - n < 2) {
      /* Double while small, then grow by half: a 64 MiB input should not
       * need a 128 MiB buffer when the tool's memory cap is close. */
      size_t grow = cap < (16u << 20) ? cap : cap / 2;
      char *nb = realloc(buf, cap + grow);
      if (!nb) json_fail("out of memory reading input (%zu bytes so far)", n);
      buf = nb;
      cap += grow;
    }
    ssize_t r = read(0, buf + n, cap - n - 1);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      json_fail("cannot read stdin: %s", strerror(errno));
    }
    n += (size_t)r;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* ======================================================================
 * parser
 * ==================================================================== */

/* Nesting limit for values we only skip. wasm32-wasi's default stack is
 * 64 KiB; recursion stays far below it at this depth. */
#define MAX_DEPTH 256

typedef struct {
  char *s;
  size_t len;
  size_t pos;
  char *err;
  size_t err_size;
} parser;

static int perr(parser *p, const char *what) {
  if (p->pos >= p->len)
    snprintf(p->err, p->err_size,
             "invalid JSON input: %s, but the input ended at byte %zu", what,
             p->pos);
  else
    snprintf(p->err, p->err_size, "invalid JSON input at byte %zu: %s",
             p->pos, what);
  return -1;
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Reads the 4 hex digits after "\u" at s[pos]; -1 if malformed. */
static long read_hex4(parser *p, size_t at) {
  if (at + 4 > p->len) return -1;
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p->s[at + i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

static char *put_utf8(char *w, unsigned long cp) {
  if (cp < 0x80) {
    *w++ = (char)cp;
  } else if (cp < 0x800) {
    *w++ = (char)(0xC0 | (cp >> 6));
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *w++ = (char)(0xE0 | (cp >> 12));
    *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *w++ = (char)(0xF0 | (cp >> 18));
    *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  }
  return w;
}

/* p->s[p->pos] is the opening quote. Decodes in place: the write cursor
 * never overtakes the read cursor because every escape is at least as long
 * as its UTF-8 encoding ("\n" 2->1, "\uXXXX" 6->1..3, surrogate pair 12->4,
 * lone surrogate 6->3 as U+FFFD). */
static int parse_string(parser *p, const char **out, size_t *out_len) {
  size_t r = ++p->pos;
  char *start = p->s + r;
  char *w = start;
  for (;;) {
    /* Copy the plain run in one go; diffs are mostly plain bytes. */
    size_t run = r;
    while (run < p->len) {
      unsigned char c = (unsigned char)p->s[run];
      if (c == '"' || c == '\\' || c < 0x20) break;
      run++;
    }
    if (run > r) {
      memmove(w, p->s + r, run - r);
      w += run - r;
      r = run;
    }
    if (r >= p->len) {
      p->pos = r;
      return perr(p, "unterminated string");
    }
    unsigned char c = (unsigned char)p->s[r];
    if (c == '"') {
      r++;
      break;
    }
    if (c < 0x20) {
      p->pos = r;
      return perr(p, "raw control character in string (must be escaped)");
    }
    /* backslash */
    if (r + 1 >= p->len) {
      p->pos = r;
      return perr(p, "unterminated escape sequence");
    }
    char e = p->s[r + 1];
    switch (e) {
      case '"': *w++ = '"'; r += 2; break;
      case '\\': *w++ = '\\'; r += 2; break;
      case '/': *w++ = '/'; r += 2; break;
      case 'b': *w++ = '\b'; r += 2; break;
      case 'f': *w++ = '\f'; r += 2; break;
      case 'n': *w++ = '\n'; r += 2; break;
      case 'r': *w++ = '\r'; r += 2; break;
      case 't': *w++ = '\t'; r += 2; break;
      case 'u': {
        long cp = read_hex4(p, r + 2);
        if (cp < 0) {
          p->pos = r;
          return perr(p, "\\u must be followed by 4 hex digits");
        }
        r += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          /* High surrogate: combine with a following low surrogate. */
          long lo = (r + 1 < p->len && p->s[r] == '\\' && p->s[r + 1] == 'u')
                        ? read_hex4(p, r + 2)
                        : -1;
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            r += 6;
          } else {
            cp = 0xFFFD; /* lone high surrogate has no UTF-8 form */
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD; /* lone low surrogate */
        }
        w = put_utf8(w, (unsigned long)cp);
        break;
      }
      default:
        p->pos = r;
        return perr(p, "invalid escape sequence in string");
    }
  }
  *w = '\0'; /* w < r here, and the closing quote has been consumed */
  p->pos = r;
  *out = start;
  *out_len = (size_t)(w - start);
  return 0;
}

static int parse_number(parser *p) {
  size_t i = p->pos;
  const char *s = p->s;
  if (i < p->len && s[i] == '-') i++;
  if (i < p->len && s[i] == '0') {
    i++;
  } else if (i < p->len && s[i] >= '1' && s[i] <= '9') {
    while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
  } else {
    p->pos = i;
    return perr(p, "invalid number");
  }
  if (i < p->len && s[i] == '.') {
    i++;
    if (!(i < p->len && s[i] >= '0' && s[i] <= '9')) {
      p->pos = i;
      return perr(p, "invalid number: digit expected after '.'");
    }
    while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
    if (!(i < p->len && s[i] >= '0' && s[i] <= '9')) {
      p->pos = i;
      return perr(p, "invalid number: digit expected in exponent");
    }
    while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
  }
  p->pos = i;
  return 0;
}

static int parse_literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return perr(p, "unexpected token");
  p->pos += n;
  return 0;
}

static int parse_object_body(parser *p, json_object *capture, int depth);
static int parse_array_body(parser *p, int depth);

/* Parses any value; for strings, reports the decoded text. */
static int parse_value(parser *p, int depth, json_type *type, const char **str,
                       size_t *str_len) {
  skip_ws(p);
  if (p->pos >= p->len) return perr(p, "a value was expected");
  *str = NULL;
  *str_len = 0;
  switch (p->s[p->pos]) {
    case '"': *type = JSON_STRING; return parse_string(p, str, str_len);
    case '{': *type = JSON_OBJECT; return parse_object_body(p, NULL, depth + 1);
    case '[': *type = JSON_ARRAY; return parse_array_body(p, depth + 1);
    case 't': *type = JSON_BOOL; return parse_literal(p, "true");
    case 'f': *type = JSON_BOOL; return parse_literal(p, "false");
    case 'n': *type = JSON_NULL; return parse_literal(p, "null");
    default: *type = JSON_NUMBER; return parse_number(p);
  }
}

static int parse_array_body(parser *p, int depth) {
  if (depth > MAX_DEPTH) return perr(p, "nesting too deep");
  p->pos++; /* '[' */
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == ']') {
    p->pos++;
    return 0;
  }
  for (;;) {
    json_type t;
    const char *s;
    size_t n;
    if (parse_value(p, depth, &t, &s, &n)) return -1;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == ']') {
      p->pos++;
      return 0;
    }
    return perr(p, "',' or ']' expected");
  }
}

/* With capture != NULL, records every member (the top-level object). */
static int parse_object_body(parser *p, json_object *capture, int depth) {
  if (depth > MAX_DEPTH) return perr(p, "nesting too deep");
  size_t cap = 0;
  p->pos++; /* '{' */
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == '}') {
    p->pos++;
    return 0;
  }
  for (;;) {
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '"')
      return perr(p, "a string key was expected");
    json_field f;
    if (parse_string(p, &f.key, &f.key_len)) return -1;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':') return perr(p, "':' expected");
    p->pos++;
    if (parse_value(p, depth, &f.type, &f.str, &f.str_len)) return -1;
    if (capture) {
      if (capture->count == cap) {
        cap = cap ? cap * 2 : 8;
        json_field *nf = realloc(capture->fields, cap * sizeof *nf);
        if (!nf) return perr(p, "out of memory");
        capture->fields = nf;
      }
      capture->fields[capture->count++] = f;
    }
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == '}') {
      p->pos++;
      return 0;
    }
    return perr(p, "',' or '}' expected");
  }
}

int json_parse_object(char *src, size_t len, json_object *out, char *err,
                      size_t err_size) {
  parser p = {src, len, 0, err, err_size};
  out->fields = NULL;
  out->count = 0;
  /* A UTF-8 byte order mark is not JSON, but editors add it; tolerate it. */
  if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
  skip_ws(&p);
  if (p.pos >= p.len) return perr(&p, "a JSON object was expected");
  if (p.s[p.pos] != '{')
    return perr(&p, "the input must be a JSON object");
  if (parse_object_body(&p, out, 0)) return -1;
  skip_ws(&p);
  if (p.pos != p.len) return perr(&p, "unexpected data after the object");
  return 0;
}

const json_field *json_get(const json_object *obj, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = obj->count; i-- > 0;) {
    const json_field *f = &obj->fields[i];
    if (f->key_len == kl && memcmp(f->key, key, kl) == 0) return f;
  }
  return NULL;
}

const char *json_type_name(json_type t) {
  switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
  }
  return "?";
}

/* ======================================================================
 * writer
 * ==================================================================== */

void jb_init(jbuf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
}

void jb_free(jbuf *b) {
  free(b->data);
  jb_init(b);
}

static void jb_reserve(jbuf *b, size_t extra) {
  if (b->cap - b->len >= extra) return;
  size_t ncap = b->cap ? b->cap : 4096;
  while (ncap - b->len < extra) ncap *= 2;
  char *nd = realloc(b->data, ncap);
  if (!nd) {
    /* Cannot build the output; report through a fresh small message. */
    static const char msg[] =
        "{\"error\":{\"message\":\"out of memory building the output\"}}\n";
    (void)!write(1, msg, sizeof msg - 1);
    _exit(1);
  }
  b->data = nd;
  b->cap = ncap;
}

void jb_write(jbuf *b, const void *p, size_t n) {
  jb_reserve(b, n);
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

void jb_putc(jbuf *b, char c) {
  jb_reserve(b, 1);
  b->data[b->len++] = c;
}

void jb_puts(jbuf *b, const char *s) { jb_write(b, s, strlen(s)); }

void jb_u64(jbuf *b, uint64_t v) {
  char tmp[24];
  int i = (int)sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  jb_write(b, tmp + i, sizeof tmp - (size_t)i);
}

void jb_printf(jbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  jb_reserve(b, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1..4), or, if invalid, minus
 * the length of its maximal invalid subpart (the bytes one U+FFFD stands
 * for, as in the WHATWG decoder and so in Node's Buffer#toString). */
static int utf8_seq(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  int need;
  unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) { need = 2; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) need = 2;
  else if (c == 0xED) { need = 2; hi = 0x9F; } /* excludes surrogates */
  else if (c >= 0xEE && c <= 0xEF) need = 2;
  else if (c == 0xF0) { need = 3; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) { need = 3; hi = 0x8F; } /* <= U+10FFFF */
  else return -1; /* continuation byte, C0/C1 (overlong) or F5..FF */
  for (int i = 1; i <= need; i++) {
    if ((size_t)i >= avail) return -i;
    unsigned char t = s[i];
    unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (t < l || t > h) return -i;
  }
  return need + 1;
}

void jb_str(jbuf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  /* Worst case is 6 output bytes per input byte ("\u00XX"). Reserving per
   * run keeps this linear without over-allocating for large strings. */
  jb_putc(b, '"');
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
      j++;
    if (j > i) {
      jb_write(b, s + i, j - i);
      i = j;
      if (i >= n) break;
    }
    unsigned char c = s[i];
    if (c < 0x80) {
      char esc[6] = {'\\', 0, 0, 0, 0, 0};
      size_t elen = 2;
      switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
          esc[1] = 'u';
          esc[2] = '0';
          esc[3] = '0';
          esc[4] = hex[c >> 4];
          esc[5] = hex[c & 15];
          elen = 6;
      }
      jb_write(b, esc, elen);
      i++;
      continue;
    }
    int k = utf8_seq(s + i, n - i);
    if (k > 0) {
      jb_write(b, s + i, (size_t)k);
      i += (size_t)k;
    } else {
      jb_write(b, "\xEF\xBF\xBD", 3);
      i += (size_t)(-k);
    }
  }
  jb_putc(b, '"');
}

void jb_cstr(jbuf *b, const char *s) { jb_str(b, s, strlen(s)); }

int jb_flush_stdout(const jbuf *b) {
  size_t off = 0;
  while (off < b->len) {
    ssize_t w = write(1, b->data + off, b->len - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    off += (size_t)w;
  }
  return 0;
}

void json_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "error: %s\n", msg);
  jbuf b;
  jb_init(&b);
  jb_puts(&b, "{\"error\":{\"message\":");
  jb_cstr(&b, msg);
  jb_puts(&b, "}}\n");
  jb_flush_stdout(&b);
  exit(1);
}
