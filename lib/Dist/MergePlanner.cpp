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

} // namespace

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
  const llvm::SmallVector<double> ready = readyTimes(tasks);
  // earliest[k]: the earliest end of the exchanges of gradients [0, k);
  // first[k]: where the last bucket of that plan starts.
  llvm::SmallVector<double> earliest(n + 1, 0);
  llvm::SmallVector<unsigned> first(n + 1, 0);
  for (unsigned k = 1; k <= n; ++k) {
    earliest[k] = std::numeric_limits<double>::infinity();
    double bytes = 0;
    for (unsigned s = k; s-- > 0;) {
      bytes += tasks[s].bytes;
      const double end =
          std::max(earliest[s], ready[k - 1]) + cost.time(bytes);
      if (end < earliest[k]) {
        earliest[k] = end;
        first[k] = s;
      }
    }
  }
  MergePlan plan;
  for (unsigned k = n; k > 0; k = first[k])
    plan.push_back(k);
  std::reverse(plan.begin(), plan.end());
  // Among the optimal plans, fewer merges: a bucket costs copies that the
  // model leaves out, and the prefix optimum may merge exchanges whose
  // earlier end changes nothing downstream. Keep every cut that does not
  // delay the end.
  const double best = earliest[n] * (1 + 1e-12);
  for (unsigned cut = 1; cut < n; ++cut) {
    auto at = std::lower_bound(plan.begin(), plan.end(), cut);
    if (*at == cut)
      continue;
    MergePlan split(plan);
    split.insert(split.begin() + (at - plan.begin()), cut);
    if (simulatePlan(tasks, split, cost).commEnd() <= best)
      plan = std::move(split);
  }
  return plan;
}
