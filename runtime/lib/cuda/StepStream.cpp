//===- StepStream.cpp - the stream of a trainer's step --------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"
#include "cuda/StepStream.h"

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

#include <atomic>
#include <mutex>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {
/// Synchronizations started, and the mark after the last that completed.
std::atomic<uint64_t> started{0};
std::atomic<uint64_t> doneBefore{0};
/// Whether this thread is capturing the step stream into a graph.
thread_local bool capturing = false;
/// Bumped by invalidateStepGraphs.
std::atomic<uint64_t> graphEpoch{0};
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
  if (capturing)
    fatal("the step stream was to be waited for while a step was being "
          "captured as a CUDA graph (DTRAIN_CUDA_GRAPH=1), which its first "
          "run without a graph should have made unnecessary; "
          "DTRAIN_CUDA_GRAPH=0 runs the steps without graphs");
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

bool dtrain::rt::gpu::capturingStepStream() { return capturing; }

void dtrain::rt::gpu::setCapturingStepStream(bool value) { capturing = value; }

uint64_t dtrain::rt::gpu::stepGraphEpoch() { return graphEpoch.load(); }

void dtrain::rt::gpu::invalidateStepGraphs() { graphEpoch.fetch_add(1); }

uint64_t dtrain::rt::gpu::stepStreamMark() { return started.load(); }

uint64_t dtrain::rt::gpu::stepStreamDoneBefore() { return doneBefore.load(); }

void dtrain_rt_cuda_synchronize(void) {
  const HostTimer timer(__func__);
  synchronizeStepStream();
}

namespace {
/// Events for fences, reused: one per collective in flight at most.
struct EventPool {
  std::mutex mutex;
  std::vector<CUevent> free;
};

EventPool &eventPool() {
  // Never destroyed: the driver may shut down before static destructors.
  static EventPool *const pool = new EventPool;
  return *pool;
}

/// An event recorded on the step stream after the work queued so far.
void *recordFence(void *) {
  const HostTimer timer("buffer fence: record (a collective's start)");
  CUevent event = nullptr;
  {
    EventPool &pool = eventPool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.free.empty()) {
      event = pool.free.back();
      pool.free.pop_back();
    }
  }
  if (!event)
    DTRAIN_CU_CHECK(cuda().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate for a collective's buffer fence");
  DTRAIN_CU_CHECK(cuda().cuEventRecord(event, stepStream()),
                  "cuEventRecord of a collective's buffer fence");
  return event;
}

/// Waits for the work before FENCE's event (a kernel's failure among it
/// shows here), and returns the event to the pool.
void waitFence(void *, void *fence) {
  const HostTimer timer("buffer fence: wait (the communication thread)");
  CUevent event = static_cast<CUevent>(fence);
  DTRAIN_CU_CHECK(cuda().cuEventSynchronize(event),
                  "cuEventSynchronize of a collective's buffer fence (a "
                  "kernel or heavy op queued on the step stream before it)");
  EventPool &pool = eventPool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(event);
}
} // namespace

const dtrain_rt_buffer_fence_t *dtrain_rt_cuda_step_stream_fence(void) {
  static const dtrain_rt_buffer_fence_t fence = {nullptr, recordFence,
                                                 waitFence};
  return &fence;
}
