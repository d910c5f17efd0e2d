//===- ParallelForTest.cpp - dtrain_rt_parallel_for -----------------------===//
//
// The chunks that dtrain_rt_parallel_for runs cover each iteration exactly
// once, as contiguous ranges; large loops take every compute thread
// (OMP_NUM_THREADS=3 is set by ctest, so that the check means something on
// a machine of any size), small ones and nested calls run on the calling
// thread, and an empty loop runs nothing.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace {

/// What the chunks of one call did: each iteration's visits, and the
/// chunks with the thread each ran on.
struct Visits {
  explicit Visits(int64_t count) : counts(size_t(count)) {}
  std::vector<std::atomic<int>> counts;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
};

void visit(void *context, int64_t begin, int64_t end) {
  auto &visits = *static_cast<Visits *>(context);
  for (int64_t i = begin; i < end; ++i)
    ++visits.counts[size_t(i)];
  std::lock_guard<std::mutex> lock(visits.mutex);
  visits.chunks.emplace_back(begin, end);
  visits.threads.push_back(std::this_thread::get_id());
}

/// Runs a loop of COUNT iterations of COST operations; checks that each
/// iteration ran once and that the chunks tile [0, COUNT).
Visits *runLoop(int64_t count, int64_t cost) {
  auto *visits = new Visits(count);
  dtrain_rt_parallel_for(visit, visits, count, cost);
  for (int64_t i = 0; i < count; ++i)
    EXPECT_EQ(visits->counts[size_t(i)], 1) << "iteration " << i;
  std::sort(visits->chunks.begin(), visits->chunks.end());
  int64_t next = 0;
  for (auto [begin, end] : visits->chunks) {
    EXPECT_EQ(begin, next);
    EXPECT_LT(begin, end);
    next = end;
  }
  EXPECT_EQ(next, count);
  return visits;
}

TEST(ParallelFor, LargeLoopTakesEveryThread) {
  const int threads = dtrain::rt::computeThreads();
  std::unique_ptr<Visits> visits(runLoop(1000, 1000));
  EXPECT_EQ(int(visits->chunks.size()), threads);
  std::vector<std::thread::id> distinct = visits->threads;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_EQ(int(distinct.size()), threads);
}

TEST(ParallelFor, ChunksAreNoMoreThanIterations) {
  std::unique_ptr<Visits> visits(runLoop(2, int64_t(1) << 40));
  EXPECT_EQ(visits->chunks.size(),
            std::min<size_t>(2, dtrain::rt::computeThreads()));
}

TEST(ParallelFor, UnevenCountsCoverEveryIteration) {
  for (int64_t count : {1, 3, 7, 97, 1001})
    std::unique_ptr<Visits>(runLoop(count, 1 << 20));
}

TEST(ParallelFor, ChunksHaveEnoughWork) {
  // 100 x 500 operations: one chunk of 32768 at most, on this thread.
  std::unique_ptr<Visits> visits(runLoop(100, 500));
  ASSERT_EQ(visits->chunks.size(), 1u);
  EXPECT_EQ(visits->threads[0], std::this_thread::get_id());
  // 150 x 500: two chunks, where there are two threads.
  visits.reset(runLoop(150, 500));
  EXPECT_EQ(int(visits->chunks.size()),
            std::min(2, dtrain::rt::computeThreads()));
  // A cost of 0 or less counts as 1 an iteration.
  visits.reset(runLoop(5, 0));
  EXPECT_EQ(visits->chunks.size(), 1u);
  visits.reset(runLoop(5, -7));
  EXPECT_EQ(visits->chunks.size(), 1u);
}

TEST(ParallelFor, EmptyLoopRunsNothing) {
  Visits visits(0);
  dtrain_rt_parallel_for(visit, &visits, 0, 1 << 20);
  dtrain_rt_parallel_for(visit, &visits, -5, 1 << 20);
  EXPECT_TRUE(visits.chunks.empty());
}

/// A chunk that runs a loop of its own, which must stay on its thread.
void nestedLoop(void *context, int64_t begin, int64_t end) {
  auto &inner = *static_cast<std::vector<Visits *> *>(context);
  for (int64_t i = begin; i < end; ++i) {
    Visits &visits = *inner[size_t(i)];
    dtrain_rt_parallel_for(visit, &visits, 64, 1 << 20);
    ASSERT_EQ(visits.chunks.size(), 1u);
    EXPECT_EQ(visits.threads[0], std::this_thread::get_id());
  }
}

TEST(ParallelFor, NestedLoopsRunOnTheirChunksThread) {
  std::vector<std::unique_ptr<Visits>> owned;
  std::vector<Visits *> inner;
  for (int i = 0; i < 8; ++i) {
    owned.push_back(std::make_unique<Visits>(64));
    inner.push_back(owned.back().get());
  }
  dtrain_rt_parallel_for(nestedLoop, &inner, 8, 1 << 20);
  for (Visits *visits : inner)
    for (auto &count : visits->counts)
      EXPECT_EQ(count, 1);
}

} // namespace
