//===- StepStream.h - the stream of a trainer's step ------------*- C++ -*-===//
//
// One stream orders a --target=cuda trainer's device work: its kernel
// launches (every stream mgpuStreamCreate returns is this one) and the
// heavy-op kernels (HeavyOps.h) are queued on it without waiting, and the
// host waits for it only where its own code needs their results (see
// --dtrain-chain-gpu-launches). Blocks freed meanwhile serve the freeing
// thread's later allocations at once, and other threads' once a
// synchronization has seen the work queued before their release
// (ManagedMemory.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_STEPSTREAM_H
#define DTRAIN_RUNTIME_CUDA_STEPSTREAM_H

#include <cuda.h>

#include <cstdint>

namespace dtrain::rt::gpu {

/// The step stream: non-blocking, made in the device's primary context on
/// first use, never destroyed.
CUstream stepStream();

/// Waits for the work queued on the step stream; exits with a message when
/// any of it failed (an asynchronous error of a kernel queued earlier).
void synchronizeStepStream();

/// A mark of the queue's position: the number of synchronizations started
/// so far. Work queued before the mark is done once stepStreamDoneBefore
/// exceeds it.
uint64_t stepStreamMark();
/// The marks whose work is done are those below this: one more than the
/// mark of the last synchronization that completed.
uint64_t stepStreamDoneBefore();

/// Whether the calling thread is capturing the step stream's work into a
/// CUDA graph (StepGraphs.cpp): work queued meanwhile is recorded, not
/// run, so the host may not wait for it (synchronizeStepStream exits), and
/// the step's own final wait is the graph's launch.
bool capturingStepStream();
/// Starts or ends the calling thread's capture (StepGraphs.cpp alone).
void setCapturingStepStream(bool capturing);

/// Graphs captured before the last invalidateStepGraphs() must not run
/// (StepGraphs.cpp recaptures them): something they use was freed, such as
/// the heavy ops' scratch buffer when it grows.
uint64_t stepGraphEpoch();
void invalidateStepGraphs();

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_STEPSTREAM_H
