/*
 * Minimal JSON support shared by Corral's first-party WASI tools.
 *
 * Tools speak the Corral tool ABI: one JSON object on stdin, one JSON value
 * on stdout, diagnostics on stderr, exit 0 on success. On bad input a tool
 * prints {"error":{"message":"..."}} to stdout and exits 1, because the
 * preview1 -> component adapter collapses exit codes to 0/1 and the caller
 * needs a reason it can show to a person.
 *
 * Input side: only what tool inputs need -- a top-level object whose
 * interesting fields are strings. Other value types are parsed (so the
 * document is validated) and reported by type, never materialized.
 *
 * Output side: a growable byte buffer with a string writer that always
 * produces valid JSON, whatever bytes it is given (invalid UTF-8 becomes
 * U+FFFD), since paths and diff text are arbitrary bytes.
 */
#ifndef CORRAL_JSON_H
#define CORRAL_JSON_H

#include <stddef.h>
#include <stdint.h>

/* ---- reading stdin ---------------------------------------------------- */

/* Reads all of stdin into a NUL-terminated heap buffer; *len excludes the
 * NUL. Exits through json_fail() if memory runs out. */
char *read_all_stdin(size_t *len);

/* ---- parsing ---------------------------------------------------------- */

typedef enum {
  JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

typedef struct {
  const char *key;   /* decoded, NUL-terminated (may contain inner NULs) */
  size_t key_len;
  json_type type;
  const char *str;   /* decoded value when type == JSON_STRING, else NULL */
  size_t str_len;
} json_field;

typedef struct {
  json_field *fields;
  size_t count;
} json_object;

/* Parses a JSON document that must be a single object. Decodes strings in
 * place (an escape sequence is never shorter than what it decodes to), so
 * `src` is modified and the returned pointers point into it: a 64 MiB diff
 * then costs 64 MiB, not 128. `src` must have a NUL at src[len].
 * Returns 0 on success; on failure returns -1 and writes a message that
 * names the byte offset into err. */
int json_parse_object(char *src, size_t len, json_object *out,
                      char *err, size_t err_size);

/* Last field with this key (JSON says duplicate keys are the parser's
 * choice; last-wins is what JavaScript's JSON.parse does), or NULL. */
const json_field *json_get(const json_object *obj, const char *key);

const char *json_type_name(json_type t);

/* ---- writing ---------------------------------------------------------- */

typedef struct {
  char *data;
  size_t len;
  size_t cap;
} jbuf;

void jb_init(jbuf *b);
void jb_free(jbuf *b);
void jb_putc(jbuf *b, char c);
void jb_write(jbuf *b, const void *p, size_t n);
void jb_puts(jbuf *b, const char *s);        /* raw, unescaped */
void jb_u64(jbuf *b, uint64_t v);            /* decimal number */
void jb_printf(jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));   /* raw, unescaped */

/* Writes `"..."` with JSON escaping. Valid UTF-8 passes through unchanged;
 * every byte that is not part of a valid UTF-8 sequence (including encoded
 * surrogates and overlong forms) becomes U+FFFD. */
void jb_str(jbuf *b, const char *s, size_t n);
void jb_cstr(jbuf *b, const char *s);

/* Writes the whole buffer to stdout (fd 1), retrying short writes.
 * Returns 0 on success. */
int jb_flush_stdout(const jbuf *b);

/* Prints {"error":{"message":msg}} to stdout, the message to stderr, and
 * exits with status 1. */
__attribute__((noreturn)) void json_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
