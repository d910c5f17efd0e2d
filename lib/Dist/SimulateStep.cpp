//===- SimulateStep.cpp - predicted iteration time for many ranks ---------===//
//
// Implements --dtrain-simulate-step: the MergePlanner model of a step's
// exchanges, evaluated for rank counts beyond the machine at hand.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/CostModel.h"
#include "dtrain/Dist/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_SIMULATESTEP
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::dist;

namespace {

/// The end of the last of exchanges that take SECONDS each, one at a time
/// in order, each once its gradient is ready (TASKS' computation before it).
static double serialCommEnd(ArrayRef<GradientTask> tasks,
                            ArrayRef<double> seconds) {
  double ready = 0, end = 0;
  for (auto [task, duration] : llvm::zip_equal(tasks, seconds)) {
    ready += task.backwardSeconds;
    end = std::max(end, ready) + duration;
  }
  return end;
}

struct SimulateStepPass
    : public dist::impl::SimulateStepBase<SimulateStepPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (network == "profile" ? profile.empty() : !lookupNetwork(network))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-simulate-step: network '" << network
             << "' is not valid (accepted: 1gbe, 10gbe, 100gb-ib, and "
                "profile with a profile=FILE)";
    if (!refitProfiles.empty() && profile.empty())
      return emitError(UnknownLoc::get(context))
             << "--dtrain-simulate-step: refit-profiles needs "
                "profile=FILE.json";
    for (int64_t p : ranks)
      if (p < 1)
        return emitError(UnknownLoc::get(context))
               << "--dtrain-simulate-step: ranks must be >= 1, not " << p;
    if (!(sparseDensity >= 0 && sparseDensity <= 1))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-simulate-step: sparse-density must be in [0, 1]";
    if (!(flopsPerSecond > 0) || !(elementsPerSecond > 0))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-simulate-step: flops-per-second and "
                "elements-per-second must be > 0";
    if (thresholdBytes < 0 || firstBucketBytes < 0)
      return emitError(UnknownLoc::get(context))
             << "--dtrain-simulate-step: threshold-bytes and "
                "first-bucket-bytes must be >= 0";
    return readProfileOption(context, profile, refitProfiles,
                             "--dtrain-simulate-step", measured);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    double tail = 0;
    SmallVector<Exchange> exchanges = collectExchanges(
        func.getBody().front(), ComputeSpeed{flopsPerSecond, elementsPerSecond},
        &tail);
    if (exchanges.empty())
      return;
    SmallVector<GradientTask> tasks;
    for (const Exchange &e : exchanges)
      tasks.push_back(e.task);
    std::string source = "estimated";
    if (measured) {
      if (measured->computeSeconds.size() != tasks.size()) {
        func.emitError("--dtrain-simulate-step: profile ")
            << profile << " has " << measured->computeSeconds.size()
            << " compute_s values but @" << func.getSymName() << " has "
            << tasks.size() << " exchanges";
        return signalPassFailure();
      }
      for (auto [task, seconds] :
           llvm::zip_equal(tasks, measured->computeSeconds))
        task.backwardSeconds = seconds;
      source = "measured (" + profile + ")";
      if (measured->tailSeconds)
        tail = *measured->tailSeconds;
      else
        source += ", the updates estimated";
    }

    double bytes = 0, backward = 0;
    for (const GradientTask &task : tasks) {
      bytes += task.bytes;
      backward += task.backwardSeconds;
    }
    const double single = backward + tail;
    llvm::raw_ostream &os = llvm::outs();
    os << llvm::formatv("@{0}: {1} exchanges, {2:f1} MB; compute {3:f2} ms "
                        "per step ({4}; {5:f2} ms up to the last exchange, "
                        "{6:f2} ms after it); ",
                        func.getSymName(), tasks.size(), bytes / 1e6,
                        single * 1e3, source, backward * 1e3, tail * 1e3);
    SmallVector<int64_t> counts(ranks.begin(), ranks.end());
    std::optional<Network> net = lookupNetwork(network);
    if (net) {
      os << llvm::formatv("network {0} ({1} us, {2:f3} GB/s)\n",
                          network.getValue(), net->latency * 1e6,
                          net->bandwidth / 1e9);
    } else {
      if (!measured->ranks || *measured->ranks < 1) {
        func.emitError("--dtrain-simulate-step: network=profile needs the "
                       "profile's \"ranks\"");
        return signalPassFailure();
      }
      counts = {*measured->ranks};
      os << llvm::formatv("all-reduce {0:f1} us + {1:f3} ns/byte measured "
                          "on {2} ranks",
                          measured->cost.startup * 1e6,
                          measured->cost.perByte * 1e9, *measured->ranks);
      if (!measured->cost.measured.empty())
        os << llvm::formatv(", never below {0} timed all-reduces",
                            measured->cost.measured.size());
      const AllReduceCost &cost = measured->cost;
      if (cost.backwardLine)
        os << llvm::formatv("; beside the backward pass {0:f1} us + {1:f3} "
                            "ns/byte",
                            cost.backwardLine->startup * 1e6,
                            cost.backwardLine->perByte * 1e9);
      if (cost.aloneLine)
        os << llvm::formatv("; alone {0:f1} us + {1:f3} ns/byte",
                            cost.aloneLine->startup * 1e6,
                            cost.aloneLine->perByte * 1e9);
      if (cost.cpuStartup > 0 || cost.cpuPerByte > 0 || cost.callerCpu > 0)
        os << llvm::formatv("; the computing threads fill the cores: each "
                            "exchange takes {0:f1} us + {1:f3} ns/byte from "
                            "the computation, and {2:f1} us of its thread's",
                            cost.cpuStartup * 1e6, cost.cpuPerByte * 1e9,
                            cost.callerCpu * 1e6);
      os << "\n";
    }
    os << "ranks  none ms (eff)      threshold ms (eff) mgwfbp ms (eff)    "
          "optimal ms (eff)   optimal buckets";
    if (sparseDensity > 0)
      os << "  top-k ms (eff)     gtop-k ms (eff)";
    os << "\n";
    if (counts.empty())
      counts = {8, 16, 32, 64, 128, 256, 512, 1024};
    for (int64_t p : counts) {
      const AllReduceCost cost =
          net ? ringAllReduceCost(p, *net) : measured->cost;
      const MergePlan plans[] = {planEachGradient(tasks.size()),
                                 planThreshold(tasks, double(thresholdBytes),
                                               double(firstBucketBytes)),
                                 planMGWFBP(tasks, cost),
                                 planOptimal(tasks, cost)};
      os << llvm::formatv("{0,-6}", p);
      for (const MergePlan &plan : plans) {
        const double end = p == 1 ? 0 : planEnd(tasks, plan, cost);
        const double iteration = std::max(end, backward) + tail;
        os << llvm::formatv("{0,9:f2} ({1:f2})   ", iteration * 1e3,
                            single / iteration);
      }
      if (sparseDensity == 0)
        os << plans[3].size();
      else
        os << llvm::formatv("{0,-17}", plans[3].size());
      if (sparseDensity > 0) {
        const SparseExchangeCost sparse{
            net ? *net : networkOfRing(measured->cost, p), p,
            measured
                ? measured->selectElementsPerSecond.value_or(elementsPerSecond)
                : double(elementsPerSecond)};
        SmallVector<double> allGather, gTopK;
        double selection = 0;
        for (const GradientTask &task : tasks) {
          const int64_t n = int64_t(task.bytes / 4);
          const int64_t k = sparseK(sparseDensity, n);
          allGather.push_back(p == 1 ? 0 : sparse.allGather(n, k));
          gTopK.push_back(p == 1 ? 0 : sparse.gTopK(n, k));
          selection += p == 1 ? 0 : sparse.select(n);
        }
        // The selections run on the communication thread, but on the cores
        // that compute: they delay the backward pass too.
        const char *separator = "";
        for (ArrayRef<double> seconds : {allGather, gTopK}) {
          const double iteration =
              std::max(serialCommEnd(tasks, seconds), backward + selection) +
              tail;
          os << llvm::formatv("{0}{1,9:f2} ({2:f2})", separator,
                              iteration * 1e3, single / iteration);
          separator = "   ";
        }
      }
      os << "\n";
    }
  }

  /// The profile= file (with refit-profiles=), read once for every function.
  std::optional<Profile> measured;
};

} // namespace
