//===- StepGraphs.cpp - steps replayed as CUDA graphs ---------------------===//
//
// The run caller (dtrain_rt_set_run_caller) of DTRAIN_CUDA_GRAPH=1: a run
// function whose host code only queues work on the step stream
// (dtrain_rt_cuda_set_graph_step, from dtrain-compile) runs once as it is,
// which makes what it makes lazily (modules, cuDNN plans, the scratch
// buffer, pool blocks); then it is captured into a CUDA graph once per
// buffer table (a trainer alternates two input buffers), and the graph is
// launched in its place: one launch a step instead of hundreds of kernels
// and heavy-op calls, whose host time held back steps the GPU ran faster.
// The graph bakes in the buffers' addresses and every value the host
// computed, which is why only such functions qualify, and why a capture
// is keyed by the table. Its temporaries are pool blocks of the graphs'
// own (ManagedMemory.cpp); when something it uses is freed
// (invalidateStepGraphs), it is captured again.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"
#include "cuda/StepStream.h"

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {

using RunFn = void (*)(void **);

/// The most graphs kept per run function: a trainer needs two (its input
/// buffers alternate); more tables mean a caller that varies them, for
/// whom graphs would only add captures.
constexpr size_t kMaxGraphsPerRun = 4;

struct Graph {
  CUgraphExec exec = nullptr;
  uint64_t epoch = 0; // stepGraphEpoch() when captured
};

/// What is known of one run function.
struct GraphRun {
  std::string whyNot; // empty: it may be captured
  bool onOneRank = false; // dtrain_rt_cuda_set_graph_step's ON_ONE_RANK
  bool reported = false;
  bool ranOnce = false;
  std::map<std::vector<void *>, Graph> graphs; // by buffer table
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<RunFn, GraphRun> runs;
};

Registry &registry() {
  // Never destroyed: the driver may shut down before static destructors.
  static Registry *const instance = new Registry;
  return *instance;
}

void destroy(Graph &graph) {
  DTRAIN_CU(cuGraphExecDestroy, graph.exec);
  graph.exec = nullptr;
}

/// "<what> failed: <RC's name>" for a capture that fails.
std::string failure(const char *what, CUresult rc) {
  const char *name = nullptr;
  cuda().cuGetErrorName(rc, &name);
  return std::string(what) + " failed: " + (name ? name : "an error");
}

/// RUN(BUFFERS) captured from the step stream into an executable graph
/// (nothing runs yet), or null and why not in *WHY_NOT.
Graph capture(RunFn run, void **buffers, std::string *whyNot) {
  const HostTimer timer("step graph: capture and instantiate");
  const Driver &driver = cuda();
  Graph graph;
  graph.epoch = stepGraphEpoch();
  // Relaxed: the pool may take a new block from the driver meanwhile,
  // which the graph then keeps.
  CUresult rc =
      driver.cuStreamBeginCapture(stepStream(), CU_STREAM_CAPTURE_MODE_RELAXED);
  if (rc != CUDA_SUCCESS) {
    *whyNot = failure("cuStreamBeginCapture", rc);
    return graph;
  }
  setCapturingStepStream(true);
  run(buffers);
  setCapturingStepStream(false);
  CUgraph captured = nullptr;
  rc = driver.cuStreamEndCapture(stepStream(), &captured);
  if (rc != CUDA_SUCCESS) {
    *whyNot = failure("capturing it (cuStreamEndCapture)", rc);
    return graph;
  }
  rc = driver.cuGraphInstantiateWithFlags(&graph.exec, captured, 0);
  DTRAIN_CU(cuGraphDestroy, captured);
  if (rc != CUDA_SUCCESS)
    *whyNot = failure("cuGraphInstantiate", rc);
  return graph;
}

/// RUN(BUFFERS) as the graph captured for BUFFERS' COUNT pointers,
/// captured now unless there is one that is still valid.
void launchGraph(GraphRun &graphRun, RunFn run, void **buffers, size_t count) {
  std::vector<void *> table(buffers, buffers + count);
  auto graph = graphRun.graphs.find(table);
  if (graph != graphRun.graphs.end() &&
      graph->second.epoch != stepGraphEpoch()) {
    destroy(graph->second);
    graphRun.graphs.erase(graph);
    graph = graphRun.graphs.end();
  }
  if (graph == graphRun.graphs.end()) {
    if (graphRun.graphs.size() >= kMaxGraphsPerRun) {
      for (auto &[key, old] : graphRun.graphs)
        destroy(old);
      graphRun.graphs.clear();
    }
    std::string whyNot;
    Graph captured = capture(run, buffers, &whyNot);
    if (!captured.exec) {
      // The capture ran the host code, which only queued work: run it.
      std::fprintf(stderr,
                   "dtrain-rt: DTRAIN_CUDA_GRAPH=1: the step runs without a "
                   "CUDA graph from now on: %s\n",
                   whyNot.c_str());
      graphRun.whyNot = whyNot;
      graphRun.reported = true;
      run(buffers);
      return;
    }
    graph = graphRun.graphs.emplace(table, captured).first;
  }
  {
    const HostTimer timer("step graph: launch");
    DTRAIN_CU(cuGraphLaunch, graph->second.exec, stepStream());
  }
  // What the step's own final wait did.
  synchronizeStepStream();
}

} // namespace

void dtrain_rt_cuda_set_graph_step(void (*run)(void **buffers),
                                   const char *why_not, int32_t on_one_rank) {
  if (!run)
    fatal("dtrain_rt_cuda_set_graph_step: RUN is NULL");
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  GraphRun &graphRun = r.runs[run];
  graphRun.whyNot = why_not ? why_not : "";
  graphRun.onOneRank = why_not && on_one_rank;
}

void dtrain_rt_cuda_call_run(void (*run)(void **buffers), void **buffers,
                             size_t count) {
  Registry &r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  auto found = r.runs.find(run);
  if (found == r.runs.end()) {
    lock.unlock();
    run(buffers);
    return;
  }
  GraphRun &graphRun = found->second;
  // Its collectives leave the buffers alone across one rank (asked at its
  // first run, when a trainer has made its communicator).
  if (graphRun.onOneRank) {
    graphRun.onOneRank = false;
    if (dtrain_rt_comm_size(dtrain_rt_comm_world()) == 1)
      graphRun.whyNot.clear();
  }
  if (!graphRun.whyNot.empty() && !graphRun.reported) {
    std::fprintf(stderr,
                 "dtrain-rt: DTRAIN_CUDA_GRAPH=1: running without a CUDA "
                 "graph: %s\n",
                 graphRun.whyNot.c_str());
    graphRun.reported = true;
  }
  if (!graphRun.whyNot.empty() || !graphRun.ranOnce) {
    graphRun.ranOnce = true;
    lock.unlock();
    run(buffers);
    return;
  }
  launchGraph(graphRun, run, buffers, count);
}
