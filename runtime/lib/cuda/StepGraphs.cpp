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
// (invalidateStepGraphs), it is captured again. The policy is StepGraphs.h;
// this file is its CUDA driver.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"
#include "cuda/StepGraphs.h"
#include "cuda/StepStream.h"

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

using namespace dtrain::rt::gpu;

namespace {

/// "<what> failed: <RC's name>" for a capture that fails.
std::string failure(const char *what, CUresult rc) {
  const char *name = nullptr;
  cuda().cuGetErrorName(rc, &name);
  return std::string(what) + " failed: " + (name ? name : "an error");
}

/// Graphs of the step stream's work.
class CudaGraphDriver final : public GraphDriver {
public:
  void *capture(RunFn run, void **buffers, std::string *whyNot) override {
    const HostTimer timer("step graph: capture and instantiate");
    const Driver &driver = cuda();
    // Relaxed: the pool may take a new block from the driver meanwhile,
    // which the graph then keeps.
    CUresult rc = driver.cuStreamBeginCapture(stepStream(),
                                              CU_STREAM_CAPTURE_MODE_RELAXED);
    if (rc != CUDA_SUCCESS) {
      *whyNot = failure("cuStreamBeginCapture", rc);
      return nullptr;
    }
    setCapturingStepStream(true);
    run(buffers);
    setCapturingStepStream(false);
    CUgraph captured = nullptr;
    rc = driver.cuStreamEndCapture(stepStream(), &captured);
    if (rc != CUDA_SUCCESS) {
      *whyNot = failure("capturing it (cuStreamEndCapture)", rc);
      return nullptr;
    }
    CUgraphExec exec = nullptr;
    rc = driver.cuGraphInstantiateWithFlags(&exec, captured, 0);
    DTRAIN_CU(cuGraphDestroy, captured);
    if (rc != CUDA_SUCCESS) {
      *whyNot = failure("cuGraphInstantiate", rc);
      return nullptr;
    }
    return exec;
  }

  void launch(void *graph) override {
    {
      const HostTimer timer("step graph: launch");
      DTRAIN_CU(cuGraphLaunch, static_cast<CUgraphExec>(graph), stepStream());
    }
    // What the step's own final wait did.
    synchronizeStepStream();
  }

  void destroy(void *graph) override {
    DTRAIN_CU(cuGraphExecDestroy, static_cast<CUgraphExec>(graph));
  }

  uint64_t epoch() override { return stepGraphEpoch(); }

  int32_t worldSize() override {
    return dtrain_rt_comm_size(dtrain_rt_comm_world());
  }
};

StepGraphs &stepGraphs() {
  // Never destroyed: the driver may shut down before static destructors.
  static StepGraphs *const instance = new StepGraphs(*new CudaGraphDriver);
  return *instance;
}

} // namespace

void dtrain_rt_cuda_set_graph_step(void (*run)(void **buffers),
                                   const char *why_not, int32_t on_one_rank) {
  if (!run)
    fatal("dtrain_rt_cuda_set_graph_step: RUN is NULL");
  stepGraphs().setStep(run, why_not, on_one_rank != 0);
}

void dtrain_rt_cuda_call_run(void (*run)(void **buffers), void **buffers,
                             size_t count) {
  stepGraphs().callRun(run, buffers, count);
}
