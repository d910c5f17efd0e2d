//===- Sparsify.cpp - top-k sparsification of gradient exchanges ----------===//
//
// Implements --dtrain-sparsify: each gradient exchange (a tensor
// comm.all_reduce_start / comm.wait pair) becomes a sparse one with a
// residual that the step carries as optimizer state (error feedback).
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "dtrain/Dist/CostModel.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_SPARSIFY
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::dist;

namespace {

struct SparsifyPass : public dist::impl::SparsifyBase<SparsifyPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The cheapest of dense, all-gather and gTop-k for an exchange of
  /// ELEMENTS at RANKS ranks under the model (aggregate=auto).
  comm::SparseAggregate cheapest(int64_t elements, int64_t ranks) const;

  /// aggregate=auto at run time: the cheapest at every rank count from 2
  /// to kMaxRanks, as runs (the first rank count of each, its aggregate).
  SmallVector<std::pair<int64_t, comm::SparseAggregate>>
  cheapestByRanks(int64_t elements) const;

  /// The aggregate value of an exchange of ELEMENTS on COMMUNICATOR for
  /// `comm.sparse_all_reduce_start ... aggregate <auto>`, built before B's
  /// insertion point from the rank count and RUNS.
  Value buildChosenAggregate(
      OpBuilder &b, Location loc, Value communicator,
      ArrayRef<std::pair<int64_t, comm::SparseAggregate>> runs) const;

  /// k as an index value before B's insertion point: the warm-up stage's
  /// for STEP (null without warm-up), else the final one.
  Value buildK(OpBuilder &b, Location loc, int64_t elements, Value step) const;

  /// The largest rank count aggregate=auto plans for at run time (beyond
  /// it, its choice there).
  static constexpr int64_t kMaxRanks = 1 << 16;

  comm::SelectMethod selectMethod = comm::SelectMethod::gaussian;
  std::optional<comm::SparseAggregate> fixedAggregate;
  /// aggregate=auto's model: the network and the selection speed.
  Network autoNetwork;
  double selectSpeed = 0;
};

/// The element counts of the member gradients of BUCKET in order, as
/// --dtrain-merge-gradients fills a bucket (flat slices inserted into an
/// empty tensor), when there is more than one; else none.
SmallVector<int64_t> bucketMembers(Value bucket) {
  auto type = cast<RankedTensorType>(bucket.getType());
  SmallVector<std::pair<int64_t, int64_t>> slices; // (offset, size)
  Value filled = bucket;
  while (auto insert = filled.getDefiningOp<tensor::InsertSliceOp>()) {
    if (type.getRank() != 1 || insert.getStaticOffsets().size() != 1 ||
        ShapedType::isDynamic(insert.getStaticOffsets()[0]) ||
        ShapedType::isDynamic(insert.getStaticSizes()[0]) ||
        insert.getStaticStrides()[0] != 1)
      return {};
    slices.push_back({insert.getStaticOffsets()[0], insert.getStaticSizes()[0]});
    filled = insert.getDest();
  }
  if (slices.size() < 2 || !filled.getDefiningOp<tensor::EmptyOp>())
    return {};
  llvm::sort(slices);
  SmallVector<int64_t> members;
  int64_t end = 0;
  for (auto [offset, size] : slices) {
    if (offset != end)
      return {}; // not a tiling of the bucket
    members.push_back(size);
    end += size;
  }
  if (end != type.getNumElements())
    return {};
  return members;
}

} // namespace

LogicalResult SparsifyPass::initialize(MLIRContext *context) {
  Location loc = UnknownLoc::get(context);
  auto error = [&]() { return emitError(loc) << "--dtrain-sparsify: "; };
  if (!(density > 0 && density <= 1))
    return error() << "density=" << formatShortNumber(density)
                   << " is not in (0, 1]";
  for (double stage : warmup)
    if (!(stage > 0 && stage <= 1))
      return error() << "warmup density " << formatShortNumber(stage)
                     << " is not in (0, 1]";
  if (!warmup.empty() && warmupSteps <= 0)
    return error() << "warmup needs warmup-steps=N with N >= 1 (steps per "
                      "warm-up stage)";
  if (warmup.empty() && warmupSteps != 0)
    return error() << "warmup-steps needs warmup=D1,D2,... (the stages' "
                      "densities)";
  std::optional<comm::SelectMethod> method =
      comm::symbolizeSelectMethod(select);
  if (!method)
    return error() << "select '" << select
                   << "' is not valid (accepted: exact, gaussian, dgc, "
                      "random)";
  selectMethod = *method;
  if (granularity != "bucket" && granularity != "tensor")
    return error() << "granularity '" << granularity
                   << "' is not valid (accepted: bucket, tensor)";
  if (aggregate != "auto") {
    fixedAggregate = comm::symbolizeSparseAggregate(aggregate);
    if (fixedAggregate != comm::SparseAggregate::allgather &&
        fixedAggregate != comm::SparseAggregate::gtopk)
      return error() << "aggregate '" << aggregate
                     << "' is not valid (accepted: allgather, gtopk, auto)";
    return success();
  }
  if (ranks == 1 || ranks < 0)
    return error() << "aggregate=auto needs ranks >= 2, or 0 to choose at "
                      "run time (got "
                   << int64_t(ranks) << ")";
  if (!(elementsPerSecond > 0))
    return error() << "elements-per-second must be positive";
  std::optional<Network> net;
  selectSpeed = elementsPerSecond;
  if (network == "profile") {
    if (profile.empty())
      return error() << "network=profile needs profile=FILE.json";
    FailureOr<Profile> measured =
        readProfile(profile, {}, loc, "--dtrain-sparsify");
    if (failed(measured))
      return failure();
    // The rank count the cost was measured at: the profile's, else ranks=.
    const int64_t p = measured->ranks.value_or(ranks);
    if (p < 2 || !(measured->cost.perByte > 0))
      return error() << "profile '" << profile
                     << "' has no all-reduce cost over 2 or more ranks (its "
                        "\"ranks\", or ranks=P without one)";
    net = networkOfRing(measured->cost, p);
    if (measured->selectElementsPerSecond)
      selectSpeed = *measured->selectElementsPerSecond;
  } else {
    net = lookupNetwork(network);
    if (!net)
      return error() << "network '" << network
                     << "' is not valid (accepted: 1gbe, 10gbe, 100gb-ib, "
                        "profile)";
  }
  autoNetwork = *net;
  return success();
}

comm::SparseAggregate SparsifyPass::cheapest(int64_t elements,
                                             int64_t ranks) const {
  const SparseExchangeCost costs{autoNetwork, ranks, selectSpeed};
  const int64_t k = sparseK(density, elements);
  const double dense = costs.dense(elements);
  const double allGather = costs.allGather(elements, k);
  const double gTopK = costs.gTopK(elements, k);
  if (dense <= std::min(allGather, gTopK))
    return comm::SparseAggregate::dense;
  return allGather <= gTopK ? comm::SparseAggregate::allgather
                            : comm::SparseAggregate::gtopk;
}

SmallVector<std::pair<int64_t, comm::SparseAggregate>>
SparsifyPass::cheapestByRanks(int64_t elements) const {
  SmallVector<std::pair<int64_t, comm::SparseAggregate>> runs;
  for (int64_t p = 2; p <= kMaxRanks; ++p) {
    comm::SparseAggregate choice = cheapest(elements, p);
    if (runs.empty() || runs.back().second != choice)
      runs.push_back({p, choice});
  }
  return runs;
}

Value SparsifyPass::buildChosenAggregate(
    OpBuilder &b, Location loc, Value communicator,
    ArrayRef<std::pair<int64_t, comm::SparseAggregate>> runs) const {
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value ranks =
      comm::SizeOp::create(b, loc, b.getIndexType(), communicator);
  // Fewer than 2 ranks exchange nothing: the first run's choice.
  Value chosen = constant(int64_t(runs.front().second));
  for (auto [from, choice] : runs.drop_front()) {
    Value reached = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                          ranks, constant(from));
    chosen =
        arith::SelectOp::create(b, loc, reached, constant(int64_t(choice)),
                                chosen);
  }
  return chosen;
}

Value SparsifyPass::buildK(OpBuilder &b, Location loc, int64_t elements,
                           Value step) const {
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value k = constant(sparseK(density, elements));
  if (!step)
    return k;
  // Stages from the last: k = step < (s+1)*W ? k_s : k.
  for (int64_t s = int64_t(warmup.size()) - 1; s >= 0; --s) {
    Value inStage =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, step,
                              constant((s + 1) * warmupSteps));
    k = arith::SelectOp::create(
        b, loc, inStage, constant(sparseK(warmup[size_t(s)], elements)), k);
  }
  return k;
}

void SparsifyPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  // The gradient exchanges: f32 tensor starts with one wait, whose result
  // the step does not return (the averaged loss stays dense, and so does a
  // bucket that holds it).
  struct Pair {
    comm::AllReduceStartOp start;
    comm::WaitOp wait;
  };
  SmallVector<Pair> pairs;
  func.walk([&](comm::AllReduceStartOp start) {
    auto type = dyn_cast<RankedTensorType>(start.getInput().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
        start.getReduction() == comm::ReductionKind::max ||
        !start.getRequest().hasOneUse())
      return;
    auto wait = dyn_cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
    if (!wait || !wait.getResult() || feedsReturn(wait.getResult()))
      return;
    pairs.push_back({start, wait});
  });
  if (pairs.empty())
    return;
  if (!func.getBody().hasOneBlock()) {
    func.emitError("--dtrain-sparsify needs a single-block step");
    return signalPassFailure();
  }
  OpBuilder b(func.getContext());

  // The warm-up's step count: its old value gives this step's number from 0.
  Value step;
  if (!warmup.empty()) {
    auto stepType = RankedTensorType::get({}, b.getI64Type());
    BlockArgument count = train::TrainDialect::insertStateArgument(
        func, stepType, train::TrainDialect::kOptimizerStateAttrName,
        "sparsify.step");
    Location loc = func.getLoc();
    b.setInsertionPointToStart(&func.getBody().front());
    Value old = tensor::ExtractOp::create(b, loc, count, ValueRange());
    step = arith::IndexCastOp::create(b, loc, b.getIndexType(), old);
    Value one = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(stepType, int64_t(1)));
    Value next = arith::AddIOp::create(b, loc, count, one);
    train::TrainDialect::appendStateResult(func, next, "sparsify.step");
  }

  unsigned sparsified = 0;
  for (auto [start, wait] : pairs) {
    auto type = cast<RankedTensorType>(start.getInput().getType());
    const int64_t elements = type.getNumElements();
    // The aggregate: fixed, chosen here for `ranks`, or chosen at run time
    // (unless one choice holds at every rank count). Where dense costs
    // least, the exchange stays as it is.
    comm::SparseAggregate aggregateKind = comm::SparseAggregate::automatic;
    SmallVector<std::pair<int64_t, comm::SparseAggregate>> runs;
    if (fixedAggregate) {
      aggregateKind = *fixedAggregate;
    } else if (ranks > 0) {
      aggregateKind = cheapest(elements, ranks);
    } else {
      runs = cheapestByRanks(elements);
      if (runs.size() == 1)
        aggregateKind = runs.front().second;
    }
    if (aggregateKind == comm::SparseAggregate::dense)
      continue;
    std::string name = llvm::formatv("residual.{0}", sparsified++).str();
    Location loc = start.getLoc();
    b.setInsertionPoint(start);
    Value residual =
        residuals
            ? Value(train::TrainDialect::insertStateArgument(
                  func, type, train::TrainDialect::kRankStateAttrName, name))
            : Value(arith::ConstantOp::create(
                  b, loc, DenseElementsAttr::get(type, 0.0f)));
    Value k = buildK(b, loc, elements, step);
    Value chosen =
        aggregateKind == comm::SparseAggregate::automatic
            ? buildChosenAggregate(b, loc, start.getCommunicator(), runs)
            : Value();
    SmallVector<int64_t> members;
    if (granularity == "tensor")
      members = bucketMembers(start.getInput());
    auto sparse = comm::SparseAllReduceStartOp::create(
        b, loc, comm::RequestType::get(b.getContext()), type, type,
        start.getReduction(), selectMethod, aggregateKind, TypeAttr(),
        members.empty() ? DenseI64ArrayAttr()
                        : b.getDenseI64ArrayAttr(members),
        start.getInput(), residual, k, start.getCommunicator(), chosen);
    b.setInsertionPoint(wait);
    auto sparseWait = comm::SparseWaitOp::create(
        b, wait.getLoc(), type, type, sparse.getRequest(), sparse.getInflight(),
        sparse.getInflightResidual());
    wait.getResult().replaceAllUsesWith(sparseWait.getResult());
    if (residuals)
      train::TrainDialect::appendStateResult(func, sparseWait.getNewResidual(),
                                             name);
    wait.erase();
    start.erase();
  }
}
