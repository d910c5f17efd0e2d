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
/// [...], "allreduce_bytes": [...], "allreduce_s": [...], ...} (the timed
/// all-reduces are optional; other keys are ignored).
struct Profile {
  AllReduceCost cost;
  std::vector<double> computeSeconds;
  /// The rank count the cost was measured at ("ranks"), if given.
  std::optional<int64_t> ranks;
};

/// Reads the profile at PATH; errors are reported at LOC, naming OPTION.
FailureOr<Profile> readProfile(StringRef path, Location loc,
                               StringRef option);

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

} // namespace mlir::dtrain::dist

#endif // DTRAIN_DIST_COSTMODEL_H
