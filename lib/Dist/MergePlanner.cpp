//===- MergePlanner.cpp - gradient-merge plans and their cost -------------===//

#include "dtrain/Dist/MergePlanner.h"

#include <algorithm>
#include <limits>

using namespace mlir::dtrain::dist;

namespace {

/// ready[i]: when gradient i exists.
llvm::SmallVector<double> readyTimes(llvm::ArrayRef<GradientTask> tasks) {
  llvm::SmallVector<double> ready;
  double now = 0;
  for (const GradientTask &task : tasks)
    ready.push_back(now += task.backwardSeconds);
  return ready;
}

/// The cores' bound of a plan of BUCKETS buckets: the computation, the
/// payload's CPU time per byte and each exchange's CPU startup.
double coresBound(llvm::ArrayRef<GradientTask> tasks, unsigned buckets,
                  const AllReduceCost &cost) {
  double cores = cost.cpuStartup * double(buckets);
  for (const GradientTask &task : tasks)
    cores += task.backwardSeconds + cost.cpuPerByte * task.bytes;
  return cores;
}

} // namespace

double AllReduceCost::time(double bytes) const {
  const double line = startup + perByte * bytes;
  if (measured.empty())
    return line;
  if (measured.size() == 1 || bytes <= measured.front().first)
    return std::max(line, measured.front().second);
  // The segment that holds BYTES, or the last one beyond it.
  size_t upper = 1;
  while (upper + 1 < measured.size() && measured[upper].first < bytes)
    ++upper;
  const auto [x0, y0] = measured[upper - 1];
  const auto [x1, y1] = measured[upper];
  return std::max(line, y0 + (y1 - y0) / (x1 - x0) * (bytes - x0));
}

PlanTimeline mlir::dtrain::dist::simulatePlan(llvm::ArrayRef<GradientTask> tasks,
                                              llvm::ArrayRef<unsigned> plan,
                                              AllReduceCost cost) {
  const llvm::SmallVector<double> ready = readyTimes(tasks);
  PlanTimeline timeline;
  double free = 0; // when the network is free
  unsigned first = 0;
  for (unsigned end : plan) {
    double bytes = 0;
    for (unsigned i = first; i < end; ++i)
      bytes += tasks[i].bytes;
    const double start = std::max(free, ready[end - 1]);
    free = start + cost.time(bytes);
    timeline.starts.push_back(start);
    timeline.ends.push_back(free);
    first = end;
  }
  return timeline;
}

double mlir::dtrain::dist::planEnd(llvm::ArrayRef<GradientTask> tasks,
                                   llvm::ArrayRef<unsigned> plan,
                                   AllReduceCost cost) {
  return std::max(simulatePlan(tasks, plan, cost).commEnd(),
                  coresBound(tasks, plan.size(), cost)) +
         double(plan.size()) * cost.callerCpu;
}

MergePlan mlir::dtrain::dist::planEachGradient(unsigned count) {
  MergePlan plan;
  for (unsigned i = 1; i <= count; ++i)
    plan.push_back(i);
  return plan;
}

MergePlan mlir::dtrain::dist::planThreshold(llvm::ArrayRef<GradientTask> tasks,
                                            double thresholdBytes,
                                            double firstBucketBytes) {
  MergePlan plan;
  double bytes = 0;
  for (unsigned i = 0, e = tasks.size(); i < e; ++i) {
    bytes += tasks[i].bytes;
    const double limit =
        plan.empty() && firstBucketBytes > 0 ? firstBucketBytes : thresholdBytes;
    if (bytes >= limit || i + 1 == e) {
      plan.push_back(i + 1);
      bytes = 0;
    }
  }
  return plan;
}

MergePlan mlir::dtrain::dist::planMGWFBP(llvm::ArrayRef<GradientTask> tasks,
                                         AllReduceCost cost) {
  const llvm::SmallVector<double> ready = readyTimes(tasks);
  MergePlan plan;
  double free = 0;   // when the previous bucket's exchange ends
  double bytes = 0;  // of the current bucket
  double start = 0;  // when the current bucket's exchange could start
  for (unsigned i = 0, e = tasks.size(); i < e; ++i) {
    bytes += tasks[i].bytes;
    start = std::max(free, ready[i]);
    if (i + 1 < e && ready[i + 1] < start + cost.startup)
      continue; // merging costs less waiting than a startup
    plan.push_back(i + 1);
    free = start + cost.time(bytes);
    bytes = 0;
  }
  return plan;
}

MergePlan mlir::dtrain::dist::planOptimal(llvm::ArrayRef<GradientTask> tasks,
                                          AllReduceCost cost) {
  const unsigned n = tasks.size();
  if (n == 0)
    return {};
  const llvm::SmallVector<double> ready = readyTimes(tasks);
  // One round of the recurrence: from EARLIEST (the earliest end of the
  // exchanges of gradients [0, s) in some number of buckets, or infinity),
  // the earliest end of [0, k) in one more bucket, and in FIRST where that
  // last bucket starts.
  auto extend = [&](llvm::ArrayRef<double> earliest,
                    llvm::SmallVectorImpl<double> &next,
                    llvm::SmallVectorImpl<unsigned> &first) {
    next.assign(n + 1, std::numeric_limits<double>::infinity());
    first.assign(n + 1, 0);
    for (unsigned k = 1; k <= n; ++k) {
      double bytes = 0;
      for (unsigned s = k; s-- > 0;) {
        bytes += tasks[s].bytes;
        const double end =
            std::max(earliest[s], ready[k - 1]) + cost.time(bytes);
        if (end < next[k]) {
          next[k] = end;
          first[k] = s;
        }
      }
    }
  };
  // The optimum over any number of buckets: finishing a prefix earlier
  // never delays the rest, so the prefix optima extend (each prefix may
  // take one more bucket, so n rounds collapse into one with earliest[s]
  // updated in place).
  llvm::SmallVector<double> best(n + 1, 0);
  for (unsigned k = 1; k <= n; ++k) {
    best[k] = std::numeric_limits<double>::infinity();
    double bytes = 0;
    for (unsigned s = k; s-- > 0;) {
      bytes += tasks[s].bytes;
      best[k] = std::min(best[k],
                         std::max(best[s], ready[k - 1]) + cost.time(bytes));
    }
  }
  // Round c gives the earliest end of each prefix in exactly c buckets; a
  // plan of c buckets ends at the later of that and the cores' bound, then
  // c calls of the computing thread. More buckets cannot help once the
  // exchanges end as early as with any count (the bound and the calls only
  // grow with c), or once the bound and the calls alone pass the best end
  // so far. Of the optimal ends the fewest buckets: each exchange costs
  // more than the model says (queueing, the ranks' skew), so among the
  // optimal plans the one with the fewest exchanges is the safest.
  llvm::SmallVector<double> earliest(n + 1,
                                     std::numeric_limits<double>::infinity());
  earliest[0] = 0;
  std::vector<llvm::SmallVector<unsigned>> firsts;
  llvm::SmallVector<double> ends, next;
  double bestEnd = std::numeric_limits<double>::infinity();
  for (unsigned buckets = 1; buckets <= n; ++buckets) {
    const double calls = double(buckets) * cost.callerCpu;
    const double bound = coresBound(tasks, buckets, cost);
    if (bound + calls > bestEnd * (1 + 1e-12))
      break;
    firsts.emplace_back();
    extend(earliest, next, firsts.back());
    std::swap(earliest, next);
    ends.push_back(std::max(earliest[n], bound) + calls);
    bestEnd = std::min(bestEnd, ends.back());
    if (earliest[n] <= best[n] * (1 + 1e-12))
      break;
  }
  unsigned rounds = 1;
  while (ends[rounds - 1] > bestEnd * (1 + 1e-12))
    ++rounds;
  MergePlan plan;
  for (unsigned k = n, round = rounds; k > 0; k = firsts[--round][k])
    plan.push_back(k);
  std::reverse(plan.begin(), plan.end());
  return plan;
}
