//===- Parallel.h - the runtime's own parallel passes -----------*- C++ -*-===//
//
// Passes of the runtime's own loops (selection, pooling gradients) over
// contiguous chunks, one std::thread each: the runtime's OpenMP is
// oneDNN's libgomp, which clang's -fopenmp does not target.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_PARALLEL_H
#define DTRAIN_RUNTIME_PARALLEL_H

#include "Internal.h"

#include <cstdint>
#include <thread>
#include <vector>

namespace dtrain::rt {

/// Threads for a pass over N elements: computeThreads(), and one below
/// 256K elements, where starting threads costs more.
inline int passThreads(int64_t n) {
  if (n < (int64_t(1) << 18))
    return 1;
  return computeThreads();
}

/// FN(chunk, begin, end) over CHUNKS contiguous chunks of [0, N), each on a
/// thread of its own (on the calling thread when there is one chunk).
template <class Fn> void forEachChunk(int64_t n, int chunks, Fn fn) {
  if (chunks <= 1) {
    fn(0, int64_t(0), n);
    return;
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < chunks; ++t)
    workers.emplace_back(
        [&, t] { fn(t, n * t / chunks, n * (t + 1) / chunks); });
  for (std::thread &worker : workers)
    worker.join();
}

/// FN(begin, end) -> T over contiguous chunks of [0, N), on passThreads(N)
/// threads; the chunks' results in chunk order.
template <class T, class Fn> std::vector<T> forChunks(int64_t n, Fn fn) {
  const int threads = passThreads(n);
  std::vector<T> results(static_cast<size_t>(threads));
  forEachChunk(n, threads, [&](int chunk, int64_t begin, int64_t end) {
    results[size_t(chunk)] = fn(begin, end);
  });
  return results;
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_PARALLEL_H
