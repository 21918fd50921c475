/* The C author's kit for Corral tools. See corral.h for the contract. */
#include "corral.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wasi/api.h>

/* ======================================================================
 * start-up
 *
 * Tools link this file with -nostartfiles, so this _start replaces
 * wasi-libc's crt1.
 *
 * cabi_realloc: the component adapter (wasi_snapshot_preview1 -> wasi:cli)
 * allocates its own buffers through the core module's exported
 * cabi_realloc. Without it the adapter falls back to a small static arena
 * and traps ("assertion failed at adapter line ...") on allocations of
 * about 1 MiB and more: large stdin reads, big outputs.
 *
 * _start: in a command module, LLVM 14's wasm-ld wraps every export except
 * _start in calls to the constructors and destructors, unless the program
 * calls __wasm_call_ctors itself. With that wrapper, the adapter's first
 * allocation ran the stdio destructors in the middle of a write, and the
 * first printf output of a tool was lost. Calling the constructors here
 * turns the wrappers off, and leaves no _initialize export, so the same
 * module also runs as a plain preview1 command (node:wasi, wasmtime).
 * ==================================================================== */

extern void __wasm_call_ctors(void);
extern void __wasm_call_dtors(void);
extern int __main_void(void);

__attribute__((export_name("cabi_realloc")))
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
  (void)old_size;
  (void)align; /* malloc alignment (16) covers every canonical ABI type */
  /* dlmalloc's realloc(p, 0) frees and returns NULL, which the canonical ABI
   * would read as out-of-memory; a zero-sized request needs a valid pointer. */
  return realloc(ptr, new_size ? new_size : 1);
}

__attribute__((export_name("_start")))
void _start(void) {
  __wasm_call_ctors();
  int status = __main_void();
  __wasm_call_dtors();
  if (status != 0) __wasi_proc_exit((__wasi_exitcode_t)status);
}

/* ======================================================================
 * failing
 * ==================================================================== */

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= (size_t)w;
  }
}

void corral_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout); /* anything the tool printed goes first */
  fprintf(stderr, "error: %s\n", msg);
  corral_writer w;
  corral_writer_init(&w);
  corral_begin_object(&w);
  corral_key(&w, "error");
  corral_begin_object(&w);
  corral_key(&w, "message");
  corral_cstring(&w, msg);
  corral_end_object(&w);
  corral_end_object(&w);
  corral_append(&w, "\n", 1);
  write_all(1, w.data, w.len);
  exit(1);
}

/* ======================================================================
 * reading stdin
 * ==================================================================== */

static char *read_all_stdin(size_t *len) {
  size_t cap = 64 * 1024, n = 0;
  char *buf = malloc(cap);
  if (!buf) corral_fail("out of memory reading input");
  for (;;) {
    if (cap - n < 2) {
      /* Double while small, then grow by half: a 64 MiB input should not
       * need a 128 MiB buffer when the tool's memory cap is close. */
      size_t grow = cap < (16u << 20) ? cap : cap / 2;
      char *nb = realloc(buf, cap + grow);
      if (!nb) corral_fail("out of memory reading input (%zu bytes so far)", n);
      buf = nb;
      cap += grow;
    }
    ssize_t r = read(0, buf + n, cap - n - 1);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      corral_fail("cannot read stdin: %s", strerror(errno));
    }
    n += (size_t)r;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* ======================================================================
 * parser: recursive descent over a mutable buffer
 * ==================================================================== */

typedef struct {
  char *s;
  size_t len;
  size_t pos;
  char *err;
  size_t err_size;
} parser;

/* Never inlined: each inlined snprintf call gets its own varargs slot in
 * the caller's frame, and the recursive parse_value's frame (multiplied by
 * the nesting depth, on a 64 KiB stack) grew from 16 to 304 bytes. */
__attribute__((noinline, cold)) static int perr(parser *p, const char *what) {
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

/* The 4 hex digits at s[at]; -1 if malformed. */
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
    /* Copy a plain run in one go; most text has few escapes. */
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
            cp = 0xFFFD; /* a lone high surrogate has no UTF-8 form */
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

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *p, corral_value *v) {
  size_t start = p->pos, i = start;
  const char *s = p->s;
  int integral = 1;
  if (i < p->len && s[i] == '-') i++;
  if (i < p->len && s[i] == '0') {
    i++;
  } else if (i < p->len && s[i] >= '1' && s[i] <= '9') {
    while (i < p->len && is_digit(s[i])) i++;
  } else {
    p->pos = i;
    return perr(p, "invalid number");
  }
  if (i < p->len && s[i] == '.') {
    integral = 0;
    i++;
    if (!(i < p->len && is_digit(s[i]))) {
      p->pos = i;
      return perr(p, "invalid number: digit expected after '.'");
    }
    while (i < p->len && is_digit(s[i])) i++;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    integral = 0;
    i++;
    if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
    if (!(i < p->len && is_digit(s[i]))) {
      p->pos = i;
      return perr(p, "invalid number: digit expected in exponent");
    }
    while (i < p->len && is_digit(s[i])) i++;
  }
  v->type = CORRAL_NUMBER;
  v->string = s + start;
  v->length = i - start;
  if (integral) {
    /* Exact int64 value when it fits; corral_number() does the rest. */
    size_t k = start;
    int negative = s[k] == '-';
    if (negative) k++;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t acc = 0;
    int fits = 1;
    for (; k < i && fits; k++) {
      unsigned d = (unsigned)(s[k] - '0');
      if (acc > (limit - d) / 10) fits = 0;
      else acc = acc * 10 + d;
    }
    if (fits) {
      v->is_integer = true;
      v->integer = negative ? (int64_t)(0 - acc) : (int64_t)acc;
    }
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

/* Makes room for element `count` of a growing array of `size`-byte
 * elements. The capacity is implicit (4, then doubling at powers of two),
 * so the recursive parser keeps no address-taken locals: every byte of a
 * parser frame is multiplied by the nesting depth, on a 64 KiB stack. */
static void *grow(parser *p, void *arr, size_t count, size_t size) {
  if (count != 0 && (count < 4 || (count & (count - 1)) != 0)) return arr;
  void *na = realloc(arr, (count ? count * 2 : 4) * size);
  if (!na) perr(p, "out of memory");
  return na;
}

static int parse_value(parser *p, corral_value *v, int depth);

static int parse_array(parser *p, corral_value *v, int depth) {
  if (depth > CORRAL_MAX_DEPTH) return perr(p, "nesting too deep");
  v->type = CORRAL_ARRAY;
  p->pos++; /* '[' */
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == ']') {
    p->pos++;
    return 0;
  }
  for (;;) {
    corral_value *items = grow(p, v->items, v->length, sizeof *items);
    if (!items) return -1;
    v->items = items;
    if (parse_value(p, &v->items[v->length], depth)) return -1;
    v->length++;
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

static int parse_object(parser *p, corral_value *v, int depth) {
  if (depth > CORRAL_MAX_DEPTH) return perr(p, "nesting too deep");
  v->type = CORRAL_OBJECT;
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
    corral_member *ms = grow(p, v->members, v->length, sizeof *ms);
    if (!ms) return -1;
    v->members = ms;
    corral_member *m = &v->members[v->length];
    if (parse_string(p, &m->key, &m->key_length)) return -1;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':') return perr(p, "':' expected");
    p->pos++;
    if (parse_value(p, &m->value, depth)) return -1;
    v->length++;
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

static int parse_value(parser *p, corral_value *v, int depth) {
  memset(v, 0, sizeof *v);
  skip_ws(p);
  if (p->pos >= p->len) return perr(p, "a value was expected");
  switch (p->s[p->pos]) {
    case '"':
      v->type = CORRAL_STRING;
      return parse_string(p, &v->string, &v->length);
    case '{': return parse_object(p, v, depth + 1);
    case '[': return parse_array(p, v, depth + 1);
    case 't':
      v->type = CORRAL_BOOL;
      v->boolean = true;
      return parse_literal(p, "true");
    case 'f':
      v->type = CORRAL_BOOL;
      return parse_literal(p, "false");
    case 'n': return parse_literal(p, "null"); /* type is CORRAL_NULL (0) */
    default: return parse_number(p, v);
  }
}

static int parse_document(char *text, size_t len, corral_value *out,
                          char *err, size_t err_size, int object_only) {
  parser p = {text, len, 0, err, err_size};
  memset(out, 0, sizeof *out);
  /* A UTF-8 byte order mark is not JSON, but editors add it; tolerate it. */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
  skip_ws(&p);
  if (object_only) {
    if (p.pos >= p.len) return perr(&p, "a JSON object was expected");
    if (p.s[p.pos] != '{') return perr(&p, "the input must be a JSON object");
  }
  if (parse_value(&p, out, 0)) return -1;
  skip_ws(&p);
  if (p.pos != p.len)
    return perr(&p, object_only ? "unexpected data after the object"
                                : "unexpected data after the value");
  return 0;
}

int corral_parse(char *text, size_t len, corral_value *out, char *err,
                 size_t err_size) {
  return parse_document(text, len, out, err, err_size, 0);
}

const corral_value *corral_input(void) {
  static corral_value input;
  size_t len;
  char *text = read_all_stdin(&len);
  char err[256];
  if (parse_document(text, len, &input, err, sizeof err, 1))
    corral_fail("%s", err);
  return &input;
}

/* ======================================================================
 * looking at values
 * ==================================================================== */

const char *corral_type_name(corral_type t) {
  switch (t) {
    case CORRAL_NULL: return "null";
    case CORRAL_BOOL: return "a boolean";
    case CORRAL_NUMBER: return "a number";
    case CORRAL_STRING: return "a string";
    case CORRAL_ARRAY: return "an array";
    case CORRAL_OBJECT: return "an object";
  }
  return "?";
}

double corral_number(const corral_value *v) {
  if (v->type != CORRAL_NUMBER) return 0;
  if (v->is_integer) return (double)v->integer;
  /* The text is a checked JSON number, which strtod reads exactly; copy it
   * out to end it with a NUL. */
  char small[64];
  char *text = v->length < sizeof small ? small : malloc(v->length + 1);
  if (!text) corral_fail("out of memory");
  memcpy(text, v->string, v->length);
  text[v->length] = '\0';
  double d = strtod(text, NULL);
  if (text != small) free(text);
  return d;
}

const corral_value *corral_get(const corral_value *obj, const char *key) {
  if (!obj || obj->type != CORRAL_OBJECT) return NULL;
  size_t kl = strlen(key);
  for (size_t i = obj->length; i-- > 0;) {
    const corral_member *m = &obj->members[i];
    if (m->key_length == kl && memcmp(m->key, key, kl) == 0) return &m->value;
  }
  return NULL;
}

void corral_only_fields(const corral_value *obj, const char *const allowed[],
                        const char *expected) {
  if (!obj || obj->type != CORRAL_OBJECT) return;
  for (size_t i = 0; i < obj->length; i++) {
    const corral_member *m = &obj->members[i];
    int known = 0;
    for (size_t k = 0; allowed[k] && !known; k++)
      known = strlen(allowed[k]) == m->key_length &&
              memcmp(allowed[k], m->key, m->key_length) == 0;
    if (known) continue;
    /* The key may hold any bytes: quote it as JSON. */
    corral_writer names;
    corral_writer_init(&names);
    corral_string(&names, m->key, m->key_length);
    corral_append(&names, " (expected ", 11);
    if (expected) {
      corral_append(&names, expected, strlen(expected));
    } else if (!allowed[0]) {
      corral_append(&names, "no fields", 9);
    } else {
      if (allowed[1]) corral_append(&names, "one of ", 7);
      for (size_t k = 0; allowed[k]; k++) {
        if (k) corral_append(&names, ", ", 2);
        corral_appendf(&names, "\"%s\"", allowed[k]);
      }
    }
    corral_append(&names, ")", 2); /* and the terminating NUL */
    corral_fail("unknown input field %s", names.data);
  }
}

static const corral_value *typed(const corral_value *obj, const char *key,
                                 corral_type want, const char *what) {
  const corral_value *v = corral_get(obj, key);
  if (v && v->type != want)
    corral_fail("\"%s\" must be %s, got %s", key, what,
                corral_type_name(v->type));
  return v;
}

const char *corral_get_string(const corral_value *obj, const char *key,
                              const char *fallback, size_t *length) {
  const corral_value *v = typed(obj, key, CORRAL_STRING, "a string");
  const char *s = v ? v->string : fallback;
  if (length) *length = v ? v->length : fallback ? strlen(fallback) : 0;
  return s;
}

const char *corral_require_string(const corral_value *obj, const char *key,
                                  size_t *length) {
  if (!corral_get(obj, key))
    corral_fail("missing required input field \"%s\"", key);
  return corral_get_string(obj, key, NULL, length);
}

int64_t corral_get_int(const corral_value *obj, const char *key,
                       int64_t fallback) {
  const corral_value *v = typed(obj, key, CORRAL_NUMBER, "an integer");
  if (!v) return fallback;
  if (v->is_integer) return v->integer;
  /* 2.0 and 1e3 are integers too; 2^63 is the first double out of range. */
  double d = corral_number(v);
  if (d == trunc(d) && fabs(d) < 9223372036854775808.0) return (int64_t)d;
  corral_fail("\"%s\" must be an integer that fits in 64 bits", key);
}

double corral_get_number(const corral_value *obj, const char *key,
                         double fallback) {
  const corral_value *v = typed(obj, key, CORRAL_NUMBER, "a number");
  return v ? corral_number(v) : fallback;
}

bool corral_get_bool(const corral_value *obj, const char *key, bool fallback) {
  const corral_value *v = typed(obj, key, CORRAL_BOOL, "a boolean");
  return v ? v->boolean : fallback;
}

const corral_value *corral_get_array(const corral_value *obj, const char *key) {
  return typed(obj, key, CORRAL_ARRAY, "an array");
}

const corral_value *corral_get_object(const corral_value *obj,
                                      const char *key) {
  return typed(obj, key, CORRAL_OBJECT, "an object");
}

/* ======================================================================
 * writer
 * ==================================================================== */

void corral_writer_init(corral_writer *w) { memset(w, 0, sizeof *w); }

void corral_writer_free(corral_writer *w) {
  free(w->data);
  corral_writer_init(w);
}

static void reserve(corral_writer *w, size_t extra) {
  if (w->cap - w->len >= extra) return;
  size_t ncap = w->cap ? w->cap : 4096;
  while (ncap - w->len < extra) ncap *= 2;
  char *nd = realloc(w->data, ncap);
  if (!nd) {
    /* No memory to format a message with: print a fixed one. */
    static const char msg[] =
        "{\"error\":{\"message\":\"out of memory building the output\"}}\n";
    write_all(2, "error: out of memory building the output\n", 41);
    write_all(1, msg, sizeof msg - 1);
    _exit(1);
  }
  w->data = nd;
  w->cap = ncap;
}

void corral_append(corral_writer *w, const void *p, size_t n) {
  reserve(w, n);
  memcpy(w->data + w->len, p, n);
  w->len += n;
}

void corral_appendf(corral_writer *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  reserve(w, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(w->data + w->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  w->len += (size_t)n;
}

/* Before a value or a key: the comma that separates it from the previous
 * one at this level (none right after a key). */
static void separate(corral_writer *w) {
  if (w->after_key) {
    w->after_key = false;
    return;
  }
  /* A misuse that would print JSON no one can parse: say so where it happens. */
  if (w->depth > 0 && w->open[w->depth] == '{')
    corral_fail("corral writer: a value inside an object needs corral_key first");
  if (w->count[w->depth]) corral_append(w, ",", 1);
  w->count[w->depth] = 1;
}

static void open_level(corral_writer *w, char c) {
  separate(w);
  if (w->depth >= CORRAL_MAX_DEPTH)
    corral_fail("output nested deeper than %d levels", CORRAL_MAX_DEPTH);
  corral_append(w, &c, 1);
  w->count[++w->depth] = 0;
  w->open[w->depth] = c;
}

static void close_level(corral_writer *w, char c) {
  const char *call = c == '}' ? "corral_end_object" : "corral_end_array";
  if (w->depth == 0) corral_fail("corral writer: %s with nothing open", call);
  if (w->open[w->depth] != (c == '}' ? '{' : '['))
    corral_fail("corral writer: %s closes an %s", call, w->open[w->depth] == '{' ? "object" : "array");
  if (w->after_key) corral_fail("corral writer: %s right after a key, before its value", call);
  w->depth--;
  corral_append(w, &c, 1);
}

void corral_begin_object(corral_writer *w) { open_level(w, '{'); }
void corral_end_object(corral_writer *w) { close_level(w, '}'); }
void corral_begin_array(corral_writer *w) { open_level(w, '['); }
void corral_end_array(corral_writer *w) { close_level(w, ']'); }

static void escaped(corral_writer *w, const char *s, size_t n);

void corral_key_n(corral_writer *w, const char *key, size_t n) {
  if (w->depth == 0 || w->open[w->depth] != '{')
    corral_fail("corral writer: corral_key(\"%.*s\") outside an object", (int)(n > 64 ? 64 : n), key);
  if (w->after_key)
    corral_fail("corral writer: corral_key(\"%.*s\") right after another key, before its value", (int)(n > 64 ? 64 : n), key);
  if (w->count[w->depth]) corral_append(w, ",", 1);
  w->count[w->depth] = 1;
  escaped(w, key, n);
  corral_append(w, ":", 1);
  w->after_key = true;
}

void corral_key(corral_writer *w, const char *key) {
  corral_key_n(w, key, strlen(key));
}

void corral_null(corral_writer *w) {
  separate(w);
  corral_append(w, "null", 4);
}

void corral_bool(corral_writer *w, bool v) {
  separate(w);
  if (v) corral_append(w, "true", 4);
  else corral_append(w, "false", 5);
}

static void put_u64(corral_writer *w, uint64_t v, int negative) {
  char tmp[24];
  int i = (int)sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  if (negative) tmp[--i] = '-';
  corral_append(w, tmp + i, sizeof tmp - (size_t)i);
}

void corral_uint(corral_writer *w, uint64_t v) {
  separate(w);
  put_u64(w, v, 0);
}

void corral_int(corral_writer *w, int64_t v) {
  separate(w);
  /* -(v + 1) + 1 avoids overflowing on INT64_MIN */
  if (v < 0) put_u64(w, (uint64_t)(-(v + 1)) + 1, 1);
  else put_u64(w, (uint64_t)v, 0);
}

void corral_double(corral_writer *w, double v) {
  if (!isfinite(v)) {
    corral_null(w);
    return;
  }
  /* Whole numbers that a double holds exactly print as integers, as
   * JavaScript prints them. */
  if (v == trunc(v) && fabs(v) < 9007199254740992.0) {
    corral_int(w, (int64_t)v);
    return;
  }
  /* Otherwise the fewest significant digits that read back as v. %g's
   * forms ("1.5", "1e+300", "2.5e-07") are all valid JSON numbers. */
  char buf[32];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  separate(w);
  corral_append(w, buf, strlen(buf));
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

/* `"..."` with JSON escaping; invalid UTF-8 becomes U+FFFD. */
static void escaped(corral_writer *w, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  corral_append(w, "\"", 1);
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
      j++;
    if (j > i) {
      corral_append(w, s + i, j - i);
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
      corral_append(w, esc, elen);
      i++;
      continue;
    }
    int k = utf8_seq(s + i, n - i);
    if (k > 0) {
      corral_append(w, s + i, (size_t)k);
      i += (size_t)k;
    } else {
      corral_append(w, "\xEF\xBF\xBD", 3);
      i += (size_t)(-k);
    }
  }
  corral_append(w, "\"", 1);
}

void corral_string(corral_writer *w, const char *s, size_t n) {
  separate(w);
  escaped(w, s, n);
}

void corral_cstring(corral_writer *w, const char *s) {
  corral_string(w, s, strlen(s));
}

void corral_value_write(corral_writer *w, const corral_value *v) {
  switch (v->type) {
    case CORRAL_NULL: corral_null(w); return;
    case CORRAL_BOOL: corral_bool(w, v->boolean); return;
    case CORRAL_NUMBER:
      separate(w);
      corral_append(w, v->string, v->length);
      return;
    case CORRAL_STRING: corral_string(w, v->string, v->length); return;
    case CORRAL_ARRAY:
      corral_begin_array(w);
      for (size_t i = 0; i < v->length; i++) corral_value_write(w, &v->items[i]);
      corral_end_array(w);
      return;
    case CORRAL_OBJECT:
      corral_begin_object(w);
      for (size_t i = 0; i < v->length; i++) {
        corral_key_n(w, v->members[i].key, v->members[i].key_length);
        corral_value_write(w, &v->members[i].value);
      }
      corral_end_object(w);
      return;
  }
}

void corral_output(corral_writer *w) {
  if (w->depth > 0 || w->after_key)
    corral_fail("corral writer: the output ends with %d array(s)/object(s) still open", w->depth);
  corral_append(w, "\n", 1);
  fflush(stdout); /* anything printed with printf goes first */
  size_t off = 0;
  while (off < w->len) {
    ssize_t n = write(1, w->data + off, w->len - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "error: cannot write to stdout: %s\n", strerror(errno));
      exit(1);
    }
    off += (size_t)n;
  }
  corral_writer_free(w);
}
