/*
 * args_get, environ_get and stdin: the program sees exactly the arguments
 * and variables its host was given, in order, and reads stdin to EOF.
 */
#include "check.h"

extern char **environ;

int main(int argc, char **argv) {
  printf("argc: %d\n", argc);
  for (int i = 1; i < argc; i++) printf("argv[%d]: \"%s\"\n", i, argv[i]);
  int n = 0;
  for (char **e = environ; *e; e++) printf("env[%d]: \"%s\"\n", n++, *e);
  printf("env count: %d\n", n);
  unsigned long total = 0, lines = 0, sum = 0;
  int c;
  while ((c = getchar()) != EOF) {
    total++;
    lines += c == '\n';
    sum = (sum * 31 + (unsigned char)c) % 1000000007;
  }
  printf("stdin: %lu bytes, %lu lines, hash %lu, eof %s\n", total, lines, sum, feof(stdin) ? "yes" : "no");
  printf("read after eof: %ld\n", (long)read(0, &c, 1));
  return 0;
}
