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

/// The cores' bound of any plan before its buckets are counted: the
/// computation and the CPU time per byte of every gradient.
double coresWork(llvm::ArrayRef<GradientTask> tasks,
                 const AllReduceCost &cost) {
  double work = 0;
  for (const GradientTask &task : tasks)
    work += task.backwardSeconds + cost.cpuPerByte * task.bytes;
  return work;
}

/// The cores' bound of a plan of BUCKETS buckets whose last one holds
/// LASTBYTES, from its CORESWORK: the computation, and the CPU time of the
/// exchanges before the last one (each one's startup, their bytes' CPU
/// time per byte). The last bucket starts once the backward pass has
/// ended, so it takes nothing from the computation.
double coresBound(double coresWork, unsigned buckets, double lastBytes,
                  const AllReduceCost &cost) {
  return coresWork + cost.cpuStartup * double(buckets - 1) -
         cost.cpuPerByte * lastBytes;
}

} // namespace

double AllReduceCost::interpolated(double bytes) const {
  if (measured.size() == 1 || bytes <= measured.front().first)
    return measured.front().second;
  // The segment that holds BYTES, or the last one beyond it.
  size_t upper = 1;
  while (upper + 1 < measured.size() && measured[upper].first < bytes)
    ++upper;
  const auto [x0, y0] = measured[upper - 1];
  const auto [x1, y1] = measured[upper];
  return y0 + (y1 - y0) / (x1 - x0) * (bytes - x0);
}

double AllReduceCost::atLeastTimed(double seconds, double bytes) const {
  return measured.empty() ? seconds : std::max(seconds, interpolated(bytes));
}

double AllReduceCost::time(double bytes) const {
  const double line =
      backwardLine ? backwardLine->at(bytes) : startup + perByte * bytes;
  const double seconds = atLeastTimed(line, bytes);
  return aloneLine ? std::max(seconds, aloneTime(bytes)) : seconds;
}

double AllReduceCost::aloneTime(double bytes) const {
  if (aloneLine)
    return atLeastTimed(aloneLine->at(bytes), bytes);
  return measured.empty() ? time(bytes) : interpolated(bytes);
}

double AllReduceCost::end(double start, double bytes,
                          double backwardEnd) const {
  const double shared = time(bytes);
  if (start + shared <= backwardEnd)
    return start + shared;
  const double alone = aloneTime(bytes);
  if (start >= backwardEnd)
    return start + alone;
  return backwardEnd + (1 - (backwardEnd - start) / shared) * alone;
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
    free = cost.end(start, bytes, ready.back());
    timeline.starts.push_back(start);
    timeline.ends.push_back(free);
    first = end;
  }
  return timeline;
}

double mlir::dtrain::dist::planEnd(llvm::ArrayRef<GradientTask> tasks,
                                   llvm::ArrayRef<unsigned> plan,
                                   AllReduceCost cost) {
  if (plan.empty())
    return 0;
  double lastBytes = 0;
  for (unsigned i = plan.size() > 1 ? plan[plan.size() - 2] : 0;
       i < tasks.size(); ++i)
    lastBytes += tasks[i].bytes;
  return std::max(
             simulatePlan(tasks, plan, cost).commEnd(),
             coresBound(coresWork(tasks, cost), plan.size(), lastBytes, cost)) +
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
    if (i + 1 < e && ready[i + 1] < start + cost.timeStartup())
      continue; // merging costs less waiting than a startup
    plan.push_back(i + 1);
    free = cost.end(start, bytes, ready.back());
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
  const double work = coresWork(tasks, cost);
  // When a bucket of BYTES that ends with gradient K - 1 ends, the
  // exchanges before it ending at FREE.
  auto bucketEnd = [&](double free, unsigned k, double bytes) {
    return cost.end(std::max(free, ready[k - 1]), bytes, ready.back());
  };
  // One round of the recurrence: from EARLIEST (the earliest end of the
  // exchanges of gradients [0, s) in some number of buckets, or infinity),
  // the earliest end of [0, k) in one more bucket (BUCKETS in all), and in
  // FIRST where that last bucket starts. For the whole step (k = n), the
  // later of that and the cores' bound, which depends on the last
  // bucket's bytes, and in COMMEND the earliest end of the exchanges
  // alone.
  auto extend = [&](llvm::ArrayRef<double> earliest, unsigned buckets,
                    llvm::SmallVectorImpl<double> &next,
                    llvm::SmallVectorImpl<unsigned> &first, double &commEnd) {
    next.assign(n + 1, std::numeric_limits<double>::infinity());
    first.assign(n + 1, 0);
    commEnd = std::numeric_limits<double>::infinity();
    for (unsigned k = 1; k <= n; ++k) {
      double bytes = 0;
      for (unsigned s = k; s-- > 0;) {
        bytes += tasks[s].bytes;
        double end = bucketEnd(earliest[s], k, bytes);
        if (k == n) {
          commEnd = std::min(commEnd, end);
          end = std::max(end, coresBound(work, buckets, bytes, cost));
        }
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
      best[k] = std::min(best[k], bucketEnd(best[s], k, bytes));
    }
  }
  // Round c gives the earliest end of each prefix in exactly c buckets; a
  // plan of c buckets ends at the later of that and the cores' bound, then
  // c calls of the computing thread. More buckets cannot help once the
  // bound (at least the computation and c - 1 CPU startups) and the calls
  // alone pass the best end so far, or, where the bound does not depend on
  // the last bucket's bytes (no CPU time per byte), once the exchanges end
  // as early as with any count (the bound and the calls only grow with
  // c). Of the optimal ends the fewest buckets: each exchange costs
  // more than the model says (queueing, the ranks' skew), so among the
  // optimal plans the one with the fewest exchanges is the safest.
  llvm::SmallVector<double> earliest(n + 1,
                                     std::numeric_limits<double>::infinity());
  earliest[0] = 0;
  std::vector<llvm::SmallVector<unsigned>> firsts;
  llvm::SmallVector<double> ends, next;
  double bestEnd = std::numeric_limits<double>::infinity();
  const double computation = ready.back();
  for (unsigned buckets = 1; buckets <= n; ++buckets) {
    const double calls = double(buckets) * cost.callerCpu;
    if (computation + double(buckets - 1) * cost.cpuStartup + calls >
        bestEnd * (1 + 1e-12))
      break;
    firsts.emplace_back();
    double commEnd;
    extend(earliest, buckets, next, firsts.back(), commEnd);
    std::swap(earliest, next);
    ends.push_back(earliest[n] + calls);
    bestEnd = std::min(bestEnd, ends.back());
    if (cost.cpuPerByte == 0 && commEnd <= best[n] * (1 + 1e-12))
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
