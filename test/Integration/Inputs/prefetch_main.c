/*===- prefetch_main.c - a compiled trainer with a recording prefetch -----===*
 *
 * The main of input-prefetch.test: installs an input prefetch
 * (dtrain_rt_set_input_prefetch) that prints each call to stderr as
 * "prefetch <bytes> <sum of the bytes>", then runs the trainer's own main,
 * which llvm-objcopy renamed compiled_main.
 *
 *===----------------------------------------------------------------------===*/

#include "dtrain_rt.h"

#include <stdio.h>

int compiled_main(int argc, char **argv);

static void report(void *pointer, size_t bytes) {
  unsigned long long sum = 0;
  for (size_t i = 0; i < bytes; ++i)
    sum += ((const unsigned char *)pointer)[i];
  fprintf(stderr, "prefetch %zu %llu\n", bytes, sum);
}

int main(int argc, char **argv) {
  dtrain_rt_set_input_prefetch(report);
  return compiled_main(argc, argv);
}
