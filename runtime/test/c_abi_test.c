/* C ABI smoke test: dtrain_rt.h compiles as C11 and the library links and
 * works from a C program. Run under mpirun; exits 0 on success. */

#include "dtrain_rt.h"

#include <stdio.h>
#include <string.h>

static int differ(float actual, float expected) {
  return actual - expected > 1e-5f || expected - actual > 1e-5f;
}

/* The fence's count: +1 per record, +1 per wait of a recorded fence. */
static int fences;
static void *countFence(void *context) {
  *(int *)context += 1;
  return context;
}
static void countFenceWait(void *context, void *fence) {
  *(int *)context += fence == context;
}

/* A parallel loop's body: the squares of its range. */
static void squareRange(void *context, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    ((int64_t *)context)[i] = i * i;
}

int main(int argc, char **argv) {
  dtrain_rt_init(&argc, &argv);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  int32_t rank = dtrain_rt_comm_rank(world);
  int32_t size = dtrain_rt_comm_size(world);
  int failures = 0;

  float sum[3] = {(float)rank, 1.0f, (float)(rank + 1)};
  dtrain_rt_all_reduce(world, sum, 3, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  failures += sum[0] != (float)(size * (size - 1) / 2);
  failures += sum[1] != (float)size;
  failures += sum[2] != (float)(size * (size + 1) / 2);

  double mean[2] = {2.0 * rank, 4.0};
  dtrain_rt_request_t *request =
      dtrain_rt_all_reduce_start(world, mean, 2, DTRAIN_RT_F64, DTRAIN_RT_MEAN);
  while (!dtrain_rt_test(request))
    ;
  dtrain_rt_wait(request);
  failures += mean[0] != (double)(size - 1);
  failures += mean[1] != 4.0;

  uint16_t max[1] = {(uint16_t)(0x3c00 + rank)}; /* f16 1.0 + rank ulps */
  dtrain_rt_all_reduce_with(world, max, 1, DTRAIN_RT_F16, DTRAIN_RT_MAX,
                            DTRAIN_RT_ALLREDUCE_RING);
  failures += max[0] != 0x3c00 + size - 1;

  int64_t fromLast[2] = {rank, -rank};
  dtrain_rt_broadcast(world, fromLast, (int64_t)sizeof fromLast, size - 1);
  failures += fromLast[0] != size - 1 || fromLast[1] != 1 - size;

  /* A transport from C: the MPI one, copied, without its ring. */
  dtrain_rt_transport_t transport = *dtrain_rt_mpi_transport();
  transport.ring_from_bytes = 0;
  dtrain_rt_set_transport(&transport);
  dtrain_rt_broadcast(world, &rank, (int64_t)sizeof rank, 0);
  failures += rank != 0;
  dtrain_rt_set_transport(NULL);
  rank = dtrain_rt_comm_rank(world);

  /* Sparse-exchange kernels from C: the CPU's, copied. */
  dtrain_rt_sparse_kernels_t kernels = *dtrain_rt_cpu_sparse_kernels();
  dtrain_rt_set_sparse_kernels(&kernels);
  float grad[4] = {1, -4, 2, 3}, residual[4] = {0, 0, 0, 0};
  dtrain_rt_wait(dtrain_rt_sparse_all_reduce_start(
      world, grad, residual, 4, 1, NULL, 0, DTRAIN_RT_SELECT_EXACT,
      DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SUM, DTRAIN_RT_F32, 0));
  failures += grad[1] != -4.0f * (float)size || grad[0] != 0.0f;
  failures += residual[0] != 1.0f || residual[1] != 0.0f;
  dtrain_rt_set_sparse_kernels(NULL);

  /* A buffer fence from C: counts its records and waits. */
  dtrain_rt_buffer_fence_t fence = {&fences, countFence, countFenceWait};
  dtrain_rt_set_buffer_fence(&fence);
  double one[1] = {1.0};
  dtrain_rt_all_reduce(world, one, 1, DTRAIN_RT_F64, DTRAIN_RT_SUM);
  dtrain_rt_set_buffer_fence(NULL);
  failures += one[0] != (double)size || fences != 2;

  /* Array files: the C types and calls (no files written: every rank runs
   * this; NpyTest covers the formats). */
  dtrain_rt_array_t array;
  int64_t shape[2] = {2, 3};
  char error[256];
  failures += dtrain_rt_array_alloc(&array, DTRAIN_RT_I32, 2, shape, error,
                                    sizeof error) != 0;
  failures += dtrain_rt_array_num_elements(&array) != 6;
  failures += ((int32_t *)array.data)[5] != 0;
  dtrain_rt_array_free(&array);
  failures += array.data != NULL;
  failures += dtrain_rt_npy_read("/nonexistent/x.npy", &array, error,
                                 sizeof error) == 0;
  failures += error[0] != '/';

  /* Heavy-op kernels: each links and computes a tiny case (KernelsTest
   * checks them). */
  float a[4] = {1, 2, 3, 4}, identity[4] = {1, 0, 0, 1}, product[4];
  dtrain_rt_matmul_f32(a, identity, product, 2, 2, 2, 0, 0, 0.0f);
  for (int i = 0; i < 4; ++i)
    failures += differ(product[i], a[i]);
  /* Two 1x2 by 2x1 products: (1 2).(1 0) = 1, (3 4).(0 1) = 4. */
  float dots[2];
  dtrain_rt_batch_matmul_f32(a, identity, dots, 2, 1, 1, 2, 0, 0, 0.0f);
  failures += differ(dots[0], 1) + differ(dots[1], 4);
  float image[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, ones[4] = {1, 1, 1, 1};
  float bias = 0.5f, conv[4], pool[4];
  dtrain_rt_conv2d_f32(image, ones, &bias, conv, 1, 1, 3, 3, 1, 2, 2, 2, 2, 1,
                       1, 0, 0, 0, 0, 1, 1, 1);
  dtrain_rt_pool2d_f32(image, pool, DTRAIN_RT_POOL_MAX, 1, 1, 3, 3, 2, 2, 2, 2,
                       1, 1, 0, 0, 0, 0, 1, 1);
  const float convExpected[4] = {8.5f, 12.5f, 20.5f, 24.5f};
  const float poolExpected[4] = {4, 5, 7, 8};
  for (int i = 0; i < 4; ++i) {
    failures += differ(conv[i], convExpected[i]);
    failures += differ(pool[i], poolExpected[i]);
  }
  float x[2] = {1, 3}, scale = 2, shift = 1, runMean = 2, runVar = 1, y[2];
  float batchMean, batchVar;
  dtrain_rt_batch_norm_f32(x, &scale, &shift, &runMean, &runVar, y, 2, 1, 1,
                           0.0f);
  failures += differ(y[0], -1) + differ(y[1], 3);
  dtrain_rt_batch_norm_train_f32(x, &scale, &shift, y, &batchMean, &batchVar, 2,
                                 1, 1, 0.0f);
  failures += differ(y[0], -1) + differ(y[1], 3);
  failures += differ(batchMean, 2) + differ(batchVar, 1);
  double a64[4] = {1, 2, 3, 4}, identity64[4] = {1, 0, 0, 1}, product64[4];
  dtrain_rt_matmul_f64(a64, identity64, product64, 2, 2, 2, 0, 0, 0.0);
  for (int i = 0; i < 4; ++i)
    failures += product64[i] != a64[i];
  double dots64[2];
  dtrain_rt_batch_matmul_f64(a64, identity64, dots64, 2, 1, 1, 2, 0, 0, 0.0);
  failures += (dots64[0] != 1) + (dots64[1] != 4);
  double image64[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, ones64[4] = {1, 1, 1, 1};
  double bias64 = 0.5, conv64[4];
  dtrain_rt_conv2d_f64(image64, ones64, &bias64, conv64, 1, 1, 3, 3, 1, 2, 2, 2,
                       2, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  for (int i = 0; i < 4; ++i)
    failures += conv64[i] != (double)convExpected[i];
  /* Embedding gradient: rows 3, width 2; row 2 gets grad rows 0, 2 and 3
   * (index -1 wraps to 2), row 0 grad row 1, row 1 nothing. */
  const int64_t ids[4] = {2, 0, 2, -1};
  const float dx[8] = {1, 2, 10, 20, 100, 200, 1000, 2000};
  const double dx64[8] = {1, 2, 10, 20, 100, 200, 1000, 2000};
  const float tableExpected[6] = {10, 20, 0, 0, 1101, 2202};
  float table[6];
  double table64[6];
  dtrain_rt_embedding_grad_f32(dx, ids, table, 4, 3, 2);
  dtrain_rt_embedding_grad_f64(dx64, ids, table64, 4, 3, 2);
  for (int i = 0; i < 6; ++i) {
    failures += differ(table[i], tableExpected[i]);
    failures += table64[i] != (double)tableExpected[i];
  }

  /* A parallel loop of generated code's kind: every iteration once. */
  int64_t squares[4096];
  memset(squares, 0xff, sizeof squares);
  dtrain_rt_parallel_for(squareRange, squares, 4096, 1000);
  for (int64_t i = 0; i < 4096; ++i)
    failures += squares[i] != i * i;

  if (failures)
    fprintf(stderr, "rank %d: %d C ABI checks failed\n", (int)rank, failures);
  else if (rank == 0)
    printf("C ABI test passed on %d ranks\n", (int)size);
  dtrain_rt_finalize();
  return failures != 0;
}
