//===- MergePlanner.h - gradient-merge plans and their cost -----*- C++ -*-===//
//
// The planning half of gradient-merge fusion, independent of the IR: the
// cost model of one step's gradient exchange (the wait-free backpropagation
// model of Shi et al., MG-WFBP, INFOCOM'19 / TPDS'21) and the planners that
// group consecutive gradients into buckets, one all-reduce per bucket.
//
// Gradients are indexed in production order: gradient 0 is the first the
// backward pass produces (the last layer's). Gradient i is ready at
// ready(i) = backward[0] + ... + backward[i]. A bucket [s, e] is exchanged
// once gradient e is ready and the previous bucket's exchange is done, and
// takes AllReduceCost::time() of bytes[s] + ... + bytes[e] while the
// backward pass runs beside it and aloneTime() after that (the last
// bucket, which starts once the backward pass has ended, runs alone
// throughout);
// exchanges run one at a time, in order. A plan's cost is when its last
// exchange ends, but no earlier than the cores allow where the computation
// fills them: the computation plus the CPU time each exchange before the
// last takes from it.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_DIST_MERGEPLANNER_H
#define DTRAIN_DIST_MERGEPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include "dtrain_rt_line_fit.h"

#include <cstdint>
#include <optional>

namespace mlir::dtrain::dist {

/// A fitted cost line: startup + perByte * M seconds for M bytes (as a
/// trainer's --profile fits them).
using ::dtrain::rt::CostLine;

/// All-reduce time T(M) = startup + perByte * M (seconds, M in bytes): the
/// alpha-beta model, fitted at the job's rank count. With timed all-reduces
/// (MEASURED: (bytes, seconds), bytes increasing), T never drops below their
/// piecewise-linear interpolation (extrapolated along the last segment,
/// flat below the first size): one line cannot follow a cost that grows
/// faster than linearly, as on shared memory once a bucket leaves the
/// caches, or that jumps where the runtime changes algorithm.
struct AllReduceCost {
  AllReduceCost() = default;
  AllReduceCost(double startup, double perByte,
                llvm::ArrayRef<std::pair<double, double>> measured = {})
      : startup(startup), perByte(perByte), measured(measured) {}
  /// An exchange beside the backward pass: the backward line where there
  /// is one (fitted to the steps' exchanges that ran within it), else the
  /// line, never below the timed all-reduces' interpolation, nor where
  /// there is an alone line, below aloneTime(): the computation only takes
  /// the cores from the exchange.
  double time(double bytes) const;
  /// The startup of time()'s line.
  double timeStartup() const {
    return backwardLine ? backwardLine->startup : startup;
  }
  /// An exchange with nothing computing beside it: the alone line where
  /// there is one (fitted to the steps' exchanges that ran after the
  /// backward pass), never below the timed all-reduces' interpolation
  /// (which ran so, after training); the line where there is neither. The
  /// line fitted to all the steps' exchanges holds the cores most of them
  /// shared with the computation.
  double aloneTime(double bytes) const;
  /// When an exchange of BYTES that starts at START ends, the backward
  /// pass ending at BACKWARDEND: until then it runs at time()'s pace,
  /// sharing the cores with the computation, and what is left of it after
  /// that at aloneTime()'s. Continuous and increasing in START, so an
  /// earlier prefix never delays the rest of a plan.
  double end(double start, double bytes, double backwardEnd) const;

  double startup = 0, perByte = 0;
  llvm::SmallVector<std::pair<double, double>> measured;
  /// The backward line and the alone line, where fitted.
  std::optional<CostLine> backwardLine, aloneLine;
  /// MEASURED's piecewise-linear interpolation (not empty).
  double interpolated(double bytes) const;
  /// SECONDS for BYTES, never below that interpolation.
  double atLeastTimed(double seconds, double bytes) const;
  /// Where the computing threads fill a machine's cores, every thread's
  /// CPU time has to fit in them: an exchange's CPU time (its transfers,
  /// reductions and polling, measured by a trainer's --profile) times the
  /// ranks per core is taken from the computation, wherever the exchange
  /// runs. 0 where the communication threads have cores of their own.
  double cpuStartup = 0, cpuPerByte = 0;
  /// The computing thread's time per exchange to submit it and wait for
  /// it (its CPU time times the ranks per core where the computation fills
  /// the cores, as cpuStartup): each bucket adds it to the step.
  double callerCpu = 0;
};

/// One gradient: its size and the backward time from the previous
/// gradient's readiness (or the start of the backward pass) to its own.
struct GradientTask {
  double bytes = 0;
  double backwardSeconds = 0;
};

/// A merge plan: the index one past the last gradient of each bucket, in
/// order (the last is the gradient count). Buckets are contiguous.
using MergePlan = llvm::SmallVector<unsigned>;

/// When each bucket's exchange starts and ends under the model.
struct PlanTimeline {
  llvm::SmallVector<double> starts, ends;
  /// When the last exchange ends (0 without gradients).
  double commEnd() const { return ends.empty() ? 0 : ends.back(); }
};

/// Evaluates PLAN for TASKS under COST.
PlanTimeline simulatePlan(llvm::ArrayRef<GradientTask> tasks,
                          llvm::ArrayRef<unsigned> plan, AllReduceCost cost);

/// When PLAN's exchanges are done and waited for under COST: the end of the
/// last one, but no earlier than the computation plus the CPU time the
/// exchanges take from it (the cores' bound; see AllReduceCost::cpuStartup),
/// then the computing thread's calls for each bucket (callerCpu).
double planEnd(llvm::ArrayRef<GradientTask> tasks,
               llvm::ArrayRef<unsigned> plan, AllReduceCost cost);

/// One bucket per gradient (plain WFBP).
MergePlan planEachGradient(unsigned count);

/// Fixed-size buckets in production order: a bucket closes once it holds at
/// least THRESHOLDBYTES (FIRSTBUCKETBYTES for the first bucket, when
/// positive). Horovod's tensor fusion is threshold 128 MB; PyTorch DDP's
/// buckets are 25 MB with a 1 MB first bucket.
MergePlan planThreshold(llvm::ArrayRef<GradientTask> tasks,
                        double thresholdBytes, double firstBucketBytes = 0);

/// MG-WFBP's greedy rule: gradient i+1 joins the current bucket when it is
/// ready less than one startup time (timeStartup()) after the current
/// bucket's exchange could start (Shi et al.); otherwise the bucket closes.
MergePlan planMGWFBP(llvm::ArrayRef<GradientTask> tasks, AllReduceCost cost);

/// The optimal plan under the same model (the least planEnd): a dynamic
/// program over contiguous buckets. Earliest[e] = min over s <= e of
/// max(Earliest[s-1], ready(e)) + T(bytes[s..e]) (O(n^2)); finishing a
/// prefix earlier never delays the rest, so the prefix optimum extends. The
/// cores' bound depends on the bucket count c and the last bucket's bytes
/// L alone ((c - 1) * cpuStartup plus cpuPerByte for all bytes but L), and
/// the computing thread's calls on c (c * callerCpu), so the same
/// recurrence per bucket count (O(c n^2) for up to c buckets), with the
/// bound taken where the last bucket is chosen, gives the optimum of all.
/// Of the optimal
/// plans it returns one with the fewest buckets: every exchange costs more
/// than the model says.
MergePlan planOptimal(llvm::ArrayRef<GradientTask> tasks, AllReduceCost cost);

} // namespace mlir::dtrain::dist

#endif // DTRAIN_DIST_MERGEPLANNER_H
