/*===- dtrain_rt_cuda.h - dtrain runtime CUDA kernels C ABI -------*- C -*-===*
 *
 * The CUDA versions of the runtime's sparsification kernels
 * (libdtrain_runtime_cuda, built when the runtime is configured with
 * DTRAIN_ENABLE_CUDA): top-k selection, the residual (error-feedback)
 * update fused with it (and the dense choice's), the scatter-add of sparse
 * sets, 16-bit float conversions and an inf/NaN check, and the table of
 * the sparse exchange's kernels made of them. They compute what the CPU runtime
 * (dtrain_rt.h) computes, bit for bit where that header says so, and use
 * its codes (DTRAIN_RT_SELECT_*, DTRAIN_RT_F32/_F16/_BF16).
 *
 * Every buffer argument is a device pointer (or managed memory); STREAM is
 * a cudaStream_t (NULL: the legacy default stream). The work is ordered on
 * STREAM: a function returns once its kernels are queued, and its outputs
 * are ready when STREAM gets there. Only the Gaussian selection waits for
 * STREAM (to count its thresholds); see each function.
 *
 * The library also holds what compiled --target=cuda trainers call: the
 * CPU runtime's heavy-op kernels on the GPU, the mgpu* host functions of
 * MLIR's GPU lowering (not declared here; see lib/cuda/GpuHostFunctions.h),
 * and the managed memory and the NCCL transport at the end of this header.
 * Those exit on failure, because generated code has no error path.
 *
 * Errors of the sparsification kernels are returned, never printed, and
 * nothing aborts: each returns DTRAIN_RT_CUDA_SUCCESS (0) or one of the
 * codes below, and then
 * dtrain_rt_cuda_error_message() says, in one line naming the function,
 * what went wrong, e.g.
 *   "dtrain_rt_cuda_select_f32: capacity 10 is below the 12 entries it
 *    selects".
 * Arguments are checked before any work is queued. A kernel that fails
 * while running is reported by a later CUDA call on STREAM (the CUDA
 * runtime's sticky errors).
 *
 *===----------------------------------------------------------------------===*/

#ifndef DTRAIN_RT_CUDA_H
#define DTRAIN_RT_CUDA_H

#include "dtrain_rt.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
enum {
  DTRAIN_RT_CUDA_SUCCESS = 0,
  /* An argument is out of its documented range (a NULL buffer, a negative
   * size, a capacity or workspace too small, an unknown type). */
  DTRAIN_RT_CUDA_INVALID_ARGUMENT = 1,
  /* A valid request this library does not implement (e.g. DGC selection). */
  DTRAIN_RT_CUDA_UNSUPPORTED = 2,
  /* A CUDA runtime call or kernel launch failed (no device, out of memory,
   * an earlier asynchronous error on the stream); the message names the
   * call and quotes cudaGetErrorString. */
  DTRAIN_RT_CUDA_CUDA_ERROR = 3,
};

/* The message of this thread's last call of this library when it failed,
 * "" when it succeeded. Valid until the thread's next call. */
const char *dtrain_rt_cuda_error_message(void);

/*===--- Top-k selection --------------------------------------------------===*
 *
 * dtrain_rt_select_f32 on the GPU, for DTRAIN_RT_SELECT_EXACT and
 * DTRAIN_RT_SELECT_GAUSSIAN:
 *   EXACT     radix select over the magnitude bits (three histogram passes
 *             of 11, 11 and 10 bits, the bin search on the device), then an
 *             order-keeping compaction: the k largest |x|, ties to lower
 *             indices, inf and NaN the largest. Never waits for STREAM.
 *   GAUSSIAN  one pass for the mean and standard deviation (in double), one
 *             that counts |x| above every threshold the 3 corrections could
 *             reach, the correction rule applied to those counts on the
 *             host, then the compaction; exact top-k in the same cases as
 *             the CPU (inf/NaN, a count still off target). Waits for STREAM
 *             twice.
 * The thresholds are computed by the same code as on the CPU; the sums
 * differ from the CPU's only by the order of double additions, so the
 * selections are identical unless a float threshold rounds differently.
 *===----------------------------------------------------------------------===*/

/* Bytes of device workspace that selecting from N elements needs on the
 * current device (any method, any alignment); 0 for N <= 0 (and when the
 * CUDA runtime cannot tell: the selection then reports why). A workspace
 * may be reused by successive calls on the same stream. */
size_t dtrain_rt_cuda_select_workspace_size(int64_t n);

/* Selects entries of X[0..N) by METHOD (DTRAIN_RT_SELECT_EXACT or
 * _GAUSSIAN) for a target count K, as dtrain_rt_select_f32 does: writes
 * their indices to INDICES and their values to VALUES (either may be NULL,
 * not both), in ascending index order, and their number to *COUNT (host
 * memory). EXACT selects min(K, N); GAUSSIAN those past its threshold, and
 * when more than CAPACITY pass, the CAPACITY largest of them. CAPACITY must
 * be at least min(K, N). WORKSPACE holds at least
 * dtrain_rt_cuda_select_workspace_size(N) bytes (WORKSPACE_BYTES).
 * Returns DTRAIN_RT_CUDA_INVALID_ARGUMENT for N outside [0, 2^31),
 * negative K or CAPACITY, CAPACITY below min(K, N), NULL buffers or a small
 * workspace; DTRAIN_RT_CUDA_UNSUPPORTED for DGC and RANDOM; any other
 * METHOD is invalid. */
int dtrain_rt_cuda_select_f32(const float *x, int64_t n, int64_t k,
                              int32_t method, int32_t *indices, float *values,
                              int64_t capacity, int64_t *count,
                              void *workspace, size_t workspace_bytes,
                              void *stream);

/*===--- Residuals (error feedback) ---------------------------------------===*/

/* The local half of dtrain_rt_sparse_all_reduce_start, fused:
 *   u = GRAD + RESIDUAL                 (into RESIDUAL, in the first pass
 *                                        of the selection)
 *   select about K entries of u by METHOD, as dtrain_rt_cuda_select_f32
 *   VALUES = the selected u rounded to VALUE_TYPE (DTRAIN_RT_F32, or
 *            DTRAIN_RT_BF16 / DTRAIN_RT_F16: to nearest even, saturated)
 *   RESIDUAL = u with the selected entries zeroed, but for what the
 *              rounding dropped (selected u - VALUES)
 * INDICES and VALUES are both required; the other arguments and return
 * codes are those of dtrain_rt_cuda_select_f32 (K = 0 or N = 0 still
 * forms u). GRAD is only read. The bits equal what the CPU exchange leaves
 * in its residual and sends (f32: u - u, so 0 but NaN for an infinite u). */
int dtrain_rt_cuda_residual_select_f32(const float *grad, float *residual,
                                       int64_t n, int64_t k, int32_t method,
                                       int32_t value_type, int32_t *indices,
                                       float *values, int64_t capacity,
                                       int64_t *count, void *workspace,
                                       size_t workspace_bytes, void *stream);

/* The dense choice of dtrain_rt_sparse_all_reduce_start
 * (DTRAIN_RT_SPARSE_DENSE) before its all-reduce:
 *   GRAD     = GRAD + RESIDUAL rounded to VALUE_TYPE (kept as f32)
 *   RESIDUAL = what the rounding dropped (DTRAIN_RT_F32: 0)
 * the bits of the CPU's (dtrain_rt_cpu_sparse_kernels' dense_residual).
 * Never waits for STREAM. Returns DTRAIN_RT_CUDA_INVALID_ARGUMENT for
 * another VALUE_TYPE, negative N or NULL buffers. */
int dtrain_rt_cuda_dense_residual_f32(float *grad, float *residual, int64_t n,
                                      int32_t value_type, void *stream);

/*===--- Sparse aggregation -----------------------------------------------===*/

/* Adds SETS sparse sets into DENSE[0..N): set s is the entries
 * OFFSETS[s] .. OFFSETS[s+1]-1 of INDICES and VALUES (device), OFFSETS a
 * host array of SETS + 1 non-decreasing values from 0 (e.g. the
 * displacements of an all-gatherv). Indices may repeat across sets and
 * within one. The sets are added one after another, in order, so an entry
 * of DENSE receives its contributions in set order: the result is
 * deterministic and equals the CPU's scatter-add in rank order bit for bit
 * when no set repeats an index (as selections never do); repeats within a
 * set are summed in an unspecified order. Indices outside [0, N) are
 * skipped (a caller's bug: nothing is written out of bounds). DENSE is not
 * cleared first. Returns DTRAIN_RT_CUDA_INVALID_ARGUMENT for negative N or
 * SETS, bad OFFSETS or NULL buffers. */
int dtrain_rt_cuda_scatter_add_f32(float *dense, int64_t n,
                                   const int32_t *indices, const float *values,
                                   const int64_t *offsets, int32_t sets,
                                   void *stream);

/*===--- 16-bit floats and overflow checks --------------------------------===*/

/* Converts N elements of SRC (type SRC_TYPE) to DST (type DST_TYPE): f32
 * to bf16 or f16 (to nearest even, overflowing to inf, NaN kept a NaN),
 * bf16 or f16 to f32 (exact), or the same type (a copy); the bits are
 * those of the CPU runtime's conversions (lib/Float16.h). SRC and DST do
 * not overlap. Returns DTRAIN_RT_CUDA_INVALID_ARGUMENT for other types,
 * negative N or NULL buffers. */
int dtrain_rt_cuda_convert(const void *src, int32_t src_type, void *dst,
                           int32_t dst_type, int64_t n, void *stream);

/* Sets *FLAG (a device int32) to 1 when any of the N elements of X (type
 * DTYPE: DTRAIN_RT_F32, _F16 or _BF16) is inf or NaN; never clears it, so
 * that one flag can gather the checks of several buffers (zero it before
 * the first). Never waits for STREAM. Returns
 * DTRAIN_RT_CUDA_INVALID_ARGUMENT for another DTYPE, negative N or NULL
 * buffers. */
int dtrain_rt_cuda_check_finite(const void *x, int32_t dtype, int64_t n,
                                int32_t *flag, void *stream);

/*===--- Heavy-op kernels on the GPU --------------------------------------===*
 *
 * The CPU kernels' ABI (the heavy-op kernels of dtrain_rt.h, f32) on
 * device-reachable memory: every tensor argument is managed memory (as a
 * --target=cuda trainer's buffers are) or device memory of the process's
 * GPU, never plain host memory. Each function takes exactly the arguments
 * of the CPU kernel of its name without "cuda_", and computes what that
 * computes, with the same semantics (transposes and BETA, a NULL bias,
 * groups, dilations, asymmetric padding, ceil mode, the pooling kinds, the
 * statistics and gradients of batch norm) up to f32 rounding: their sums
 * run in another order (but pooling's, in the CPU's). Matrix products run
 * on cuBLAS, convolution and batch norm on cuDNN, pooling and a
 * convolution's bias on kernels of this library; never on TF32 tensor
 * cores, unless the environment variable DTRAIN_CUDA_TF32 is 1 (read at
 * the first call; 0 or unset: f32 products): then f32 matrix products and
 * convolutions may take TF32's 10-bit mantissas (about 1e-3 relative), as
 * PyTorch's convolutions do by default. Another value aborts the call.
 *
 * They run on the process's GPU (as compiled trainers do; see below), on
 * the step stream (dtrain_rt_cuda_synchronize), and return without waiting
 * for their work: the caller reads the results on the host after
 * dtrain_rt_cuda_synchronize, and work it queues on the step stream (a
 * trainer's kernels) runs after them. Work that the caller queued on
 * other streams must be complete. The first call creates
 * the cuBLAS or cuDNN handle; each convolution geometry chooses its cuDNN
 * algorithms once and keeps them; one growing buffer of device memory
 * serves as workspace. Thread-safe (calls are serialized).
 *
 * Invalid arguments abort the job with the CPU kernel's message, naming
 * the CUDA function (e.g. "dtrain-rt: rank 0: dtrain_rt_cuda_conv2d_f32:
 * output is 6x7 but input 8x8, ... gives 6x6"), before the device is
 * touched. Any other failure (no driver or device, out of memory, a cuBLAS
 * or cuDNN error) prints "dtrain-rt: <function>: <what failed>" (or the
 * driver's line below) and exits with status 1.
 *===----------------------------------------------------------------------===*/

void dtrain_rt_cuda_matmul_f32(const float *a, const float *b, float *c,
                               int64_t m, int64_t n, int64_t k,
                               int32_t transpose_a, int32_t transpose_b,
                               float beta);
void dtrain_rt_cuda_batch_matmul_f32(const float *a, const float *b, float *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transpose_a,
                                     int32_t transpose_b, float beta);

void dtrain_rt_cuda_conv2d_f32(const float *x, const float *w,
                               const float *bias, float *y, int64_t n,
                               int64_t c, int64_t h, int64_t w_, int64_t oc,
                               int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                               int64_t stride_h, int64_t stride_w,
                               int64_t pad_top, int64_t pad_left,
                               int64_t pad_bottom, int64_t pad_right,
                               int64_t dilation_h, int64_t dilation_w,
                               int64_t groups);

void dtrain_rt_cuda_conv2d_backward_data_f32(
    const float *dy, const float *w, float *dx, int64_t n, int64_t c, int64_t h,
    int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
    int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,
    int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);

void dtrain_rt_cuda_conv2d_backward_weights_f32(
    const float *x, const float *dy, float *dw, float *db, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);

/* Max pooling takes a NaN in a window as its maximum (the first one, for
 * the gradient), as dtrain_rt_pool2d_backward_f32 says. */
void dtrain_rt_cuda_pool2d_f32(const float *x, float *y, int32_t kind,
                               int64_t n, int64_t c, int64_t h, int64_t w,
                               int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                               int64_t stride_h, int64_t stride_w,
                               int64_t pad_top, int64_t pad_left,
                               int64_t pad_bottom, int64_t pad_right,
                               int64_t dilation_h, int64_t dilation_w);

void dtrain_rt_cuda_pool2d_backward_f32(
    const float *x, const float *dy, float *dx, int32_t kind, int64_t n,
    int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
    int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w);

void dtrain_rt_cuda_batch_norm_f32(const float *x, const float *scale,
                                   const float *bias, const float *mean,
                                   const float *var, float *y, int64_t n,
                                   int64_t c, int64_t spatial, float epsilon);

void dtrain_rt_cuda_batch_norm_train_f32(const float *x, const float *scale,
                                         const float *bias, float *y,
                                         float *batch_mean, float *batch_var,
                                         int64_t n, int64_t c, int64_t spatial,
                                         float epsilon);

void dtrain_rt_cuda_batch_norm_backward_f32(
    const float *x, const float *dy, const float *scale,
    const float *batch_mean, const float *batch_var, float *dx, float *dscale,
    float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon);

/* Batch norm in training followed by a ReLU, and the gradient of both: Y =
 * max(batch norm of X, 0) (a NaN stays a NaN), and the gradients for DZ,
 * the gradient of the ReLU's output Z: DY = DZ where Z > 0, else 0. What
 * dtrain_rt_cuda_batch_norm_train_f32 and _backward_f32 compute with the
 * ReLU and its gradient around them, without the tensor between
 * (--dtrain-lower-nn{target=cuda} calls them for a ReLU that is a batch
 * norm's only user, and for a ReLU gradient that is its gradient's only
 * output gradient). */
void dtrain_rt_cuda_batch_norm_train_relu_f32(
    const float *x, const float *scale, const float *bias, float *y,
    float *batch_mean, float *batch_var, int64_t n, int64_t c, int64_t spatial,
    float epsilon);
void dtrain_rt_cuda_batch_norm_backward_relu_f32(
    const float *x, const float *dz, const float *z, const float *scale,
    const float *batch_mean, const float *batch_var, float *dx, float *dscale,
    float *dbias, int64_t n, int64_t c, int64_t spatial, float epsilon);
/* Batch norm in training, a residual added, and a ReLU: Y = max(the batch
 * norm of X + RESIDUAL (N x C x SPATIAL), 0), rounded as the ops it
 * replaces round (the batch norm's result, then the sum, to the element
 * type): what dtrain_rt_cuda_batch_norm_train_f32 computes with the add and
 * the ReLU after it (--dtrain-lower-nn{target=cuda} calls it for a batch
 * norm whose only user is such an add, with the ReLU its only user: a
 * residual block's end). Its gradient is the plain batch norm's, for the
 * ReLU's gradient. */
void dtrain_rt_cuda_batch_norm_train_add_relu_f32(
    const float *x, const float *residual, const float *scale,
    const float *bias, float *y, float *batch_mean, float *batch_var, int64_t n,
    int64_t c, int64_t spatial, float epsilon);

/* The gradient of an embedding lookup, as dtrain_rt_embedding_grad_f32
 * (the same arguments, wrap, clamp and checks; INDICES device-reachable
 * too): OUT zeroed (cudaMemsetAsync), then one thread per element of GRAD
 * adds it to its row with atomicAdd. The terms of a row that several
 * indices pick are therefore summed in an order that varies from run to
 * run, unlike the CPU's index order: such elements may differ in their last
 * bits between runs and from the CPU's. */
void dtrain_rt_cuda_embedding_grad_f32(const float *grad,
                                       const int64_t *indices, float *out,
                                       int64_t count, int64_t rows,
                                       int64_t width);

/* The matrix product, the convolutions and pooling on bf16 and f16
 * tensors (their raw 16-bit patterns): the same arguments, BETA still a
 * float. They compute what the f32 kernel computes on the tensors widened
 * to f32, each output element rounded once to the 16-bit type (to nearest
 * even), up to the order of the sums: the products, exact in f32, run on
 * tensor cores and are summed in f32. The forward convolution's bias is
 * added to the rounded convolution, in f32, and the sum rounded again.
 * Pooling sums in the f32 kernel's order: its results are that kernel's,
 * rounded (but average pooling's, whose f32 division may differ in its
 * last bit). Batch norm takes 16-bit data (X, Y, DY, DX) with f32 scale,
 * bias and statistics, all computed in f32, each data output rounded
 * once. A --target=cuda trainer calls them for its 16-bit tensors. */
void dtrain_rt_cuda_matmul_bf16(const uint16_t *a, const uint16_t *b,
                                uint16_t *c, int64_t m, int64_t n, int64_t k,
                                int32_t transpose_a, int32_t transpose_b,
                                float beta);
void dtrain_rt_cuda_matmul_f16(const uint16_t *a, const uint16_t *b,
                               uint16_t *c, int64_t m, int64_t n, int64_t k,
                               int32_t transpose_a, int32_t transpose_b,
                               float beta);
void dtrain_rt_cuda_batch_matmul_bf16(const uint16_t *a, const uint16_t *b,
                                      uint16_t *c, int64_t batch, int64_t m,
                                      int64_t n, int64_t k, int32_t transpose_a,
                                      int32_t transpose_b, float beta);
void dtrain_rt_cuda_batch_matmul_f16(const uint16_t *a, const uint16_t *b,
                                     uint16_t *c, int64_t batch, int64_t m,
                                     int64_t n, int64_t k, int32_t transpose_a,
                                     int32_t transpose_b, float beta);
void dtrain_rt_cuda_conv2d_bf16(
    const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_f16(
    const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_data_bf16(
    const uint16_t *dy, const uint16_t *w, uint16_t *dx, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_data_f16(
    const uint16_t *dy, const uint16_t *w, uint16_t *dx, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_weights_bf16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dw, uint16_t *db,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_weights_f16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dw, uint16_t *db,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);

/* The convolution kernels on channels-last tensors (nn.conv2d's
 * channels_last): X N x H x W x C, W OC x KH x KW x C/GROUPS (cuDNN's
 * KRSC), Y N x OH x OW x OC, with the arguments and checks of the NCHW
 * kernels; cuDNN's NHWC tensor-core kernels run on them without the
 * transposes that NCHW tensors take. Symmetric padding only (the padded
 * copies of the NCHW kernels are of NCHW planes). */
void dtrain_rt_cuda_conv2d_nhwc_f32(
    const float *x, const float *w, const float *bias, float *y, int64_t n,
    int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw,
    int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_data_nhwc_f32(
    const float *dy, const float *w, float *dx, int64_t n, int64_t c, int64_t h,
    int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
    int64_t stride_h, int64_t stride_w, int64_t pad_top, int64_t pad_left,
    int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_weights_nhwc_f32(
    const float *x, const float *dy, float *dw, float *db, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_nhwc_bf16(
    const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_data_nhwc_bf16(
    const uint16_t *dy, const uint16_t *w, uint16_t *dx, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_weights_nhwc_bf16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dw, uint16_t *db,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_nhwc_f16(
    const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_data_nhwc_f16(
    const uint16_t *dy, const uint16_t *w, uint16_t *dx, int64_t n, int64_t c,
    int64_t h, int64_t w_, int64_t oc, int64_t kh, int64_t kw, int64_t oh,
    int64_t ow, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_conv2d_backward_weights_nhwc_f16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dw, uint16_t *db,
    int64_t n, int64_t c, int64_t h, int64_t w_, int64_t oc, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w, int64_t groups);
void dtrain_rt_cuda_batch_norm_bf16(const uint16_t *x, const float *scale,
                                    const float *bias, const float *mean,
                                    const float *var, uint16_t *y, int64_t n,
                                    int64_t c, int64_t spatial, float epsilon);
void dtrain_rt_cuda_batch_norm_f16(const uint16_t *x, const float *scale,
                                   const float *bias, const float *mean,
                                   const float *var, uint16_t *y, int64_t n,
                                   int64_t c, int64_t spatial, float epsilon);
void dtrain_rt_cuda_batch_norm_train_bf16(const uint16_t *x, const float *scale,
                                          const float *bias, uint16_t *y,
                                          float *batch_mean, float *batch_var,
                                          int64_t n, int64_t c, int64_t spatial,
                                          float epsilon);
void dtrain_rt_cuda_batch_norm_train_f16(const uint16_t *x, const float *scale,
                                         const float *bias, uint16_t *y,
                                         float *batch_mean, float *batch_var,
                                         int64_t n, int64_t c, int64_t spatial,
                                         float epsilon);
void dtrain_rt_cuda_batch_norm_backward_bf16(
    const uint16_t *x, const uint16_t *dy, const float *scale,
    const float *batch_mean, const float *batch_var, uint16_t *dx,
    float *dscale, float *dbias, int64_t n, int64_t c, int64_t spatial,
    float epsilon);
void dtrain_rt_cuda_batch_norm_backward_f16(
    const uint16_t *x, const uint16_t *dy, const float *scale,
    const float *batch_mean, const float *batch_var, uint16_t *dx,
    float *dscale, float *dbias, int64_t n, int64_t c, int64_t spatial,
    float epsilon);
void dtrain_rt_cuda_batch_norm_train_relu_bf16(
    const uint16_t *x, const float *scale, const float *bias, uint16_t *y,
    float *batch_mean, float *batch_var, int64_t n, int64_t c, int64_t spatial,
    float epsilon);
void dtrain_rt_cuda_batch_norm_train_relu_f16(
    const uint16_t *x, const float *scale, const float *bias, uint16_t *y,
    float *batch_mean, float *batch_var, int64_t n, int64_t c, int64_t spatial,
    float epsilon);
void dtrain_rt_cuda_batch_norm_train_add_relu_bf16(
    const uint16_t *x, const uint16_t *residual, const float *scale,
    const float *bias, uint16_t *y, float *batch_mean, float *batch_var,
    int64_t n, int64_t c, int64_t spatial, float epsilon);
void dtrain_rt_cuda_batch_norm_train_add_relu_f16(
    const uint16_t *x, const uint16_t *residual, const float *scale,
    const float *bias, uint16_t *y, float *batch_mean, float *batch_var,
    int64_t n, int64_t c, int64_t spatial, float epsilon);
void dtrain_rt_cuda_batch_norm_backward_relu_bf16(
    const uint16_t *x, const uint16_t *dz, const uint16_t *z,
    const float *scale, const float *batch_mean, const float *batch_var,
    uint16_t *dx, float *dscale, float *dbias, int64_t n, int64_t c,
    int64_t spatial, float epsilon);
void dtrain_rt_cuda_batch_norm_backward_relu_f16(
    const uint16_t *x, const uint16_t *dz, const uint16_t *z,
    const float *scale, const float *batch_mean, const float *batch_var,
    uint16_t *dx, float *dscale, float *dbias, int64_t n, int64_t c,
    int64_t spatial, float epsilon);
void dtrain_rt_cuda_pool2d_bf16(const uint16_t *x, uint16_t *y, int32_t kind,
                                int64_t n, int64_t c, int64_t h, int64_t w,
                                int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                                int64_t stride_h, int64_t stride_w,
                                int64_t pad_top, int64_t pad_left,
                                int64_t pad_bottom, int64_t pad_right,
                                int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_f16(const uint16_t *x, uint16_t *y, int32_t kind,
                               int64_t n, int64_t c, int64_t h, int64_t w,
                               int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                               int64_t stride_h, int64_t stride_w,
                               int64_t pad_top, int64_t pad_left,
                               int64_t pad_bottom, int64_t pad_right,
                               int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_backward_bf16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dx, int32_t kind,
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_backward_f16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dx, int32_t kind,
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
    int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
    int64_t dilation_h, int64_t dilation_w);

/* Pooling and its gradient on channels-last tensors (nn.max_pool2d's and
 * nn.avg_pool2d's channels_last): X and DX N x H x W x C, Y and DY
 * N x OH x OW x C, with the arguments, checks and results of the NCHW
 * kernels of their element type, padding of any kind included; a window's
 * channels are read together. */
void dtrain_rt_cuda_pool2d_nhwc_f32(
    const float *x, float *y, int32_t kind, int64_t n, int64_t c, int64_t h,
    int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t stride_h,
    int64_t stride_w, int64_t pad_top, int64_t pad_left, int64_t pad_bottom,
    int64_t pad_right, int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_backward_nhwc_f32(
    const float *x, const float *dy, float *dx, int32_t kind, int64_t n,
    int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
    int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w);
void dtrain_rt_cuda_pool2d_nhwc_bf16(const uint16_t *x, uint16_t *y,
                                     int32_t kind, int64_t n, int64_t c,
                                     int64_t h, int64_t w, int64_t oh,
                                     int64_t ow, int64_t kh, int64_t kw,
                                     int64_t stride_h, int64_t stride_w,
                                     int64_t pad_top, int64_t pad_left,
                                     int64_t pad_bottom, int64_t pad_right,
                                     int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_backward_nhwc_bf16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dx, int32_t kind,
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w);
void dtrain_rt_cuda_pool2d_nhwc_f16(const uint16_t *x, uint16_t *y,
                                    int32_t kind, int64_t n, int64_t c,
                                    int64_t h, int64_t w, int64_t oh,
                                    int64_t ow, int64_t kh, int64_t kw,
                                    int64_t stride_h, int64_t stride_w,
                                    int64_t pad_top, int64_t pad_left,
                                    int64_t pad_bottom, int64_t pad_right,
                                    int64_t dilation_h, int64_t dilation_w);
void dtrain_rt_cuda_pool2d_backward_nhwc_f16(
    const uint16_t *x, const uint16_t *dy, uint16_t *dx, int32_t kind,
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_top,
    int64_t pad_left, int64_t pad_bottom, int64_t pad_right, int64_t dilation_h,
    int64_t dilation_w);

/*===--- Compiled trainers: the driver and managed memory -----------------===*

 *
 * A compiled trainer drives one GPU per process, through the CUDA driver
 * (libcuda.so.1), which the library loads on first use so that it links and
 * loads on machines without one: the device of the process's local rank
 * (OMPI_COMM_WORLD_LOCAL_RANK, else MPI_LOCALRANKID, else 0) modulo the
 * device count, in its primary context (which the kernels above share).
 * Without a driver or a device, the first call of a function below (or of
 * an mgpu* function) prints one line, e.g.
 *   "dtrain-rt: no CUDA driver (libcuda.so.1 not found): --target=cuda
 *    trainers need an NVIDIA GPU",
 * and exits with status 1.
 *
 * The trainers' buffers are managed memory (stage 1 of the GPU path:
 * correctness first). One pointer is valid on the host and the device, so
 * MPI, the heavy-op kernels and the generated kernels all work on the
 * same buffers, without copies to get right; the driver migrates the pages
 * to whichever side touches them. Device-resident buffers with explicit
 * copies come later, where they pay.
 *===----------------------------------------------------------------------===*/

/* Waits for the work queued on the step stream: the one stream of a
 * --target=cuda trainer's kernels (every stream that mgpuStreamCreate
 * returns) and of the heavy-op kernels above. Exits with a message when
 * any of that work failed (an error of a kernel queued earlier shows
 * here). */
void dtrain_rt_cuda_synchronize(void);

/* DTRAIN_RT_CUDA_SUCCESS when the driver is there and the process's device
 * is open, else DTRAIN_RT_CUDA_CUDA_ERROR, and dtrain_rt_cuda_error_message()
 * says why (what the functions below would print before exiting). Loads the
 * driver on the first call; never exits. */
int dtrain_rt_cuda_driver_status(void);

/* BYTES of managed memory (attached globally: any stream may use it),
 * 256-byte aligned; 0 bytes gets the smallest block. Blocks come from a
 * pool of size classes (at most a fifth of a block unused) that keeps freed
 * blocks for reuse; the driver is called only when no free block fits.
 * Exits with a message when the driver cannot allocate. Thread-safe. */
void *dtrain_rt_cuda_alloc_managed(size_t bytes);

/* Returns PTR, from dtrain_rt_cuda_alloc_managed, to the pool (NULL: no-op).
 * Work queued on the step stream may still use it, as in stream-ordered
 * allocation: the calling thread's later allocations may get the block at
 * once (so its work on it must be queued on the step stream too, or wait
 * for it, as a --target=cuda trainer's is), other threads' only once a
 * synchronization of that stream (dtrain_rt_cuda_synchronize, or a
 * trainer's waits) has seen that work done. Work on other streams must be
 * complete. Exits with a message for any other pointer, or one freed
 * twice. */
void dtrain_rt_cuda_free(void *ptr);

/* Starts migrating BYTES of managed memory at PTR to the process's GPU
 * (cuMemPrefetchAsync on a stream of its own) and returns without waiting:
 * kernels that read it meanwhile stay correct, managed memory being
 * coherent, and find it on the device once the migration is done. What a
 * --target=cuda trainer does with each batch (dtrain_rt_set_input_prefetch).
 * Exits with a message when the driver fails. */
void dtrain_rt_cuda_prefetch_to_device(void *ptr, size_t bytes);

/*===--- Compiled trainers (dtrain-compile --target=cuda) -----------------===*
 *
 * A --target=cuda trainer's main calls dtrain_rt_cuda_init_trainer first,
 * and its step allocates its temporaries through MLIR's generic allocation
 * functions (finalize-memref-to-llvm{use-generic-functions}), defined here:
 * every buffer the step, its kernels and the runtime touch is managed
 * memory of the rank's GPU.
 *===----------------------------------------------------------------------===*/

/* Has the trainer use the process's GPU (its local rank's, opened at the
 * first allocation or kernel lookup; exits with a message when there is no
 * driver or device, so --help and argument errors need no GPU): has
 * dtrain_rt_model_main and dtrain_rt_trainer_main allocate the model's
 * buffers with dtrain_rt_cuda_alloc_managed (dtrain_rt_set_buffer_allocator)
 * and prefetch each input they write to the GPU
 * (dtrain_rt_set_input_prefetch with dtrain_rt_cuda_prefetch_to_device),
 * has each collective wait for the step stream's work queued before it
 * (dtrain_rt_set_buffer_fence with dtrain_rt_cuda_step_stream_fence()),
 * and runs
 * the collectives over NCCL (dtrain_rt_set_transport with
 * dtrain_rt_cuda_nccl_transport()) unless the environment variable
 * DTRAIN_NCCL is 0 (then MPI, as the CPU runtime does; 1 or unset: NCCL;
 * any other value exits with a message), and runs the sparse exchanges'
 * kernels on the GPU (dtrain_rt_set_sparse_kernels with
 * dtrain_rt_cuda_sparse_kernels()) unless DTRAIN_CUDA_SELECT is 0 (then on
 * the CPU; 1 or unset: the GPU; any other value exits with a message).
 * With DTRAIN_CUDA_GRAPH=1, it has the mains call the compiled functions
 * through dtrain_rt_cuda_call_run (dtrain_rt_set_run_caller): steps
 * replayed as CUDA graphs (0 or unset: as compiled; any other value exits
 * with a message). */
void dtrain_rt_cuda_init_trainer(void);

/* Says whether the compiled run function RUN (a training step, an
 * evaluation step or a forward pass) may be replayed as a CUDA graph:
 * WHY_NOT is NULL where its host code does nothing but queue work on the
 * step stream (kernel launches, heavy ops, the pool's allocations) and
 * wait for it once, at its end, always the same work for the same
 * buffers; else it says why not (a collective, host code that reads or
 * writes the buffers), which DTRAIN_CUDA_GRAPH=1 prints once. ON_ONE_RANK
 * 1 says that what rules RUN out is only dense collectives, which leave
 * their buffers alone across one rank (dtrain_rt_set_buffer_fence): where
 * the world communicator has one rank, graphs may replay it all the same.
 * A --target=cuda trainer's main calls it for each of its run functions
 * (dtrain-compile's --dtrain-register-graph-steps). Exits with a message
 * when RUN is NULL. */
void dtrain_rt_cuda_set_graph_step(void (*run)(void **buffers),
                                   const char *why_not, int32_t on_one_rank);

/* A run caller (dtrain_rt_set_run_caller) that replays steps as CUDA
 * graphs: RUN(BUFFERS) as it is unless dtrain_rt_cuda_set_graph_step said
 * it may be captured; then its first call runs it as it is (which makes
 * what it makes once: kernel modules, cuDNN plans, pool blocks), and
 * later calls capture it from the step stream into a graph, once per
 * table of COUNT BUFFERS (a trainer's input buffers alternate; at most 4
 * tables are kept a function), launch the graph and wait for it. A
 * graph's temporaries are pool blocks of the graphs' own. A graph is
 * captured again when the heavy ops' scratch buffer that it uses grows.
 * When the driver cannot capture or instantiate the step, it says so on
 * stderr once, and the step runs as it is from then on. */
void dtrain_rt_cuda_call_run(void (*run)(void **buffers), void **buffers,
                             size_t count);

/* The sparse exchange's kernels (dtrain_rt.h, dtrain_rt_set_sparse_kernels)
 * on the process's GPU, for buffers in managed (or device) memory, as a
 * --target=cuda trainer's are: residual_select runs
 * dtrain_rt_cuda_residual_select_f32 on each segment, scatter_add
 * dtrain_rt_cuda_scatter_add_f32 (the runtime's host sets copied to the
 * device first), dense_residual dtrain_rt_cuda_dense_residual_f32; the
 * selected indices and values are copied back to the runtime's host
 * arrays. Each call enqueues its work on one non-blocking stream and waits
 * for it (the caller's work on the buffers must be complete, as a
 * --target=cuda trainer's wait for the step stream before each collective
 * leaves it). DGC and random-k,
 * which this library does not implement, run the CPU's kernels
 * (dtrain_rt_cpu_sparse_kernels) on the same buffers.
 * Results: the same bits as the CPU's table for exact top-k, the scatter
 * and the dense choice; Gaussian-k selects the same entries unless its
 * float threshold rounds differently (its sums run in another order, see
 * the selection above), in which case the entries at that threshold may
 * differ. A failure prints "dtrain-rt: <the CUDA function>: <why>" and
 * exits with status 1. */
const dtrain_rt_sparse_kernels_t *dtrain_rt_cuda_sparse_kernels(void);

/* The runtime's buffer fence (dtrain_rt.h, dtrain_rt_set_buffer_fence) on
 * the step stream: each collective records an event on it when submitted,
 * and the thread that runs the collective waits for that event before
 * touching its buffers, so that a --target=cuda trainer starts collectives
 * without waiting for the kernels that write their buffers. A failure
 * prints "dtrain-rt: <the driver call> failed: <why>" and exits with
 * status 1. */
const dtrain_rt_buffer_fence_t *dtrain_rt_cuda_step_stream_fence(void);

/* The runtime's transport (dtrain_rt.h, dtrain_rt_set_transport) over
 * NCCL, one GPU per rank (the device above). Its first call loads
 * libnccl.so.2 (or prints why it cannot and exits) and makes the NCCL
 * communicator of the world's ranks: rank 0's ncclGetUniqueId goes to
 * every rank by dtrain_rt_mpi_transport()'s broadcast (so MPI must be up,
 * as it is when a collective makes that call), then ncclCommInitRank. Each
 * call enqueues its NCCL operations on one non-blocking stream and waits
 * for it. Buffers in device or managed memory are used as they are; host
 * buffers (which cuPointerGetAttributes knows as neither) are copied
 * through a device staging buffer. NCCL wants a device for each rank: when
 * ranks share one (a node with fewer devices than ranks), the first call
 * finds it out on every rank, rank 0 prints a note, and every call goes to
 * the MPI transport instead. Serves one communicator,
 * dtrain_rt_comm_world(). A failed NCCL call prints "dtrain-rt: NCCL
 * <call> failed: <ncclGetErrorString>" and exits with status 1. MAX with a
 * NaN input follows NCCL. */
const dtrain_rt_transport_t *dtrain_rt_cuda_nccl_transport(void);

/* The generic allocation functions of MLIR's memref lowering, over
 * dtrain_rt_cuda_alloc_managed and dtrain_rt_cuda_free. ALIGNMENT up to
 * 256 bytes (the pool's); more exits with a message. */
void *_mlir_memref_to_llvm_alloc(size_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* DTRAIN_RT_CUDA_H */
