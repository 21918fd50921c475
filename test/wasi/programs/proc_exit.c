/*
 * proc_exit: the status a program passes is the exit status its host
 * reports. The status is argv[1]; the line before it must reach stdout.
 */
#include "check.h"

int main(int argc, char **argv) {
  if (argc != 2) die("usage: proc_exit STATUS");
  int status = atoi(argv[1]);
  printf("exiting with %d\n", status);
  exit(status);
}
