//===- StepGraphsTest.cpp - when steps are replayed as CUDA graphs --------===//
//
// The policy of dtrain_rt_cuda_call_run (lib/cuda/StepGraphs.h) on the CPU,
// with a stand-in for the CUDA driver's graphs: a "graph" is the run
// function and its buffer table, and a launch runs it, so every step's
// work is done whichever way it runs, and the stand-in counts the captures,
// launches and destructions that the driver would see. What a graph does
// on a GPU is dtrain-rt-cuda-host-test's StepGraphs tests.
//
//===----------------------------------------------------------------------===//

#include "cuda/StepGraphs.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {

/// A step: adds 1 to buffers[0][0] and counts its runs (as it is, and
/// while being captured: its host code).
int hostRuns = 0;
void step(void **buffers) {
  ++hostRuns;
  ++*static_cast<int *>(buffers[0]);
}
void otherStep(void **buffers) { step(buffers); }

class StandInDriver final : public GraphDriver {
public:
  struct Graph {
    RunFn run;
    std::vector<void *> buffers;
  };

  void *capture(RunFn run, void **buffers, std::string *whyNot) override {
    ++captures;
    // The host code runs during a capture; its work does not.
    const int before = *static_cast<int *>(buffers[0]);
    run(buffers);
    *static_cast<int *>(buffers[0]) = before;
    if (!failWith.empty()) {
      *whyNot = failWith;
      return nullptr;
    }
    graphs.push_back(std::make_unique<Graph>(
        Graph{run, std::vector<void *>(buffers, buffers + 1)}));
    ++live;
    return graphs.back().get();
  }
  void launch(void *graph) override {
    ++launches;
    auto *g = static_cast<Graph *>(graph);
    // The graph's work: the step's, without its host code.
    ++*static_cast<int *>(g->buffers[0]);
  }
  void destroy(void *) override {
    ++destroyed;
    --live;
  }
  uint64_t epoch() override { return currentEpoch; }
  int32_t worldSize() override { return ranks; }

  int captures = 0, launches = 0, destroyed = 0, live = 0, ranks = 1;
  uint64_t currentEpoch = 0;
  std::string failWith;
  std::vector<std::unique_ptr<Graph>> graphs;
};

struct Fixture : ::testing::Test {
  void SetUp() override { hostRuns = 0; }
  /// Calls RUN through GRAPHS with a table whose first buffer is COUNTER.
  void call(StepGraphs &graphs, RunFn run, int &counter) {
    void *table[] = {&counter, nullptr};
    graphs.callRun(run, table, 2);
  }
  /// What TIMES calls print on stderr.
  std::string callsSaying(StepGraphs &graphs, RunFn run, int &counter,
                          int times) {
    ::testing::internal::CaptureStderr();
    for (int i = 0; i < times; ++i)
      call(graphs, run, counter);
    return ::testing::internal::GetCapturedStderr();
  }
  StandInDriver driver;
};

using StepGraphsPolicy = Fixture;

// An unregistered function runs as it is.
TEST_F(StepGraphsPolicy, UnregisteredRunsAsItIs) {
  StepGraphs graphs(driver);
  int counter = 0;
  for (int i = 0; i < 3; ++i)
    call(graphs, step, counter);
  EXPECT_EQ(counter, 3);
  EXPECT_EQ(hostRuns, 3);
  EXPECT_EQ(driver.captures, 0);
}

// The first run as it is, the second captured and launched, the rest
// launched; another table is captured once too.
TEST_F(StepGraphsPolicy, FirstAsItIsThenCapturedOncePerTable) {
  StepGraphs graphs(driver);
  graphs.setStep(step, nullptr, false);
  int first = 0, second = 0;
  for (int i = 0; i < 4; ++i)
    call(graphs, step, first);
  EXPECT_EQ(first, 4);
  EXPECT_EQ(driver.captures, 1);
  EXPECT_EQ(driver.launches, 3);
  for (int i = 0; i < 2; ++i)
    call(graphs, step, second);
  call(graphs, step, first);
  EXPECT_EQ(first, 5);
  EXPECT_EQ(second, 2);
  EXPECT_EQ(driver.captures, 2);
  EXPECT_EQ(driver.launches, 6);
  // Host code ran at the first run and at each capture.
  EXPECT_EQ(hostRuns, 3);
}

// A new epoch (the scratch buffer grew) captures each table again.
TEST_F(StepGraphsPolicy, NewEpochCapturesAgain) {
  StepGraphs graphs(driver);
  graphs.setStep(step, nullptr, false);
  int counter = 0;
  for (int i = 0; i < 3; ++i)
    call(graphs, step, counter);
  driver.currentEpoch = 1;
  for (int i = 0; i < 2; ++i)
    call(graphs, step, counter);
  EXPECT_EQ(counter, 5);
  EXPECT_EQ(driver.captures, 2);
  EXPECT_EQ(driver.destroyed, 1);
  EXPECT_EQ(driver.live, 1);
}

// Past kMaxGraphsPerRun tables, the kept graphs are destroyed.
TEST_F(StepGraphsPolicy, KeepsAFewTables) {
  StepGraphs graphs(driver);
  graphs.setStep(step, nullptr, false);
  std::vector<int> counters(StepGraphs::kMaxGraphsPerRun + 2, 0);
  for (int &counter : counters)
    for (int i = 0; i < 2; ++i)
      call(graphs, step, counter);
  for (int counter : counters)
    EXPECT_EQ(counter, 2);
  EXPECT_EQ(driver.captures, int(counters.size()));
  EXPECT_LE(driver.live, int(StepGraphs::kMaxGraphsPerRun));
  EXPECT_EQ(driver.destroyed + driver.live, driver.captures);
}

// A function that may not be replayed runs as it is, and says why once.
TEST_F(StepGraphsPolicy, WhyNotIsSaidOnce) {
  StepGraphs graphs(driver);
  graphs.setStep(step, "@run calls @print on the host", false);
  int counter = 0;
  EXPECT_EQ(callsSaying(graphs, step, counter, 3),
            "dtrain-rt: DTRAIN_CUDA_GRAPH=1: running without a CUDA graph: "
            "@run calls @print on the host\n");
  EXPECT_EQ(counter, 3);
  EXPECT_EQ(driver.captures, 0);
}

// A function whose collectives leave the buffers alone on one rank: replayed
// there, run as it is on more.
TEST_F(StepGraphsPolicy, OnOneRankOnly) {
  const char *why = "@run calls @dtrain_rt_all_reduce_start_with, which "
                    "communicates on the host between its kernels across "
                    "more than one rank";
  {
    StepGraphs graphs(driver);
    graphs.setStep(step, why, true);
    int counter = 0;
    for (int i = 0; i < 3; ++i)
      call(graphs, step, counter);
    EXPECT_EQ(counter, 3);
    EXPECT_EQ(driver.captures, 1);
  }
  StandInDriver two;
  two.ranks = 2;
  StepGraphs graphs(two);
  graphs.setStep(otherStep, why, true);
  int counter = 0;
  EXPECT_EQ(callsSaying(graphs, otherStep, counter, 3),
            std::string("dtrain-rt: DTRAIN_CUDA_GRAPH=1: running without a "
                        "CUDA graph: ") +
                why + "\n");
  EXPECT_EQ(counter, 3);
  EXPECT_EQ(two.captures, 0);
}

// A capture the driver refuses: that run's work is done as it is, and the
// function runs as it is from then on, said once.
TEST_F(StepGraphsPolicy, RefusedCaptureRunsAsItIs) {
  StepGraphs graphs(driver);
  graphs.setStep(step, nullptr, false);
  driver.failWith = "cuGraphInstantiate failed: CUDA_ERROR_NOT_SUPPORTED";
  int counter = 0;
  EXPECT_EQ(callsSaying(graphs, step, counter, 4),
            "dtrain-rt: DTRAIN_CUDA_GRAPH=1: the step runs without a CUDA "
            "graph from now on: cuGraphInstantiate failed: "
            "CUDA_ERROR_NOT_SUPPORTED\n");
  EXPECT_EQ(counter, 4);
  EXPECT_EQ(driver.captures, 1);
  EXPECT_EQ(driver.launches, 0);
}

} // namespace
