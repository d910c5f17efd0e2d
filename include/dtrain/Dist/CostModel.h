//===- CostModel.h - the cost model shared by the Dist passes ---*- C++ -*-===//
//
// What the Dist passes know about a step's time: its gradient exchanges
// (the tensor comm.all_reduce_start / comm.wait pairs) with the
// computation before each, estimated from the ops or read from a measured
// profile (a trainer's --profile), and the alpha-beta cost of a ring
// all-reduce on a network of P ranks.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_DIST_COSTMODEL_H
#define DTRAIN_DIST_COSTMODEL_H

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dist/MergePlanner.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include "dtrain_rt_line_fit.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::dtrain::dist {

/// Speeds that turn ops into seconds: matmul and convolutions (with their
/// gradients) at FLOPS (2 flops per multiply-add), every other op at
/// ELEMENTS result elements per second.
struct ComputeSpeed {
  double flops = 2e10, elements = 1e9;
};

/// Estimated seconds of OP.
double estimateSeconds(Operation *op, ComputeSpeed speed);

/// One tensor exchange of a step. Op handles: their accessors are not
/// const.
struct Exchange {
  mutable comm::AllReduceStartOp start;
  mutable comm::WaitOp wait;
  RankedTensorType type;
  /// Bytes, and the computation since the previous exchange started (the
  /// first: since the step started).
  GradientTask task;
};

/// The exchanges of BODY in order (static tensor starts with one wait in
/// the block), and in TAILSECONDS the computation after the last one.
SmallVector<Exchange> collectExchanges(Block &body, ComputeSpeed speed,
                                       double *tailSeconds = nullptr);

/// A trainer's --profile file: {"startup_s", "per_byte_s", "compute_s":
/// [...], "allreduce_bytes": [...], "allreduce_s": [...],
/// "select_elements_per_s", "exchange_cpu_startup_s",
/// "exchange_cpu_per_byte_s", "exchange_caller_cpu_s", "host_ranks",
/// "host_threads", "host_cores", "backward_startup_s", ...,
/// "backward_exchanges": [[bytes, seconds, count], ...], ...} (all but the
/// first three are optional; other keys are ignored). Where host_threads
/// (default host_ranks) >= host_cores, the computing threads fill the cores:
/// the exchanges' CPU time times the ranks per core is the cost's cpuStartup
/// and cpuPerByte, and the computing thread's per exchange times the ranks
/// per core its callerCpu.
struct Profile {
  AllReduceCost cost;
  std::vector<double> computeSeconds;
  /// The computation after the last exchange ("tail_s": the updates), if
  /// given.
  std::optional<double> tailSeconds;
  /// The rank count the cost was measured at ("ranks"), if given.
  std::optional<int64_t> ranks;
  /// Elements per second of a sparsified exchange's residual update and
  /// Gaussian-k selection ("select_elements_per_s"), if given.
  std::optional<double> selectElementsPerSecond;
  /// The steps' exchanges that ran within the backward pass
  /// ("backward_exchanges") and after it ("alone_exchanges"), which the
  /// cost's backward and alone lines are fitted to, if given.
  std::optional<std::vector<::dtrain::rt::LineSample>> backwardSamples,
      aloneSamples;
  /// The bytes a step exchanges (the sum of "exchange_bytes"), if given:
  /// the same however a trainer merges them.
  std::optional<double> stepBytes;
};

/// Reads the profile at PATH; errors are reported at LOC, naming OPTION.
/// With REFITPATHS (profiles of the same job's trainer merged: planned
/// with PATH, say), the cost's backward and alone lines are refitted to
/// the exchanges of all of them, whose sizes then span the buckets'.
FailureOr<Profile> readProfile(StringRef path, ArrayRef<std::string> refitPaths,
                               Location loc, StringRef option);

/// For a pass's initialize(): reads its profile= option (PATH, with
/// refit-profiles= REFITPATHS) into PROFILE once for every function, so a
/// missing or malformed file fails the pass whatever the input holds. An
/// empty PATH leaves PROFILE empty.
LogicalResult readProfileOption(MLIRContext *context, StringRef path,
                                ArrayRef<std::string> refitPaths,
                                StringRef option,
                                std::optional<Profile> &profile);

/// A network for ring all-reduces: per-message latency (s) and link
/// bandwidth (bytes/s).
struct Network {
  double latency, bandwidth;
};

/// The named networks: 1gbe, 10gbe, 100gb-ib (see the pass docs).
std::optional<Network> lookupNetwork(StringRef name);

/// A ring all-reduce over P ranks of NETWORK: 2(P-1) latencies, and
/// 2(P-1)/P of the bytes over each link.
AllReduceCost ringAllReduceCost(int64_t ranks, Network network);

/// The network that gives a measured all-reduce COST on RANKS ranks (>= 2)
/// under the ring model (its inverse).
Network networkOfRing(AllReduceCost cost, int64_t ranks);

/// The entries a sparsified exchange of N elements sends at DENSITY:
/// max(1, floor(density * n)).
int64_t sparseK(double density, int64_t n);

/// Seconds one exchange of an f32 gradient of N elements takes on RANKS
/// ranks of NETWORK: dense, or sparsified to K entries (8 bytes each: an
/// int32 index and an f32 value), which adds a pass over the N elements to
/// add the residual and select, at ELEMENTSPERSECOND.
struct SparseExchangeCost {
  Network network;
  int64_t ranks;
  double elementsPerSecond;

  /// The less of a ring (2(P-1) messages, 2(P-1)/P of the bytes per link)
  /// and recursive doubling (log2(P) messages of all the bytes).
  double dense(int64_t n) const;
  /// The residual update and selection over N elements.
  double select(int64_t n) const { return double(n) / elementsPerSecond; }
  /// All-gather: (P-1) messages of 8k bytes.
  double allGather(int64_t n, int64_t k) const;
  /// gTop-k: a tree of log2(P) merges (8k bytes each), a broadcast of the
  /// k global indices and a recursive-doubling all-reduce of their k
  /// values (log2(P) messages of 4k bytes each).
  double gTopK(int64_t n, int64_t k) const;
  /// The messages of one exchange, each a latency: 3 log2(P) for gTop-k
  /// (GTOPK), else P-1.
  double messages(bool gTopK) const;
  /// The bytes one exchange sends over a rank's links, in units of 8k (an
  /// index and a value per entry): 2 log2(P) for gTop-k, else P-1.
  double entryVolumes(bool gTopK) const;
  /// The cost of a bucket of f32 gradients sparsified at DENSITY as a
  /// function of its bytes (k = density * n, unrounded): affine, so that
  /// the merge planners apply to sparse buckets (OMGS-SGD).
  AllReduceCost bucketCost(double density, bool gTopK) const;
};

/// VALUE as printf's %g writes it (0.001, 1.5), for the passes' option
/// errors (diagnostics take no llvm::format).
std::string formatShortNumber(double value);

/// Whether VALUE, or a slice or reshape of it (a bucket's member), is
/// returned by its function: the step's averaged loss, which must stay
/// exact.
bool feedsReturn(Value value);

} // namespace mlir::dtrain::dist

#endif // DTRAIN_DIST_COSTMODEL_H
