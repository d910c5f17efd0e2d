//===- StepGraphs.h - when steps are replayed as CUDA graphs ----*- C++ -*-===//
//
// The policy of dtrain_rt_cuda_call_run (StepGraphs.cpp), apart from the
// CUDA driver so that a CPU test (StepGraphsTest.cpp) runs it on a
// stand-in: which run functions may be replayed, when one runs as it is,
// is captured or is replayed, which graphs are kept and when they are
// captured again.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_STEPGRAPHS_H
#define DTRAIN_RUNTIME_CUDA_STEPGRAPHS_H

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtrain::rt::gpu {

using RunFn = void (*)(void **);

/// What captures and replays steps: the CUDA driver's graphs
/// (StepGraphs.cpp), or a test's stand-in.
class GraphDriver {
public:
  virtual ~GraphDriver() = default;
  /// RUN(BUFFERS) captured (nothing runs), or null and why not in *WHY_NOT.
  virtual void *capture(RunFn run, void **buffers, std::string *whyNot) = 0;
  /// Runs GRAPH and waits for it, as the step's own final wait would.
  virtual void launch(void *graph) = 0;
  virtual void destroy(void *graph) = 0;
  /// Graphs captured at an older epoch must not run (stepGraphEpoch).
  virtual uint64_t epoch() = 0;
  /// The ranks of the world communicator.
  virtual int32_t worldSize() = 0;
};

/// The run functions the compiler registered, and their graphs.
class StepGraphs {
public:
  /// The most graphs kept per run function: a trainer needs two (its input
  /// buffers alternate); more tables mean a caller that varies them, for
  /// whom graphs would only add captures.
  static constexpr size_t kMaxGraphsPerRun = 4;

  explicit StepGraphs(GraphDriver &driver) : driver(driver) {}

  /// dtrain_rt_cuda_set_graph_step.
  void setStep(RunFn run, const char *whyNot, bool onOneRank) {
    std::lock_guard<std::mutex> lock(mutex);
    Run &r = runs[run];
    r.whyNot = whyNot ? whyNot : "";
    r.onOneRank = whyNot && onOneRank;
  }

  /// dtrain_rt_cuda_call_run: RUN(BUFFERS) as a graph where it may be, else
  /// as it is.
  void callRun(RunFn run, void **buffers, size_t count) {
    std::unique_lock<std::mutex> lock(mutex);
    auto found = runs.find(run);
    if (found == runs.end()) {
      lock.unlock();
      run(buffers);
      return;
    }
    Run &r = found->second;
    // Its collectives leave the buffers alone across one rank (asked at
    // its first run, when a trainer has made its communicator).
    if (r.onOneRank) {
      r.onOneRank = false;
      if (driver.worldSize() == 1)
        r.whyNot.clear();
    }
    if (!r.whyNot.empty() && !r.reported) {
      std::fprintf(stderr,
                   "dtrain-rt: DTRAIN_CUDA_GRAPH=1: running without a CUDA "
                   "graph: %s\n",
                   r.whyNot.c_str());
      r.reported = true;
    }
    // Its first run makes what it makes once (kernel modules, cuDNN plans,
    // pool blocks) outside any capture.
    if (!r.whyNot.empty() || !r.ranOnce) {
      r.ranOnce = true;
      lock.unlock();
      run(buffers);
      return;
    }
    launch(r, run, buffers, count);
  }

private:
  struct Graph {
    void *exec = nullptr;
    uint64_t epoch = 0; // the driver's when captured
  };

  /// What is known of one run function.
  struct Run {
    std::string whyNot; // empty: it may be captured
    bool onOneRank = false, reported = false, ranOnce = false;
    std::map<std::vector<void *>, Graph> graphs; // by buffer table
  };

  /// RUN(BUFFERS) as the graph of BUFFERS' COUNT pointers, captured now
  /// unless one is kept that is still valid.
  void launch(Run &r, RunFn run, void **buffers, size_t count) {
    std::vector<void *> table(buffers, buffers + count);
    auto graph = r.graphs.find(table);
    if (graph != r.graphs.end() && graph->second.epoch != driver.epoch()) {
      driver.destroy(graph->second.exec);
      r.graphs.erase(graph);
      graph = r.graphs.end();
    }
    if (graph == r.graphs.end()) {
      if (r.graphs.size() >= kMaxGraphsPerRun) {
        for (auto &[key, old] : r.graphs)
          driver.destroy(old.exec);
        r.graphs.clear();
      }
      std::string whyNot;
      Graph captured{nullptr, driver.epoch()};
      captured.exec = driver.capture(run, buffers, &whyNot);
      if (!captured.exec) {
        // The capture ran the host code, which only queued work: run it.
        std::fprintf(stderr,
                     "dtrain-rt: DTRAIN_CUDA_GRAPH=1: the step runs without "
                     "a CUDA graph from now on: %s\n",
                     whyNot.c_str());
        r.whyNot = whyNot;
        r.reported = true;
        run(buffers);
        return;
      }
      graph = r.graphs.emplace(table, captured).first;
    }
    driver.launch(graph->second.exec);
  }

  GraphDriver &driver;
  std::mutex mutex;
  std::unordered_map<RunFn, Run> runs;
};

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_STEPGRAPHS_H
