//===- StepStream.cpp - the stream of a trainer's step --------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/StepStream.h"

#include <atomic>

using namespace dtrain::rt::gpu;

namespace {
/// Synchronizations started, and the mark after the last that completed.
std::atomic<uint64_t> started{0};
std::atomic<uint64_t> doneBefore{0};
} // namespace

CUstream dtrain::rt::gpu::stepStream() {
  static const CUstream stream = [] {
    CUstream made = nullptr;
    // Non-blocking: the legacy default stream (a cudaMemcpy of the
    // caller's) neither waits for it nor makes it wait.
    DTRAIN_CU_CHECK(cuda().cuStreamCreate(&made, CU_STREAM_NON_BLOCKING),
                    "cuStreamCreate of the step stream");
    return made;
  }();
  return stream;
}

void dtrain::rt::gpu::synchronizeStepStream() {
  // Blocks released before this point carry a mark below MARK + 1: the
  // synchronization sees their work.
  const uint64_t mark = started.fetch_add(1) + 1;
  DTRAIN_CU_CHECK(cuda().cuStreamSynchronize(stepStream()),
                  "cuStreamSynchronize of the step stream (or a kernel or "
                  "heavy op queued on it earlier)");
  uint64_t done = doneBefore.load();
  while (done < mark && !doneBefore.compare_exchange_weak(done, mark)) {
  }
}

uint64_t dtrain::rt::gpu::stepStreamMark() { return started.load(); }

uint64_t dtrain::rt::gpu::stepStreamDoneBefore() { return doneBefore.load(); }

void dtrain_rt_cuda_synchronize(void) { synchronizeStepStream(); }
