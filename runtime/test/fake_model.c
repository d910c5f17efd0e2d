/*===- fake_model.c - a stand-in for a model compiled by dtrain-compile ---===*
 *
 * Defines what dtrain-compile's object file defines (dtrain_model_info,
 * dtrain_model_run, main) for a tiny model, so that model_main_test.py can
 * drive dtrain_rt_model_main end to end:
 *
 *   weights  fc.weight f32[4] and shift f32 (scalar), from the ONNX file
 *            DTRAIN_FAKE_MODEL_ONNX (model_main_test.py puts there the
 *            fake_model.onnx of onnx_weights_fixtures.py)
 *   inputs   x f32[2,4], k i32[2]
 *   outputs  y[i][j] = x[i][j] * fc.weight[j] * k[i]   (f32[2,4])
 *            total = sum(y) + shift                     (f64 scalar)
 *
 * With DTRAIN_FAKE_MODEL_BAD_INFO the description is malformed. With the
 * environment variable DTRAIN_FAKE_MODEL_COUNT set, the number of runs is
 * printed to stderr at exit ("fake_model: runs=N").
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
    "arg output f64 - total\n";

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

int main(int argc, char **argv) {
  if (getenv("DTRAIN_FAKE_MODEL_COUNT"))
    atexit(reportRuns);
  return dtrain_rt_model_main(argc, argv, dtrain_model_info, dtrain_model_run);
}
