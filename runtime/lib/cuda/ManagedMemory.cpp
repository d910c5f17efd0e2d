//===- ManagedMemory.cpp - managed memory of compiled trainers ------------===//
//
// dtrain_rt_cuda_alloc_managed and dtrain_rt_cuda_free: CUDA managed memory
// (cuMemAllocManaged, attached globally) behind a pool of free blocks in
// size classes, so that a training step's allocations do not go to the
// driver once the first step has made its blocks. A trainer frees buffers
// that kernels queued on the step stream may still use: the thread that
// released a block may have it again at once (its later work on it is
// queued after those kernels, or waits for them, as a trainer's does);
// other threads get it once a synchronization of the stream has seen
// them done. The pool never holds more than the device has (less a
// reserve): managed memory beyond it would be paged between host and
// device on every step, which thrashes, and on some machines hangs the
// GPU; an allocation past that limit is a clear "out of GPU memory".
// The blocks of steps captured as CUDA graphs (StepGraphs.cpp) are the
// graphs' own: every replay writes them, so they serve captures alone.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"
#include "cuda/StepStream.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {

/// The smallest block, and the alignment of every block (the driver aligns
/// its allocations to at least 256 bytes).
constexpr size_t kMinBlock = 256;

/// More than any device has: a size beyond is a caller's bug, reported
/// before the size-class arithmetic could overflow.
constexpr size_t kMaxBlock = size_t(1) << 48;

/// The size of the blocks that serve requests of BYTES: four classes per
/// power of two (1.25, 1.5, 1.75 and 2 times it), so that at most a fifth
/// of a block goes unused.
size_t blockSize(size_t bytes) {
  if (bytes <= kMinBlock)
    return kMinBlock;
  // 2^log < bytes <= 2^(log + 1), log >= 8.
  const int log = 63 - __builtin_clzll(bytes - 1);
  const size_t step = size_t(1) << (log - 2);
  return (bytes + step - 1) & ~(step - 1);
}

/// Managed blocks, live or free. Blocks go back to the driver only when an
/// allocation finds it out of memory.
class ManagedPool {
public:
  void *allocate(size_t bytes) {
    if (bytes > kMaxBlock)
      fatal("dtrain_rt_cuda_alloc_managed: %zu bytes is more than any "
            "device has",
            bytes);
    const size_t size = blockSize(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    const bool forGraph = capturingStepStream();
    if (forGraph) {
      std::vector<void *> &blocks = graphFreeBlocks[size];
      if (!blocks.empty()) {
        void *block = blocks.back();
        blocks.pop_back();
        liveBlocks.emplace(block, size);
        return block;
      }
    }
    std::vector<void *> &blocks = freeBlocks[size];
    if (blocks.empty())
      reclaim(releasedBlocks[size], blocks);
    void *block = nullptr;
    if (!blocks.empty()) {
      block = blocks.back();
      blocks.pop_back();
    } else if (!(block = takeOwnRelease(releasedBlocks[size]))) {
      block = allocateBlock(size);
    }
    liveBlocks.emplace(block, size);
    if (forGraph)
      graphBlocks.insert(block);
    return block;
  }

  void release(void *block) {
    if (!block)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    auto live = liveBlocks.find(block);
    if (live == liveBlocks.end())
      fatal("dtrain_rt_cuda_free: %p was not allocated by "
            "dtrain_rt_cuda_alloc_managed, or was freed already",
            block);
    // A graph's block is free for the next capture at once: graphs run
    // one after another on the step stream.
    if (graphBlocks.count(block))
      graphFreeBlocks[live->second].push_back(block);
    else
      releasedBlocks[live->second].push_back(
          {block, stepStreamMark(), std::this_thread::get_id()});
    liveBlocks.erase(live);
  }

private:
  /// A block released at a mark of the step stream (StepStream.h).
  struct Released {
    void *block;
    uint64_t mark;
    std::thread::id thread; // the releasing thread
  };

  /// The block of RELEASED that the calling thread released last, taken
  /// out of it; null when there is none.
  static void *takeOwnRelease(std::deque<Released> &released) {
    const std::thread::id self = std::this_thread::get_id();
    for (auto it = released.rbegin(); it != released.rend(); ++it) {
      if (it->thread != self)
        continue;
      void *block = it->block;
      released.erase(std::next(it).base());
      return block;
    }
    return nullptr;
  }

  /// Moves the blocks of RELEASED whose step-stream work is done to FREE.
  static void reclaim(std::deque<Released> &released,
                      std::vector<void *> &free) {
    const uint64_t doneBefore = stepStreamDoneBefore();
    while (!released.empty() && released.front().mark < doneBefore) {
      free.push_back(released.front().block);
      released.pop_front();
    }
  }

  /// The most bytes of blocks the pool holds: the device's free memory
  /// when the pool first grows, less a reserve (a sixteenth of the
  /// device's memory, at least 1 GiB) for cuBLAS's and cuDNN's
  /// workspaces, NCCL and the driver. Free rather than total memory:
  /// ranks that share the device, or other processes, hold some, and
  /// managed memory past what the device has free would be paged, which
  /// can hang the GPU.
  static size_t capacity() {
    static const size_t bytes = [] {
      cuda(); // the context that cuMemGetInfo asks about
      size_t free = 0, total = 0;
      DTRAIN_CU(cuMemGetInfo, &free, &total);
      const size_t reserve = std::max(total / 16, size_t(1) << 30);
      return free > reserve ? free - reserve : 0;
    }();
    return bytes;
  }

  /// A new block of SIZE bytes from the driver; when the pool would hold
  /// more than its capacity, or the driver is out of memory, the free
  /// blocks go back to it first.
  void *allocateBlock(size_t size) {
    const Driver &driver = cuda();
    if (heldBytes + size > capacity())
      releaseFreeBlocks();
    if (heldBytes + size > capacity())
      fatal("out of GPU memory: %zu more bytes of buffers would make %.2f "
            "GiB, more than the %.2f GiB that the device leaves them (a "
            "smaller batch needs less)",
            size, double(heldBytes + size) / double(1 << 30),
            double(capacity()) / double(1 << 30));
    CUdeviceptr block = 0;
    CUresult rc = driver.cuMemAllocManaged(&block, size, CU_MEM_ATTACH_GLOBAL);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY && releaseFreeBlocks())
      rc = driver.cuMemAllocManaged(&block, size, CU_MEM_ATTACH_GLOBAL);
    DTRAIN_CU_CHECK(rc,
                    "dtrain_rt_cuda_alloc_managed: cuMemAllocManaged of "
                    "%zu bytes",
                    size);
    heldBytes += size;
    return reinterpret_cast<void *>(block);
  }

  /// Frees every free block, and every released one once the step stream
  /// is done with it; returns whether there was one. Graphs keep theirs.
  /// During a capture the stream runs nothing: the step before it waited.
  bool releaseFreeBlocks() {
    if (!capturingStepStream())
      synchronizeStepStream();
    for (auto &[size, blocks] : releasedBlocks)
      reclaim(blocks, freeBlocks[size]);
    bool released = false;
    for (auto &[size, blocks] : freeBlocks) {
      for (void *block : blocks)
        DTRAIN_CU(cuMemFree, reinterpret_cast<CUdeviceptr>(block));
      heldBytes -= size * blocks.size();
      released |= !blocks.empty();
      blocks.clear();
    }
    return released;
  }

  std::mutex mutex;
  /// The bytes of every block the pool has from the driver.
  size_t heldBytes = 0;
  /// The free blocks by size.
  std::unordered_map<size_t, std::vector<void *>> freeBlocks;
  /// The released blocks by size, in the order of release (of their marks),
  /// until the step stream is done with them.
  std::unordered_map<size_t, std::deque<Released>> releasedBlocks;
  /// The size of each live block.
  std::unordered_map<void *, size_t> liveBlocks;
  /// The blocks that captured steps use, and those of them free.
  std::unordered_set<void *> graphBlocks;
  std::unordered_map<size_t, std::vector<void *>> graphFreeBlocks;
};

ManagedPool &pool() {
  // Never destroyed: at exit the driver reclaims the memory, and it may
  // have shut down before static destructors run.
  static ManagedPool *const instance = new ManagedPool;
  return *instance;
}

} // namespace

void *dtrain_rt_cuda_alloc_managed(size_t bytes) {
  const HostTimer timer(__func__);
  return pool().allocate(bytes);
}

void dtrain_rt_cuda_free(void *ptr) {
  const HostTimer timer(__func__);
  pool().release(ptr);
}

void dtrain_rt_cuda_prefetch_to_device(void *ptr, size_t bytes) {
  const HostTimer timer(__func__);
  const Driver &driver = cuda();
  // One stream for every prefetch, made on the first: the batches of a
  // trainer come one at a time from its main thread.
  static CUstream stream = [&] {
    CUstream made = nullptr;
    DTRAIN_CU_CHECK(driver.cuStreamCreate(&made, CU_STREAM_NON_BLOCKING),
                    "cuStreamCreate for prefetches");
    return made;
  }();
  CUmemLocation device = {};
  device.type = CU_MEM_LOCATION_TYPE_DEVICE;
  device.id = driver.ordinal;
  DTRAIN_CU_CHECK(driver.cuMemPrefetchAsync(reinterpret_cast<CUdeviceptr>(ptr),
                                            bytes, device, 0, stream),
                  "cuMemPrefetchAsync of %zu bytes to device %d", bytes,
                  driver.ordinal);
}
