/*===- prefetch_main.c - a compiled trainer with a recording prefetch -----===*
 *
 * The main of input-prefetch.test: installs an input prefetch
 * (dtrain_rt_set_input_prefetch) that prints each call to stderr as
 * "prefetch <bytes> <sum of the bytes>", and a buffer fence
 * (dtrain_rt_set_buffer_fence) whose first record, in step 1's first
 * collective that takes one (a sparse exchange: on one rank the dense
 * ones take none), waits until 4 prefetches have come (batch 2's x and y, which
 * the trainer gathers while step 1 runs), at most 30 s, then prints
 * "step 1: <N> prefetches before its first collective". Then it runs the
 * trainer's own main, which llvm-objcopy renamed compiled_main.
 *
 *===----------------------------------------------------------------------===*/

#include "dtrain_rt.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

int compiled_main(int argc, char **argv);

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t prefetched = PTHREAD_COND_INITIALIZER;
static int prefetches, records;

static void report(void *pointer, size_t bytes) {
  unsigned long long sum = 0;
  for (size_t i = 0; i < bytes; ++i)
    sum += ((const unsigned char *)pointer)[i];
  pthread_mutex_lock(&mutex);
  fprintf(stderr, "prefetch %zu %llu\n", bytes, sum);
  ++prefetches;
  pthread_cond_broadcast(&prefetched);
  pthread_mutex_unlock(&mutex);
}

static void *record(void *context) {
  (void)context;
  pthread_mutex_lock(&mutex);
  if (records++ == 0) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    while (prefetches < 4 &&
           pthread_cond_timedwait(&prefetched, &mutex, &deadline) == 0) {
    }
    fprintf(stderr, "step 1: %d prefetches before its first collective\n",
            prefetches);
  }
  pthread_mutex_unlock(&mutex);
  return NULL;
}

static void wait_fence(void *context, void *fence) {
  (void)context;
  (void)fence;
}

int main(int argc, char **argv) {
  dtrain_rt_set_input_prefetch(report);
  const dtrain_rt_buffer_fence_t fence = {NULL, record, wait_fence};
  dtrain_rt_set_buffer_fence(&fence);
  return compiled_main(argc, argv);
}
