/*
 * kit-echo: a test tool for the C kit (test/kit/kit.test.ts builds it).
 *
 * Input:  {"value"?: any, "n"?: integer, "flag"?: boolean, "name"?: string,
 *          "ratio"?: number, "fail"?: string, "stdio"?: boolean,
 *          "misuse"?: string}
 * Output: {"echo": value as the kit writes it back,
 *          "shape": what the kit parsed (types, integers, doubles, bytes),
 *          "n", "flag", "name", "ratio": the typed readers' answers}
 * "fail" makes the tool fail with that message through corral_fail;
 * "stdio" prints the output with stdio's fwrite instead of corral_output
 * (the first stdio output of a tool was once lost; see the kit's _start).
 * "misuse" calls the writer out of order in the way it names, which the
 * kit must stop with an error rather than print broken JSON.
 */
#include <stdio.h>
#include <string.h>

#include "corral.h"

/* Mirrors the parsed tree so the test can check every field the kit set. */
static void shape(corral_writer *w, const corral_value *v) {
  switch (v->type) {
    case CORRAL_NULL:
    case CORRAL_BOOL:
      corral_cstring(w, v->type == CORRAL_NULL ? "null" : v->boolean ? "true" : "false");
      return;
    case CORRAL_NUMBER:
      corral_begin_object(w);
      if (v->is_integer) {
        corral_key(w, "int");
        corral_int(w, v->integer);
      }
      corral_key(w, "double");
      corral_double(w, corral_number(v));
      corral_end_object(w);
      return;
    case CORRAL_STRING:
      corral_begin_object(w);
      corral_key(w, "bytes");
      corral_uint(w, v->length);
      corral_end_object(w);
      return;
    case CORRAL_ARRAY:
      corral_begin_array(w);
      for (size_t i = 0; i < v->length; i++) shape(w, &v->items[i]);
      corral_end_array(w);
      return;
    case CORRAL_OBJECT:
      corral_begin_object(w);
      for (size_t i = 0; i < v->length; i++) {
        corral_key_n(w, v->members[i].key, v->members[i].key_length);
        shape(w, &v->members[i].value);
      }
      corral_end_object(w);
      return;
  }
}

static void writer_misuse(const char *how) {
  corral_writer w;
  corral_writer_init(&w);
  if (strcmp(how, "key-after-key") == 0) {
    corral_begin_object(&w);
    corral_key(&w, "words");
    corral_key(&w, "count_only");
  } else if (strcmp(how, "value-without-key") == 0) {
    corral_begin_object(&w);
    corral_int(&w, 1);
  } else if (strcmp(how, "key-in-array") == 0) {
    corral_begin_array(&w);
    corral_key(&w, "a");
  } else if (strcmp(how, "wrong-end") == 0) {
    corral_begin_array(&w);
    corral_end_object(&w);
  } else if (strcmp(how, "end-after-key") == 0) {
    corral_begin_object(&w);
    corral_key(&w, "a");
    corral_end_object(&w);
  } else if (strcmp(how, "left-open") == 0) {
    corral_begin_object(&w);
  }
  corral_output(&w);
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"value", "n", "flag", "name",
                                       "ratio", "fail", "stdio", "misuse", NULL};
  corral_only_fields(input, fields, NULL);

  const char *fail = corral_get_string(input, "fail", NULL, NULL);
  if (fail) corral_fail("%s", fail);
  const char *misuse = corral_get_string(input, "misuse", NULL, NULL);
  if (misuse) writer_misuse(misuse);
  bool stdio = corral_get_bool(input, "stdio", false);

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  const corral_value *value = corral_get(input, "value");
  if (value) {
    corral_key(&out, "echo");
    corral_value_write(&out, value);
    corral_key(&out, "shape");
    shape(&out, value);
  }
  corral_key(&out, "n");
  corral_int(&out, corral_get_int(input, "n", -1));
  corral_key(&out, "flag");
  corral_bool(&out, corral_get_bool(input, "flag", false));
  corral_key(&out, "name");
  size_t name_len;
  const char *name = corral_get_string(input, "name", "nobody", &name_len);
  corral_string(&out, name, name_len);
  corral_key(&out, "ratio");
  corral_double(&out, corral_get_number(input, "ratio", 0.5));
  corral_end_object(&out);
  if (stdio) {
    fwrite(out.data, 1, out.len, stdout);
    putchar('\n');
    corral_writer_free(&out);
  } else {
    corral_output(&out);
  }
  return 0;
}
