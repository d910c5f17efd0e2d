//===- AllReduce.cpp - all-reduce entry points ----------------------------===//
//
// Argument validation, algorithm choice, and the MPI algorithm (the
// transport's all-reduce: MPI_Allreduce unless another transport is
// installed). Every all-reduce, blocking or started, is validated on the
// caller's thread and then runs on the communication thread
// (CommThread.cpp) in three stages:
//
//   checkConsistency()  the ranks agree on the arguments
//   exchange            MPI: the transport's all-reduce; RING: ringAllReduce
//   finishReduction()   MEAN's division, unless the transport's
//                       all-reduce averaged (reduces_mean)
//
// A blocking all-reduce is a started one waited for at once.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

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

/// DEFAULT's choice: a DTRAIN_RT_ALLREDUCE_* algorithm, or 0 for by size.
int32_t readAlgorithmEnv() {
  const char *value = std::getenv("DTRAIN_ALLREDUCE");
  if (!value || !*value || !std::strcmp(value, "auto"))
    return 0;
  if (!std::strcmp(value, "mpi"))
    return DTRAIN_RT_ALLREDUCE_MPI;
  if (!std::strcmp(value, "ring"))
    return DTRAIN_RT_ALLREDUCE_RING;
  fatal(nullptr,
        "DTRAIN_ALLREDUCE='%s' is not a valid all-reduce algorithm "
        "(accepted: auto, mpi, ring; unset means auto)",
        value);
}

/// The environment is read once per process; by size, the transport
/// says from where its ring pays.
int32_t defaultAlgorithm(int64_t bytes) {
  static const int32_t algorithm = readAlgorithmEnv();
  if (algorithm)
    return algorithm;
  const int64_t ringFrom = transport().ringFromBytes();
  return ringFrom > 0 && bytes >= ringFrom ? DTRAIN_RT_ALLREDUCE_RING
                                           : DTRAIN_RT_ALLREDUCE_MPI;
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
    algorithm = defaultAlgorithm(count * dtypeSize(dtype));
  AllReduceArgs args;
  args.comm = comm;
  args.buffer = static_cast<char *>(buffer);
  args.count = count;
  args.dtype = dtype;
  args.reduction = reduction;
  args.algorithm = algorithm;
  return args;
}

/// Aborts the job when the ranks of A.comm disagree on the arguments.
void checkConsistency(const AllReduceArgs &a, Call call) {
  checkAgreement(
      a.comm, "all_reduce",
      {{"count", a.count},
       {"dtype", a.dtype, dtypeName},
       {"reduction", a.reduction, reductionName},
       {"algorithm", a.algorithm, algorithmName},
       {"call", call, [](int64_t v) {
          return v == CallStart ? "dtrain_rt_all_reduce_start"
                                : "dtrain_rt_all_reduce";
        }}});
}

//===--- The MPI algorithm ------------------------------------------------===//

/// The transport's all-reduce on consecutive pieces of at most
/// maxMessageCount() elements. MEAN: the transport's own where it reduces
/// means and MAYAVERAGE (returns true), else a sum that the caller
/// divides.
bool transportAllReduce(const AllReduceArgs &a, bool mayAverage) {
  const Transport t = transport();
  const bool average =
      a.reduction == DTRAIN_RT_MEAN && mayAverage && t.reducesMean();
  const int32_t reduction = a.reduction == DTRAIN_RT_MAX ? DTRAIN_RT_MAX
                            : average                    ? DTRAIN_RT_MEAN
                                                         : DTRAIN_RT_SUM;
  const int64_t max = maxMessageCount();
  const int64_t elemSize = dtypeSize(a.dtype);
  for (int64_t first = 0; first < a.count; first += max)
    t.allReduce(a.comm, a.buffer + first * elemSize,
                std::min(max, a.count - first), a.dtype, reduction);
  return average;
}

/// A's exchange by its algorithm; whether MEAN's division is done (see
/// transportAllReduce).
bool exchange(const AllReduceArgs &a, bool mayAverage) {
  if (a.algorithm == DTRAIN_RT_ALLREDUCE_RING) {
    ringAllReduce(a.comm, a.buffer, a.count, a.dtype, a.reduction);
    return false;
  }
  return transportAllReduce(a, mayAverage);
}

} // namespace

/// An all-reduce as the communication thread runs it: the cross-rank check,
/// the exchange, and MEAN's division, all off the caller's thread.
struct AllReduceRequest final : dtrain_rt_request {
  AllReduceArgs args;
  Call call;

  AllReduceRequest(const AllReduceArgs &a, Call call)
      : dtrain_rt_request(AllReduce, a.comm, a.count * dtypeSize(a.dtype)),
        args(a), call(call) {}

  void run() override {
    checkConsistency(args, call);
    if (!exchange(args, /*mayAverage=*/true))
      finishReduction(args.dtype, args.reduction, args.buffer, args.count,
                      args.comm->size);
  }
};

void dtrain::rt::allReduceInPlace(dtrain_rt_comm_t *comm, void *buffer,
                                  int64_t count, int32_t dtype,
                                  int32_t reduction) {
  exchange({comm, static_cast<char *>(buffer), count, dtype, reduction,
            defaultAlgorithm(count * dtypeSize(dtype))},
           /*mayAverage=*/false);
}

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
  AllReduceRequest request(validate("dtrain_rt_all_reduce", comm, buffer,
                                     count, dtype, reduction, algorithm),
                            CallBlocking);
  submitCollective(&request);
  waitCollective(&request);
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
  auto *request = new AllReduceRequest(
      validate("dtrain_rt_all_reduce_start", comm, buffer, count, dtype,
               reduction, algorithm),
      CallStart);
  submitCollective(request);
  return request;
}

void dtrain_rt_wait(dtrain_rt_request_t *request) {
  ensureInitialized();
  if (!request) {
    fatal(nullptr, "dtrain_rt_wait: request is NULL (accepted: a request "
                   "returned by dtrain_rt_all_reduce_start and not yet "
                   "waited for)");
  }
  waitCollective(request);
  delete request;
}

int32_t dtrain_rt_test(dtrain_rt_request_t *request) {
  ensureInitialized();
  if (!request)
    fatal(nullptr, "dtrain_rt_test: request is NULL (accepted: a request "
                   "returned by dtrain_rt_all_reduce_start and not yet "
                   "waited for)");
  return collectiveDone(request);
}
