//===- ParallelFor.cpp - parallel loops of generated code -----------------===//
//
// dtrain_rt_parallel_for: the loop nests that dtrain-compile generates for
// the CPU run their chunks in GOMP_parallel, the entry point of the libgomp
// ABI (GCC's OpenMP runtime), which oneDNN's kernels run on too: one pool of
// threads serves both, and the threads that a kernel has just woken are
// still spinning when the next loop starts. clang's -fopenmp targets LLVM's
// libomp instead, so the calls are declared here. Also the number of
// threads the process computes on, which the node's ranks share.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <sched.h>

extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned numThreads,
                   unsigned flags);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_in_parallel(void);
void omp_set_num_threads(int threads);
}

namespace {

/// The ranks of the job on this node (setNodeRanks); 0 before MPI is
/// initialized, or without it.
std::atomic<int> nodeRanks{0};

/// OMP_NUM_THREADS when it is a positive number, else 0.
int getThreadsFromEnvironment() {
  const char *value = std::getenv("OMP_NUM_THREADS");
  const int threads = value ? std::atoi(value) : 0;
  return std::max(threads, 0);
}

/// The ranks of this node: those MPI counted, else those the launcher
/// says it started (Open MPI, then MPICH and Intel MPI), else 1. A
/// `--mode=step` or `--mode=infer` program run under mpirun does not
/// initialize MPI.
int getNodeRanks() {
  if (int ranks = nodeRanks.load())
    return ranks;
  for (const char *variable : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *value = std::getenv(variable))
      if (int ranks = std::atoi(value); ranks > 0)
        return ranks;
  return 1;
}

/// Where the node's ranks share its CPUs, the kernels' OpenMP runtime
/// takes this process's share from the start (the library's constructor
/// runs before main, on the thread that calls the kernels).
struct ShareOfNodeAtLoad {
  ShareOfNodeAtLoad() {
    if (getThreadsFromEnvironment() == 0 && getNodeRanks() > 1)
      omp_set_num_threads(dtrain::rt::computeThreads());
  }
} shareOfNodeAtLoad;

/// The fewest operations worth a chunk of its own: below this, waking a
/// thread costs about as much as the chunk's work.
constexpr int64_t kMinChunkCost = 32768;

struct ParallelLoop {
  void (*body)(void *, int64_t, int64_t);
  void *context;
  int64_t count;
  int64_t chunks;
};

/// The chunks of the calling thread of the team: all of them, one after
/// another, where the team is smaller than asked for (OMP_THREAD_LIMIT).
void runChunks(void *data) {
  const auto &loop = *static_cast<const ParallelLoop *>(data);
  const int64_t threads = omp_get_num_threads();
  for (int64_t chunk = omp_get_thread_num(); chunk < loop.chunks;
       chunk += threads)
    loop.body(loop.context, loop.count * chunk / loop.chunks,
              loop.count * (chunk + 1) / loop.chunks);
}

/// The chunks for COUNT iterations of COST operations each on THREADS.
int64_t getChunkCount(int64_t count, int64_t cost, int64_t threads) {
  cost = std::max<int64_t>(cost, 1);
  const int64_t work = cost > std::numeric_limits<int64_t>::max() / count
                           ? std::numeric_limits<int64_t>::max()
                           : count * cost;
  return std::min({threads, count, std::max<int64_t>(work / kMinChunkCost, 1)});
}

} // namespace

int dtrain::rt::computeThreads() {
  if (int threads = getThreadsFromEnvironment())
    return threads;
  const int node = std::max(1, int(std::thread::hardware_concurrency()));
  cpu_set_t mask;
  const int mine =
      sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : node;
  return std::max(1, std::min(mine, node / getNodeRanks()));
}

int dtrain::rt::setNodeRanks(int ranks) {
  const int previous = nodeRanks.exchange(std::max(ranks, 0));
  if (getThreadsFromEnvironment() == 0)
    omp_set_num_threads(computeThreads());
  return previous;
}

void dtrain_rt_parallel_for(void (*body)(void *, int64_t, int64_t),
                            void *context, int64_t count,
                            int64_t cost_per_iteration) {
  if (count <= 0)
    return;
  // Known once the runtime is initialized, where the generated code runs.
  static const int threads = dtrain::rt::computeThreads();
  const int64_t chunks = getChunkCount(count, cost_per_iteration, threads);
  if (chunks <= 1 || omp_in_parallel()) {
    body(context, 0, count);
    return;
  }
  ParallelLoop loop{body, context, count, chunks};
  GOMP_parallel(runChunks, &loop, static_cast<unsigned>(chunks), 0);
}
