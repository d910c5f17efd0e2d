//===- AllReduce.cpp - all-reduce entry points ----------------------------===//
//
// Argument validation, the cross-rank consistency check, algorithm choice,
// and the MPI algorithm (MPI_Allreduce / MPI_Iallreduce). Every all-reduce,
// synchronous or not, runs the same three stages:
//
//   prepare()  validate, resolve DEFAULT, check the ranks agree
//   launch     MPI: MPI_Allreduce, or MPI_Iallreduce completed by wait;
//              RING: ringAllReduce (always blocking, see below)
//   finishReduction()  MEAN's division, once the data has arrived
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace dtrain::rt;

namespace {

/// Which entry point started the all-reduce. Part of the consistency check:
/// a blocking MPI_Allreduce never matches an MPI_Iallreduce on another rank.
enum Call : int64_t { CallBlocking = 0, CallStart = 1 };

struct AllReduceArgs {
  dtrain_rt_comm_t *comm;
  char *buffer;
  int64_t count;
  int32_t dtype;
  int32_t reduction;
  int32_t algorithm; // resolved: MPI or RING
};

std::atomic<int64_t> maxCount{INT_MAX};

//===--- Environment ------------------------------------------------------===//

int32_t readAlgorithmEnv() {
  const char *value = std::getenv("DTRAIN_ALLREDUCE");
  if (!value || !*value || !std::strcmp(value, "mpi"))
    return DTRAIN_RT_ALLREDUCE_MPI;
  if (!std::strcmp(value, "ring"))
    return DTRAIN_RT_ALLREDUCE_RING;
  fatal(nullptr,
        "DTRAIN_ALLREDUCE='%s' is not a valid all-reduce algorithm "
        "(accepted: mpi, ring; unset means mpi)",
        value);
}

bool readCheckEnv() {
  const char *value = std::getenv("DTRAIN_CHECK_COLLECTIVES");
  if (!value || !*value || !std::strcmp(value, "1"))
    return true;
  if (!std::strcmp(value, "0"))
    return false;
  fatal(nullptr,
        "DTRAIN_CHECK_COLLECTIVES='%s' is not valid (accepted: 0 to "
        "disable the cross-rank argument check, 1 or unset to "
        "enable it)",
        value);
}

/// The environment is read once per process.
int32_t defaultAlgorithm() {
  static const int32_t algorithm = readAlgorithmEnv();
  return algorithm;
}

bool collectiveChecksEnabled() {
  static const bool enabled = readCheckEnv();
  return enabled;
}

//===--- Validation and the consistency check -----------------------------===//

AllReduceArgs validate(const char *fn, dtrain_rt_comm_t *comm, void *buffer,
                       int64_t count, int32_t dtype, int32_t reduction,
                       int32_t algorithm) {
  ensureInitialized();
  if (!comm)
    fatal(nullptr, "%s: comm is NULL (use dtrain_rt_comm_world())", fn);
  if (!isValidDType(dtype)) {
    // The integer types are known (array files) but not reducible.
    std::string what = isKnownDType(dtype)
                           ? "cannot all-reduce dtype " +
                                 std::to_string(dtype) + " (" +
                                 dtypeName(dtype) + ")"
                           : "unknown dtype " + std::to_string(dtype);
    fatal(comm, "%s: %s (accepted: %d = f32, %d = f64, %d = f16, %d = bf16)",
          fn, what.c_str(), DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16,
          DTRAIN_RT_BF16);
  }
  if (!isValidReduction(reduction))
    fatal(comm,
          "%s: unknown reduction %d (accepted: %d = sum, %d = mean, "
          "%d = max)",
          fn, reduction, DTRAIN_RT_SUM, DTRAIN_RT_MEAN, DTRAIN_RT_MAX);
  if (!isValidAlgorithm(algorithm))
    fatal(comm,
          "%s: unknown all-reduce algorithm %d (accepted: %d = "
          "default, %d = mpi, %d = ring)",
          fn, algorithm, DTRAIN_RT_ALLREDUCE_DEFAULT, DTRAIN_RT_ALLREDUCE_MPI,
          DTRAIN_RT_ALLREDUCE_RING);
  if (count < 0)
    fatal(comm, "%s: count is %lld (accepted: count >= 0)", fn,
          (long long)count);
  if (!buffer && count > 0)
    fatal(comm,
          "%s: buffer is NULL with count %lld (accepted: NULL only "
          "when count is 0)",
          fn, (long long)count);
  if (algorithm == DTRAIN_RT_ALLREDUCE_DEFAULT)
    algorithm = defaultAlgorithm();
  AllReduceArgs args;
  args.comm = comm;
  args.buffer = static_cast<char *>(buffer);
  args.count = count;
  args.dtype = dtype;
  args.reduction = reduction;
  args.algorithm = algorithm;
  return args;
}

/// Renders value V of consistency field FIELD for a message.
std::string describe(int field, int64_t v) {
  const char *name = nullptr;
  switch (field) {
  case 1:
    name = dtypeName(v);
    break;
  case 2:
    name = reductionName(v);
    break;
  case 3:
    name = algorithmName(v);
    break;
  case 4:
    name =
        v == CallStart ? "dtrain_rt_all_reduce_start" : "dtrain_rt_all_reduce";
    break;
  }
  std::string s = std::to_string(v);
  return name ? s + " (" + name + ")" : s;
}

/// Aborts the job when the ranks of COMM disagree on the arguments. Costs
/// one MPI_Allreduce of 10 int64; builds the message only on mismatch.
void checkConsistency(const AllReduceArgs &a, Call call) {
  if (!collectiveChecksEnabled() || a.comm->size == 1)
    return;
  constexpr int n = 5;
  static const char *const fields[n] = {"count", "dtype", "reduction",
                                        "algorithm", "call"};
  const int64_t local[n] = {a.count, a.dtype, a.reduction, a.algorithm, call};
  // MAX over [x, -x] gives every rank max(x) and -min(x).
  int64_t both[2 * n];
  for (int i = 0; i < n; ++i) {
    both[i] = local[i];
    both[n + i] = -local[i];
  }
  DTRAIN_MPI_CALL(a.comm, MPI_Allreduce, MPI_IN_PLACE, both, 2 * n, MPI_INT64_T,
                  MPI_MAX, a.comm->mpi);
  bool same = true;
  for (int i = 0; i < n; ++i)
    same &= both[i] == -both[n + i];
  if (same)
    return;

  // Every rank got here; gather all values to name the ranks involved.
  const int size = a.comm->size;
  std::vector<int64_t> all(size_t(size) * n);
  DTRAIN_MPI_CALL(a.comm, MPI_Allgather, local, n, MPI_INT64_T, all.data(), n,
                  MPI_INT64_T, a.comm->mpi);
  if (a.comm->rank != 0) {
    // Rank 0 prints the message and aborts the job; should that somehow
    // not take this rank down, abort on our own after a grace period.
    std::this_thread::sleep_for(std::chrono::seconds(10));
    fatal(a.comm, "all_reduce arguments differ across ranks (see rank 0)");
  }
  std::string message;
  for (int i = 0; i < n; ++i) {
    int64_t max = both[i], min = -both[n + i];
    if (min == max)
      continue;
    int minRank = 0, maxRank = 0;
    while (all[size_t(minRank) * n + i] != min)
      ++minRank;
    while (all[size_t(maxRank) * n + i] != max)
      ++maxRank;
    if (!message.empty())
      message += "; ";
    message += std::string(fields[i]) + " ranges " + std::to_string(min) +
               ".." + std::to_string(max) + " (rank " +
               std::to_string(minRank) + ": " + describe(i, min) + ", rank " +
               std::to_string(maxRank) + ": " + describe(i, max) + ")";
  }
  fatal(a.comm,
        "all_reduce arguments differ across ranks: %s; every rank must pass "
        "the same count, dtype, reduction and algorithm to the same entry "
        "point",
        message.c_str());
}

AllReduceArgs prepare(const char *fn, Call call, dtrain_rt_comm_t *comm,
                      void *buffer, int64_t count, int32_t dtype,
                      int32_t reduction, int32_t algorithm) {
  AllReduceArgs a =
      validate(fn, comm, buffer, count, dtype, reduction, algorithm);
  checkConsistency(a, call);
  return a;
}

//===--- The MPI algorithm ------------------------------------------------===//

/// Calls FN(first element, element count) for consecutive pieces of at
/// most maxMessageCount() elements (MPI counts are int).
template <class Fn> void forEachMessage(const AllReduceArgs &a, Fn &&fn) {
  const int64_t max = maxMessageCount();
  const int64_t elemSize = dtypeSize(a.dtype);
  for (int64_t first = 0; first < a.count; first += max)
    fn(a.buffer + first * elemSize, int(std::min(max, a.count - first)));
}

void mpiAllReduce(const AllReduceArgs &a) {
  const MPIReduction r = mpiReduction(a.dtype, a.reduction);
  forEachMessage(a, [&](char *data, int n) {
    DTRAIN_MPI_CALL(a.comm, MPI_Allreduce, MPI_IN_PLACE, data, n, r.type, r.op,
                    a.comm->mpi);
  });
}

void mpiStartAllReduce(const AllReduceArgs &a,
                       std::vector<MPI_Request> &requests) {
  const MPIReduction r = mpiReduction(a.dtype, a.reduction);
  forEachMessage(a, [&](char *data, int n) {
    requests.push_back(MPI_REQUEST_NULL);
    DTRAIN_MPI_CALL(a.comm, MPI_Iallreduce, MPI_IN_PLACE, data, n, r.type, r.op,
                    a.comm->mpi, &requests.back());
  });
}

void finish(const AllReduceArgs &a) {
  finishReduction(a.dtype, a.reduction, a.buffer, a.count, a.comm->size);
}

} // namespace

/// A started all-reduce: the MPI requests still in flight (none for RING)
/// and the arguments finishReduction needs once they complete.
struct dtrain_rt_request {
  AllReduceArgs args;
  std::vector<MPI_Request> pending;
};

int64_t dtrain::rt::maxMessageCount() {
  return maxCount.load(std::memory_order_relaxed);
}

void dtrain::rt::setMaxMessageCountForTesting(int64_t count) {
  maxCount.store(count > 0 && count < INT_MAX ? count : INT_MAX,
                 std::memory_order_relaxed);
}

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_all_reduce(dtrain_rt_comm_t *comm, void *buffer, int64_t count,
                          int32_t dtype, int32_t reduction) {
  dtrain_rt_all_reduce_with(comm, buffer, count, dtype, reduction,
                            DTRAIN_RT_ALLREDUCE_DEFAULT);
}

void dtrain_rt_all_reduce_with(dtrain_rt_comm_t *comm, void *buffer,
                               int64_t count, int32_t dtype, int32_t reduction,
                               int32_t algorithm) {
  const AllReduceArgs a = prepare("dtrain_rt_all_reduce", CallBlocking, comm,
                                  buffer, count, dtype, reduction, algorithm);
  if (a.algorithm == DTRAIN_RT_ALLREDUCE_RING)
    ringAllReduce(a.comm, a.buffer, a.count, a.dtype, a.reduction);
  else
    mpiAllReduce(a);
  finish(a);
}

dtrain_rt_request_t *dtrain_rt_all_reduce_start(dtrain_rt_comm_t *comm,
                                                void *buffer, int64_t count,
                                                int32_t dtype,
                                                int32_t reduction) {
  return dtrain_rt_all_reduce_start_with(comm, buffer, count, dtype, reduction,
                                         DTRAIN_RT_ALLREDUCE_DEFAULT);
}

dtrain_rt_request_t *
dtrain_rt_all_reduce_start_with(dtrain_rt_comm_t *comm, void *buffer,
                                int64_t count, int32_t dtype,
                                int32_t reduction, int32_t algorithm) {
  const AllReduceArgs a =
      prepare("dtrain_rt_all_reduce_start", CallStart, comm, buffer, count,
              dtype, reduction, algorithm);
  auto *request = new dtrain_rt_request{a, {}};
  // RING has no progress engine yet (no progress thread), so it runs to
  // completion here and the request carries no MPI requests; only MEAN's
  // division is left for dtrain_rt_wait, as for MPI.
  if (a.algorithm == DTRAIN_RT_ALLREDUCE_RING)
    ringAllReduce(a.comm, a.buffer, a.count, a.dtype, a.reduction);
  else
    mpiStartAllReduce(a, request->pending);
  return request;
}

void dtrain_rt_wait(dtrain_rt_request_t *request) {
  ensureInitialized();
  if (!request) {
    fatal(nullptr, "dtrain_rt_wait: request is NULL (accepted: a request "
                   "returned by dtrain_rt_all_reduce_start and not yet "
                   "waited for)");
  }
  const AllReduceArgs &a = request->args;
  if (!request->pending.empty())
    DTRAIN_MPI_CALL(a.comm, MPI_Waitall, int(request->pending.size()),
                    request->pending.data(), MPI_STATUSES_IGNORE);
  finish(a);
  delete request;
}
