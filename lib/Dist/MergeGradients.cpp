//===- MergeGradients.cpp - gradient exchanges merged into buckets --------===//
//
// Implements --dtrain-merge-gradients: plans buckets of consecutive
// exchanges with MergePlanner.h and rewrites each bucket into one
// exchange of a flat bucket tensor.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/CostModel.h"
#include "dtrain/Dist/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_MERGEGRADIENTS
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::dist;

namespace {

/// X seconds with microsecond digits, for remarks.
std::string seconds(double x) { return llvm::formatv("{0:f6}", x).str(); }

/// Whether B may share a bucket with A (the exchange before it).
bool mergeable(const Exchange &a, const Exchange &b, bool keepReturned) {
  if (keepReturned &&
      (feedsReturn(a.wait.getResult()) || feedsReturn(b.wait.getResult())))
    return false;
  return a.start.getReduction() == b.start.getReduction() &&
         a.start.getCommunicator() == b.start.getCommunicator() &&
         a.type.getElementType() == b.type.getElementType();
}

/// The reassociation that folds every dimension of TYPE into one.
SmallVector<ReassociationIndices> allDims(RankedTensorType type) {
  return {llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))};
}

/// Rewrites the exchanges MEMBERS (more than one) into one exchange of a
/// flat bucket.
void mergeBucket(ArrayRef<Exchange> members, RewriterBase &rewriter) {
  const Exchange &last = members.back();
  Location loc = last.start.getLoc();
  Type element = last.type.getElementType();
  int64_t total = 0;
  for (const Exchange &e : members)
    total += e.type.getNumElements();

  // The bucket, filled where the last member's exchange started.
  rewriter.setInsertionPoint(last.start);
  Value bucket =
      tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{total}, element);
  SmallVector<int64_t> offsets;
  int64_t offset = 0;
  for (const Exchange &e : members) {
    const int64_t n = e.type.getNumElements();
    auto flatType = RankedTensorType::get({n}, element);
    Value flat = e.start.getInput();
    if (e.type.getRank() == 0)
      flat = tensor::ExpandShapeOp::create(rewriter, loc, flatType, flat,
                                           ArrayRef<ReassociationIndices>{});
    else if (e.type.getRank() > 1)
      flat = tensor::CollapseShapeOp::create(rewriter, loc, flatType, flat,
                                             allDims(e.type));
    bucket = tensor::InsertSliceOp::create(
        rewriter, loc, flat, bucket,
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
    offsets.push_back(offset);
    offset += n;
  }
  auto start = comm::AllReduceStartOp::create(
      rewriter, loc, rewriter.getType<comm::RequestType>(), bucket.getType(),
      last.start.getReductionAttr(), bucket, last.start.getCommunicator());

  // Waited for where the first member's value was needed.
  comm::WaitOp firstWait = members.front().wait;
  for (const Exchange &e : members)
    if (e.wait->isBeforeInBlock(firstWait))
      firstWait = e.wait;
  rewriter.setInsertionPoint(firstWait);
  Value averaged = comm::WaitOp::create(rewriter, loc, bucket.getType(),
                                        start.getRequest(), start.getInflight())
                       .getResult();
  for (auto [e, at] : llvm::zip_equal(members, offsets)) {
    const int64_t n = e.type.getNumElements();
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, e.wait.getLoc(), RankedTensorType::get({n}, element),
        averaged, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(at)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
    Value value = slice;
    if (e.type.getRank() == 0)
      value = tensor::CollapseShapeOp::create(rewriter, e.wait.getLoc(), e.type,
                                              slice,
                                              ArrayRef<ReassociationIndices>{});
    else if (e.type.getRank() > 1)
      value = tensor::ExpandShapeOp::create(rewriter, e.wait.getLoc(), e.type,
                                            slice, allDims(e.type));
    rewriter.replaceOp(e.wait, value);
  }
  for (const Exchange &e : members)
    rewriter.eraseOp(e.start);
}

struct MergeGradientsPass
    : public dist::impl::MergeGradientsBase<MergeGradientsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (strategy != "none" && strategy != "threshold" && strategy != "mgwfbp" &&
        strategy != "optimal")
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: strategy '" << strategy
             << "' is not valid (accepted: none, threshold, mgwfbp, optimal)";
    if (thresholdBytes < 0 || firstBucketBytes < 0 || startup < 0 ||
        perByte < 0 || !(flopsPerSecond > 0) || !(elementsPerSecond > 0))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: threshold-bytes, "
                "first-bucket-bytes, startup and per-byte must be >= 0, "
                "flops-per-second and elements-per-second > 0";
    if (!(sparseDensity >= 0 && sparseDensity <= 1) || ranks < 2 ||
        (sparseAggregate != "allgather" && sparseAggregate != "gtopk"))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: sparse-density must be in [0, 1], "
                "ranks >= 2 and sparse-aggregate allgather or gtopk";
    if (!refitProfiles.empty() && profile.empty())
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: refit-profiles needs "
                "profile=FILE.json";
    return readProfileOption(context, profile, refitProfiles,
                             "--dtrain-merge-gradients", measured);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    std::optional<int64_t> measuredRanks;
    std::optional<double> selectSpeed;

    SmallVector<Exchange> exchanges =
        collectExchanges(body, ComputeSpeed{flopsPerSecond, elementsPerSecond});
    if (exchanges.empty())
      return;

    AllReduceCost cost{startup, perByte};
    if (measured) {
      if (measured->computeSeconds.size() != exchanges.size()) {
        func.emitError("--dtrain-merge-gradients: profile ")
            << profile << " has " << measured->computeSeconds.size()
            << " compute_s values but @" << func.getSymName() << " has "
            << exchanges.size() << " exchanges";
        return signalPassFailure();
      }
      cost = measured->cost;
      for (auto [e, seconds] :
           llvm::zip_equal(exchanges, measured->computeSeconds))
        e.task.backwardSeconds = seconds;
      measuredRanks = measured->ranks;
      selectSpeed = measured->selectElementsPerSecond;
    }
    if (sparseDensity > 0) {
      if (!(cost.perByte > 0)) {
        func.emitError("--dtrain-merge-gradients: sparse-density needs an "
                       "all-reduce cost with per-byte > 0");
        return signalPassFailure();
      }
      const int64_t p = measuredRanks.value_or(ranks);
      cost = SparseExchangeCost{networkOfRing(cost, p), p,
                                selectSpeed.value_or(elementsPerSecond)}
                 .bucketCost(sparseDensity, sparseAggregate == "gtopk");
    }

    // Plan each run of mergeable exchanges.
    IRRewriter rewriter(&getContext());
    SmallVector<GradientTask> allTasks;
    MergePlan wholePlan; // over all exchanges, for the report
    for (size_t first = 0; first < exchanges.size();) {
      size_t end = first + 1;
      while (end < exchanges.size() &&
             mergeable(exchanges[end - 1], exchanges[end],
                       /*keepReturned=*/sparseDensity > 0))
        ++end;
      SmallVector<GradientTask> tasks;
      for (size_t i = first; i < end; ++i)
        tasks.push_back(exchanges[i].task);
      MergePlan plan = planFor(tasks, cost);
      unsigned from = 0;
      for (unsigned to : plan) {
        wholePlan.push_back(unsigned(first) + to);
        if (to - from > 1)
          mergeBucket(ArrayRef(exchanges).slice(first + from, to - from),
                      rewriter);
        from = to;
      }
      allTasks.append(tasks);
      first = end;
    }
    if (report)
      reportPlan(func, allTasks, wholePlan, cost);
  }

  MergePlan planFor(ArrayRef<GradientTask> tasks, AllReduceCost cost) {
    if (strategy == "threshold")
      return planThreshold(tasks, double(thresholdBytes),
                           double(firstBucketBytes));
    if (strategy == "mgwfbp")
      return planMGWFBP(tasks, cost);
    if (strategy == "optimal")
      return planOptimal(tasks, cost);
    return planEachGradient(tasks.size());
  }

  void reportPlan(func::FuncOp func, ArrayRef<GradientTask> tasks,
                  ArrayRef<unsigned> plan, AllReduceCost cost) {
    PlanTimeline timeline = simulatePlan(tasks, plan, cost);
    unsigned from = 0;
    for (auto [index, to] : llvm::enumerate(plan)) {
      double bytes = 0;
      for (unsigned i = from; i < to; ++i)
        bytes += tasks[i].bytes;
      func.emitRemark() << "bucket " << index << ": exchanges " << from << ".."
                        << to - 1 << ", " << int64_t(bytes)
                        << " bytes, predicted "
                        << seconds(timeline.starts[index]) << " s to "
                        << seconds(timeline.ends[index]) << " s";
      from = to;
    }
    func.emitRemark() << strategy << ": " << plan.size() << " buckets for "
                      << tasks.size() << " exchanges, predicted end "
                      << seconds(planEnd(tasks, plan, cost)) << " s (none: "
                      << seconds(planEnd(tasks, planEachGradient(tasks.size()),
                                         cost))
                      << " s)";
  }

  /// The profile= file (with refit-profiles=), read once for every function.
  std::optional<Profile> measured;
};

} // namespace
