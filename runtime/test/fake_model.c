/*===- fake_model.c - a stand-in for a model compiled by dtrain-compile ---===*
 *
 * Defines what dtrain-compile's object file defines (dtrain_model_info,
 * dtrain_model_run, main) for a tiny model, so that model_main_test.py can
 * drive dtrain_rt_model_main end to end:
 *
 *   weights  fc.weight f32[4] and shift f32 (scalar), from the ONNX file
 *            DTRAIN_FAKE_MODEL_ONNX (model_main_test.py puts there the
 *            fake_model.onnx of onnx_weights_fixtures.py)
 *   inputs   x f32[2,4], k i32[2] (declared the indices of a table of 3
 *            rows, as an embedding's token ids: the runtime checks them)
 *   outputs  y[i][j] = x[i][j] * fc.weight[j] * k[i]   (f32[2,4])
 *            total = sum(y) + shift                     (f64 scalar)
 *
 * With DTRAIN_FAKE_MODEL_BAD_INFO the description is malformed. With the
 * environment variable DTRAIN_FAKE_MODEL_COUNT set, the number of runs is
 * printed to stderr at exit ("fake_model: runs=N"). With
 * DTRAIN_FAKE_MODEL_PREFETCH set, it installs an input prefetch
 * (dtrain_rt_set_input_prefetch) that prints each call to stderr:
 * "fake_model: prefetch <buffer index> <bytes> <sum of the bytes>".
 * With DTRAIN_FAKE_MODEL_RUN_CALLER set, it installs a run caller
 * (dtrain_rt_set_run_caller) that prints each call to stderr before it
 * runs the model: "fake_model: call <count> <whether run is
 * dtrain_model_run> <whether buffers[i] is the i-th allocated buffer>".
 *
 *===----------------------------------------------------------------------===*/

#include "dtrain_rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef DTRAIN_FAKE_MODEL_ONNX
#error "define DTRAIN_FAKE_MODEL_ONNX as the path of fake_model.onnx"
#endif

const char dtrain_model_info[] =
    "dtrain-model 1\n"
    "onnx " DTRAIN_FAKE_MODEL_ONNX "\n"
    "mode infer\n"
    "arg param f32 4 fc.weight\n"
    "arg buffer f32 - shift\n"
#ifdef DTRAIN_FAKE_MODEL_BAD_INFO
    "arg input f8 2x4 x\n"
#else
    "arg input f32 2x4 x\n"
#endif
    "arg input i32 2 k\n"
    "arg output f32 2x4 y\n"
    "arg output f64 - total\n"
    "indices 3 k\n";

static int runs;

void dtrain_model_run(void **buffers) {
  const float *w = buffers[0], *shift = buffers[1], *x = buffers[2];
  const int32_t *k = buffers[3];
  float *y = buffers[4];
  double *total = buffers[5];
  double sum = 0;
  /* The runtime promises 64-byte alignment: generated code relies on it. */
  for (int i = 0; i < 6; ++i)
    if ((uintptr_t)buffers[i] % 64 != 0) {
      fprintf(stderr, "fake_model: buffer %d is not 64-byte aligned\n", i);
      abort();
    }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      y[i * 4 + j] = x[i * 4 + j] * w[j] * (float)k[i];
      sum += y[i * 4 + j];
    }
  *total = sum + *shift;
  ++runs;
}

static void reportRuns(void) { fprintf(stderr, "fake_model: runs=%d\n", runs); }

/* The buffers the runtime allocated, in the order it allocates them (the
 * description's), to name a prefetched buffer by its index. */
enum { kBuffers = 6 };
static void *allocated[kBuffers];
static int allocations;

static void *recordingAlloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
    return NULL;
  if (allocations < kBuffers)
    allocated[allocations] = p;
  ++allocations;
  return p;
}

static void reportPrefetch(void *pointer, size_t bytes) {
  int index = -1;
  for (int i = 0; i < kBuffers; ++i)
    if (allocated[i] == pointer)
      index = i;
  unsigned sum = 0;
  for (size_t i = 0; i < bytes; ++i)
    sum += ((const unsigned char *)pointer)[i];
  fprintf(stderr, "fake_model: prefetch %d %zu %u\n", index, bytes, sum);
}

static void reportingCaller(void (*run)(void **), void **buffers,
                            size_t count) {
  int allocatedInOrder = allocations == kBuffers;
  for (int i = 0; i < kBuffers && allocatedInOrder; ++i)
    allocatedInOrder = buffers[i] == allocated[i];
  fprintf(stderr, "fake_model: call %zu %d %d\n", count,
          run == dtrain_model_run, allocatedInOrder);
  run(buffers);
}

int main(int argc, char **argv) {
  if (getenv("DTRAIN_FAKE_MODEL_COUNT"))
    atexit(reportRuns);
  if (getenv("DTRAIN_FAKE_MODEL_PREFETCH")) {
    dtrain_rt_set_buffer_allocator(recordingAlloc, free);
    dtrain_rt_set_input_prefetch(reportPrefetch);
  }
  if (getenv("DTRAIN_FAKE_MODEL_RUN_CALLER")) {
    dtrain_rt_set_buffer_allocator(recordingAlloc, free);
    dtrain_rt_set_run_caller(reportingCaller);
  }
  return dtrain_rt_model_main(argc, argv, dtrain_model_info, dtrain_model_run);
}
