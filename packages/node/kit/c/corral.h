/*
 * corral.h -- the C author's kit for Corral tools (README.md beside it).
 *
 * A Corral tool is a wasi:cli command: one JSON object on stdin, one JSON
 * value on stdout, diagnostics on stderr, exit 0. On bad input it prints
 * {"error":{"message":"..."}} to stdout, the message to stderr, and exits 1
 * (the preview1 -> component adapter collapses exit codes to 0/1, so the
 * reason travels as JSON).
 *
 * Link corral.c into the tool with -nostartfiles (`corral build` does): it
 * defines _start and exports cabi_realloc, which the component adapter
 * needs for inputs and outputs of about 1 MiB and more. Write main() as
 * usual.
 *
 * Reading:   corral_input() parses stdin into a tree of corral_value.
 * Checking:  corral_only_fields() refuses unknown fields; corral_get_*()
 *            read a field and fail in the contract's shape on a wrong type.
 * Writing:   a corral_writer builds the output (commas and escaping done
 *            for you); corral_output() prints it.
 * Failing:   corral_fail("...", ...) at any point.
 */
#ifndef CORRAL_H
#define CORRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of arrays and objects, in input and output alike. */
#define CORRAL_MAX_DEPTH 256

/* ---- values ------------------------------------------------------------ */

typedef enum {
  CORRAL_NULL,
  CORRAL_BOOL,
  CORRAL_NUMBER,
  CORRAL_STRING,
  CORRAL_ARRAY,
  CORRAL_OBJECT
} corral_type;

typedef struct corral_member corral_member;

typedef struct corral_value {
  corral_type type;
  bool boolean;           /* CORRAL_BOOL */
  bool is_integer;        /* CORRAL_NUMBER written without '.' or exponent */
  int64_t integer;        /*   and in int64 range: its exact value */
                          /* Any number: corral_number(v) is its double. */
  size_t length;          /* bytes of a string or number text; elements of
                             an array; members of an object */
  union {
    const char *string;   /* CORRAL_STRING: UTF-8, NUL-terminated; may also
                             hold NULs ("\u0000"), so use `length`.
                             CORRAL_NUMBER: its text as written in the
                             input (not NUL-terminated) */
    struct corral_value *items; /* CORRAL_ARRAY: items[0..length) */
    corral_member *members;     /* CORRAL_OBJECT: members[0..length), in
                                   input order, duplicates kept */
  };
} corral_value;

struct corral_member {
  const char *key; /* decoded like a string value */
  size_t key_length;
  corral_value value;
};

/* "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *corral_type_name(corral_type t);

/* A number's value as the nearest double (0 for other types). Converted on
 * demand, so a tool that reads no fractions links no float parser. */
double corral_number(const corral_value *v);

/* ---- reading the input ------------------------------------------------- */

/* Reads all of stdin and parses it. The input must be a JSON object;
 * anything else (malformed JSON, another type, nesting deeper than
 * CORRAL_MAX_DEPTH) ends the tool through corral_fail with a message that
 * names the byte offset. The tree lives until the tool exits. */
const corral_value *corral_input(void);

/* Parses `len` bytes at `text` (which must have a NUL at text[len]) into
 * *out. Strings are decoded in place, so `text` is modified and the tree
 * points into it: a 64 MiB string costs 64 MiB, not 128. Returns 0, or -1
 * with a message in err. Any JSON value is accepted at the top. */
int corral_parse(char *text, size_t len, corral_value *out, char *err,
                 size_t err_size);

/* ---- looking at values --------------------------------------------------- */

/* The member `key` of an object (the last one if the key is repeated, as
 * JavaScript's JSON.parse does), or NULL if absent or obj is not an object. */
const corral_value *corral_get(const corral_value *obj, const char *key);

/* Fails with `unknown input field "x" (expected ...)` unless every member
 * of obj is named in `allowed` (a NULL-terminated list). `expected` is the
 * text in the parentheses; NULL lists the allowed names. */
void corral_only_fields(const corral_value *obj, const char *const allowed[],
                        const char *expected);

/* Typed field readers. Each returns the default (or NULL) when the field is
 * absent, and fails with `"key" must be a string, got a number` (and so on)
 * when it is present with another type. `null` counts as present. */
const char *corral_get_string(const corral_value *obj, const char *key,
                              const char *fallback, size_t *length);
int64_t corral_get_int(const corral_value *obj, const char *key,
                       int64_t fallback);
double corral_get_number(const corral_value *obj, const char *key,
                         double fallback);
bool corral_get_bool(const corral_value *obj, const char *key, bool fallback);
const corral_value *corral_get_array(const corral_value *obj, const char *key);
const corral_value *corral_get_object(const corral_value *obj,
                                      const char *key);

/* Like corral_get_string, but a missing field fails with
 * `missing required input field "key"`. */
const char *corral_require_string(const corral_value *obj, const char *key,
                                  size_t *length);

/* ---- writing the output ---------------------------------------------------- */

/* A growable buffer that holds JSON text. The structural calls add commas
 * and colons themselves, and stop the tool (corral_fail, naming the call)
 * when used out of order: a key outside an object or right after a key, a
 * value in an object without its key, an end that closes the wrong kind or
 * nothing, output with something left open; every string goes through JSON escaping, and bytes
 * that are not valid UTF-8 become U+FFFD (one per maximal invalid subpart,
 * as Node's Buffer#toString('utf8') does), so the output is always valid
 * JSON whatever bytes a path or a diff holds. Running out of memory ends
 * the tool with an error. */
typedef struct {
  char *data;
  size_t len, cap;
  int depth;                                  /* open arrays/objects */
  unsigned char count[CORRAL_MAX_DEPTH + 1];  /* has the level a value yet */
  char open[CORRAL_MAX_DEPTH + 1];            /* '{' or '[' of each level */
  bool after_key;                             /* a key waits for its value */
} corral_writer;

void corral_writer_init(corral_writer *w);
void corral_writer_free(corral_writer *w);

void corral_begin_object(corral_writer *w);
void corral_end_object(corral_writer *w);
void corral_begin_array(corral_writer *w);
void corral_end_array(corral_writer *w);
void corral_key(corral_writer *w, const char *key);
void corral_key_n(corral_writer *w, const char *key, size_t n);

void corral_null(corral_writer *w);
void corral_bool(corral_writer *w, bool v);
void corral_int(corral_writer *w, int64_t v);
void corral_uint(corral_writer *w, uint64_t v);
/* The shortest text that reads back as the same double; NaN and the
 * infinities, which JSON cannot hold, are written as null (as
 * JSON.stringify does). */
void corral_double(corral_writer *w, double v);
void corral_string(corral_writer *w, const char *s, size_t n);
void corral_cstring(corral_writer *w, const char *s);
/* A parsed value, written back; numbers exactly as the input wrote them. */
void corral_value_write(corral_writer *w, const corral_value *v);

/* Raw bytes with no JSON meaning and no separators, for building text
 * (a sentence, a path) in a scratch writer that you then pass to
 * corral_string: corral_string(out, scratch.data, scratch.len). */
void corral_append(corral_writer *w, const void *p, size_t n);
void corral_appendf(corral_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the writer's JSON and a newline to stdout, then frees it. A write
 * error is reported on stderr and ends the tool with status 1. */
void corral_output(corral_writer *w);

/* ---- failing ------------------------------------------------------------- */

/* Prints {"error":{"message":"<message>"}} to stdout and "error: <message>"
 * to stderr, and exits with status 1. printf-style; the message is cut at
 * 1 KiB. */
__attribute__((noreturn)) void corral_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
