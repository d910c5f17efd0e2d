//===- MergeGradients.cpp - gradient exchanges merged into buckets --------===//
//
// Implements --dtrain-merge-gradients: plans buckets of consecutive
// exchanges with MergePlanner.h and rewrites each bucket into one
// exchange of a flat bucket tensor.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dist/MergePlanner.h"
#include "dtrain/Dist/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_MERGEGRADIENTS
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::dist;

namespace {

/// One tensor exchange of the step: its start, its single wait, and what
/// the planner needs.
struct Exchange {
  // Op handles: their accessors are not const.
  mutable comm::AllReduceStartOp start;
  mutable comm::WaitOp wait;
  RankedTensorType type;
  GradientTask task;
};

/// The measured model of a profile file (see the pass description).
struct Profile {
  AllReduceCost cost;
  std::vector<double> computeSeconds;
};

/// X seconds with microsecond digits, for remarks.
std::string seconds(double x) { return llvm::formatv("{0:f6}", x).str(); }

int64_t elementsOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

/// Estimated seconds of OP: multiply-adds of matmul and convolutions at
/// FLOPS, result elements of anything else at ELEMENTS per second.
double estimateSeconds(Operation *op, double flops, double elements) {
  // A convolution (or one of its gradients) with output-shaped Y and
  // filter W does |Y| * |W| / O multiply-adds.
  auto convolution = [&](Value y, Value w) {
    auto filter = cast<ShapedType>(w.getType());
    if (!filter.hasStaticShape() || filter.getDimSize(0) == 0)
      return 0.0;
    return 2.0 * double(elementsOf(y.getType())) *
           double(filter.getNumElements()) / double(filter.getDimSize(0)) /
           flops;
  };
  return TypeSwitch<Operation *, double>(op)
      .Case<nn::MatmulOp>([&](nn::MatmulOp matmul) {
        // |lhs| |rhs| / |result| = K^2 for M x K times K x N.
        const double lhs = double(elementsOf(matmul.getLhs().getType()));
        const double rhs = double(elementsOf(matmul.getRhs().getType()));
        const double result = double(elementsOf(matmul.getType()));
        return result > 0 ? 2.0 * result * std::sqrt(lhs * rhs / result) /
                                flops
                          : 0.0;
      })
      .Case<nn::Conv2DOp>([&](nn::Conv2DOp conv) {
        return convolution(conv.getResult(), conv.getWeight());
      })
      .Case<nn::Conv2DBackwardDataOp>([&](nn::Conv2DBackwardDataOp conv) {
        return convolution(conv.getGrad(), conv.getWeight());
      })
      .Case<nn::Conv2DBackwardWeightsOp>(
          [&](nn::Conv2DBackwardWeightsOp conv) {
            return convolution(conv.getGrad(), conv.getResult());
          })
      .Default([&](Operation *other) {
        double count = 0;
        for (Type type : other->getResultTypes())
          count += double(elementsOf(type));
        return count / elements;
      });
}

FailureOr<Profile> readProfile(StringRef path, Location loc) {
  auto fail = [&](const Twine &message) -> FailureOr<Profile> {
    return emitError(loc) << "--dtrain-merge-gradients: profile " << path
                          << ": " << message;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("cannot read it: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fail("not JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return fail("expected an object {\"startup_s\": ..., \"per_byte_s\": "
                "..., \"compute_s\": [...]}");
  Profile profile;
  std::optional<double> startup = object->getNumber("startup_s"),
                        perByte = object->getNumber("per_byte_s");
  const llvm::json::Array *compute = object->getArray("compute_s");
  if (!startup || !perByte || !compute)
    return fail("needs the numbers startup_s and per_byte_s and the array "
                "compute_s");
  profile.cost = {*startup, *perByte};
  for (const llvm::json::Value &value : *compute) {
    std::optional<double> seconds = value.getAsNumber();
    if (!seconds || *seconds < 0)
      return fail("compute_s holds a value that is not a number >= 0");
    profile.computeSeconds.push_back(*seconds);
  }
  if (*startup < 0 || *perByte < 0)
    return fail("startup_s and per_byte_s must be >= 0");
  return profile;
}

/// Whether B may share a bucket with A (the exchange before it).
bool mergeable(const Exchange &a, const Exchange &b) {
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
  Value bucket = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{total},
                                         element);
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
        rewriter, loc, flat, bucket, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset)},
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
      value = tensor::CollapseShapeOp::create(
          rewriter, e.wait.getLoc(), e.type, slice,
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
    if (strategy != "none" && strategy != "threshold" &&
        strategy != "mgwfbp" && strategy != "optimal")
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: strategy '" << strategy
             << "' is not valid (accepted: none, threshold, mgwfbp, optimal)";
    if (thresholdBytes < 0 || firstBucketBytes < 0 || startup < 0 ||
        perByte < 0 || !(flopsPerSecond > 0) || !(elementsPerSecond > 0))
      return emitError(UnknownLoc::get(context))
             << "--dtrain-merge-gradients: threshold-bytes, "
                "first-bucket-bytes, startup and per-byte must be >= 0, "
                "flops-per-second and elements-per-second > 0";
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();

    // The exchanges in order, with the computation before each.
    SmallVector<Exchange> exchanges;
    double compute = 0;
    for (Operation &op : body) {
      auto start = dyn_cast<comm::AllReduceStartOp>(&op);
      if (!start) {
        compute += estimateSeconds(&op, flopsPerSecond, elementsPerSecond);
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(start.getInput().getType());
      comm::WaitOp wait;
      if (start.getRequest().hasOneUse())
        wait = dyn_cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
      if (!type || !type.hasStaticShape() || !wait ||
          wait->getBlock() != &body)
        continue; // not ours to merge (memrefs, dynamic shapes, loops)
      const double bytes = double(type.getNumElements()) *
                           double(type.getElementTypeBitWidth()) / 8;
      exchanges.push_back({start, wait, type, {bytes, compute}});
      compute = 0;
    }
    if (exchanges.empty())
      return;

    AllReduceCost cost{startup, perByte};
    if (!profile.empty()) {
      FailureOr<Profile> measured = readProfile(profile, func.getLoc());
      if (failed(measured))
        return signalPassFailure();
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
    }

    // Plan each run of mergeable exchanges.
    IRRewriter rewriter(&getContext());
    SmallVector<GradientTask> allTasks;
    MergePlan wholePlan; // over all exchanges, for the report
    for (size_t first = 0; first < exchanges.size();) {
      size_t end = first + 1;
      while (end < exchanges.size() &&
             mergeable(exchanges[end - 1], exchanges[end]))
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
    PlanTimeline none =
        simulatePlan(tasks, planEachGradient(tasks.size()), cost);
    unsigned from = 0;
    for (auto [index, to] : llvm::enumerate(plan)) {
      double bytes = 0;
      for (unsigned i = from; i < to; ++i)
        bytes += tasks[i].bytes;
      func.emitRemark() << "bucket " << index << ": exchanges " << from
                        << ".." << to - 1 << ", " << int64_t(bytes)
                        << " bytes, predicted "
                        << seconds(timeline.starts[index])
                        << " s to "
                        << seconds(timeline.ends[index]) << " s";
      from = to;
    }
    func.emitRemark() << strategy << ": " << plan.size() << " buckets for "
                      << tasks.size() << " exchanges, predicted end "
                      << seconds(timeline.commEnd())
                      << " s (none: "
                      << seconds(none.commEnd()) << " s)";
  }
};

} // namespace
