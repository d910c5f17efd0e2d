//===- ParallelizeSerialGenerics.cpp - scalar work as GPU kernels ---------===//
//
// Implements --dtrain-parallelize-serial-generics: a linalg.generic with no
// parallel loop gets one, so that the CUDA lowering makes it a kernel
// rather than host code that waits for the kernels and pulls their pages
// to the host. A short one gets a parallel loop of one iteration (one
// thread); a long reduction is split into partial results computed in
// parallel, which one thread then combines, after more such splits where
// there are many partials (on an H200 a thread's loop of dependent loads
// takes 80 to 180 ns an iteration). A long reduction beside few parallel
// iterations is split the same way beside them, its rows balanced against
// their length: the second stage's loop is as long as there are rows.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_PARALLELIZESERIALGENERICS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// Whether VALUE is a memref of rank 0 with the identity layout.
static bool isScalarBuffer(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getRank() == 0 && type.getLayout().isIdentity();
}

/// The iterations of OP, a generic on buffers with no parallel loop and
/// scalar outputs, when they are static; else nullopt.
static std::optional<int64_t> getSerialIterations(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumParallelLoops() != 0 ||
      !llvm::all_of(op.getDpsInits(), isScalarBuffer))
    return std::nullopt;
  int64_t iterations = 1;
  for (int64_t extent : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(extent))
      return std::nullopt;
    iterations *= extent;
  }
  return iterations;
}

/// OP with a leading parallel loop of one iteration: its scalar outputs
/// viewed as one-element buffers indexed by it, every other map ignoring
/// it, and its linalg.index ops shifted past it.
static void addUnitParallelLoop(RewriterBase &rewriter, linalg::GenericOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> outputs;
  for (Value output : op.getDpsInits()) {
    auto type = cast<MemRefType>(output.getType());
    outputs.push_back(memref::ExpandShapeOp::create(
        rewriter, loc, MemRefType::get({1}, type.getElementType()), output,
        ArrayRef<ReassociationIndices>{}));
  }
  MLIRContext *ctx = op.getContext();
  const unsigned loops = op.getNumLoops() + 1;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input).shiftDims(1));
  for (size_t i = 0; i < outputs.size(); ++i)
    maps.push_back(AffineMap::get(loops, 0, getAffineDimExpr(0, ctx)));
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel};
  llvm::append_range(iterators, op.getIteratorTypesArray());
  auto unit = linalg::GenericOp::create(rewriter, loc, TypeRange(),
                                        op.getDpsInputs(), outputs, maps,
                                        iterators);
  rewriter.inlineRegionBefore(op.getRegion(), unit.getRegion(),
                              unit.getRegion().begin());
  unit.walk([&](linalg::IndexOp index) { index.setDim(index.getDim() + 1); });
  rewriter.eraseOp(op);
}

/// The op that combines each element into OP's one output, when OP is a
/// reduction that a split keeps exact up to rounding: it uses no
/// linalg.index, and yields COMBINER(output, value) where COMBINER is an
/// arith op with a neutral element and the output has no other use. The
/// callers check the inputs' maps.
static Operation *getCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumDpsInputs() == 0 ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return nullptr;
  BlockArgument output = op.getRegionOutputArgs().front();
  Operation *combiner = op.getBody()->getTerminator()->getOperand(0)
                            .getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2 ||
      !output.hasOneUse() || output.getUses().begin()->getOwner() != combiner ||
      !arith::getNeutralElement(combiner))
    return nullptr;
  return combiner;
}

/// getCombiner's op, when OP also reads its inputs, contiguous buffers of
/// one shape, element by element (identity maps).
static Operation *getSplittableCombiner(linalg::GenericOp op) {
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || !type.getLayout().isIdentity() ||
        !op.getMatchingIndexingMap(input).isIdentity())
      return nullptr;
  }
  return getCombiner(op);
}

/// The largest divisor of N that is at most LIMIT and leaves rows of at
/// least two elements; 0 when there is none above 1.
static int64_t getPartialCount(int64_t n, int64_t limit) {
  for (int64_t rows = std::min(limit, n / 2); rows > 1; --rows)
    if (n % rows == 0)
      return rows;
  return 0;
}

/// getPartialCount's divisor that makes the shortest loops in all: ROWS +
/// N / ROWS, a row's loop and then the partials' (the larger ROWS among
/// equals); 0 when there is none above 1.
static int64_t getBalancedPartialCount(int64_t n, int64_t limit) {
  int64_t best = 0;
  for (int64_t rows = std::min(limit, n / 2); rows > 1; --rows)
    if (n % rows == 0 && (!best || rows + n / rows < best + n / best))
      best = rows;
  return best;
}

/// Over an output's OUTRANK dimensions and the rows of its partials: the
/// output's element.
static AffineMap getRowOutputMap(MLIRContext *ctx, unsigned outRank) {
  return AffineMap::getMultiDimIdentityMap(outRank + 1, ctx)
      .dropResult(outRank);
}

/// The generics that replace a split op (reduceThroughPartials).
struct SplitGenerics {
  linalg::GenericOp perRow, fold;
};

/// Replaces OP by a generic that runs OP's body over INPUTS with
/// INPUT_MAPS and ITERATORS into ROWS partial results per element of each
/// output (a buffer of the output's shape then ROWS, indexed by
/// PARTIAL_MAP, which FILL fills), then a generic over the outputs'
/// dimensions and the rows that folds each element's partials into the
/// outputs, in order, with the body FOLD builds (from the partials' and
/// then the outputs' elements).
static SplitGenerics reduceThroughPartials(
    RewriterBase &rewriter, linalg::GenericOp op, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps, AffineMap partialMap,
    ArrayRef<utils::IteratorType> iterators, int64_t rows,
    function_ref<void(ValueRange partials)> fill,
    function_ref<void(OpBuilder &, Location, ValueRange)> fold) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  SmallVector<Value> outputs(op.getDpsInits());
  const unsigned outRank =
      cast<MemRefType>(outputs.front().getType()).getRank();
  SmallVector<Value> partials;
  for (Value output : outputs) {
    auto type = cast<MemRefType>(output.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.push_back(rows);
    partials.push_back(memref::AllocOp::create(
        rewriter, loc, MemRefType::get(shape, type.getElementType())));
  }
  fill(partials);
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(partials.size(), partialMap);
  auto perRow = linalg::GenericOp::create(rewriter, loc, TypeRange(), inputs,
                                          partials, maps, iterators);
  rewriter.inlineRegionBefore(op.getRegion(), perRow.getRegion(),
                              perRow.getRegion().begin());
  // The partials into the outputs: their dimensions, then the rows.
  SmallVector<utils::IteratorType> foldIterators(outRank,
                                                 utils::IteratorType::parallel);
  foldIterators.push_back(utils::IteratorType::reduction);
  AffineMap all = AffineMap::getMultiDimIdentityMap(outRank + 1, ctx);
  SmallVector<AffineMap> foldMaps(partials.size(), all);
  foldMaps.append(outputs.size(), getRowOutputMap(ctx, outRank));
  auto folded =
      linalg::GenericOp::create(rewriter, loc, TypeRange(), partials, outputs,
                                foldMaps, foldIterators, fold);
  rewriter.eraseOp(op);
  rewriter.setInsertionPointAfter(folded);
  for (Value partial : partials)
    memref::DeallocOp::create(rewriter, loc, partial);
  return {perRow, folded};
}

/// reduceThroughPartials for OP, whose elements COMBINER folds into its
/// one output: the partials filled with COMBINER's neutral element and
/// folded by COMBINER; returns the fold.
static linalg::GenericOp
reduceThroughPartials(RewriterBase &rewriter, linalg::GenericOp op,
                      Operation *combiner, ValueRange inputs,
                      ArrayRef<AffineMap> inputMaps, AffineMap partialMap,
                      ArrayRef<utils::IteratorType> iterators, int64_t rows) {
  Location loc = op.getLoc();
  const bool outputFirst =
      combiner->getOperand(0) == op.getRegionOutputArgs().front();
  return reduceThroughPartials(
             rewriter, op, inputs, inputMaps, partialMap, iterators, rows,
             [&](ValueRange partials) {
               Value neutral = arith::ConstantOp::create(
                   rewriter, loc, *arith::getNeutralElement(combiner));
               linalg::FillOp::create(rewriter, loc, neutral, partials);
             },
             [&](OpBuilder &b, Location loc, ValueRange args) {
               // args: the partial, the output.
               Operation *folded = b.clone(*combiner);
               folded->setOperands(outputFirst ? ValueRange{args[1], args[0]}
                                               : ValueRange{args[0], args[1]});
               linalg::YieldOp::create(b, loc, folded->getResults());
             })
      .fold;
}

/// Splits OP, whose N elements COMBINER folds into its output, into ROWS
/// partial results: OP's inputs viewed as ROWS rows, each reduced into its
/// partial result by a parallel generic, then the partials folded into the
/// output by a serial one, which is returned.
static linalg::GenericOp splitReduction(RewriterBase &rewriter,
                                        linalg::GenericOp op,
                                        Operation *combiner, int64_t n,
                                        int64_t rows) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  rewriter.setInsertionPoint(op);
  // The inputs as ROWS x N/ROWS.
  SmallVector<Value> inputs;
  for (Value input : op.getDpsInputs()) {
    auto type = cast<MemRefType>(input.getType());
    Value flat = input;
    if (type.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      flat = memref::CollapseShapeOp::create(rewriter, loc, input,
                                             ArrayRef<ReassociationIndices>{all});
    }
    inputs.push_back(memref::ExpandShapeOp::create(
        rewriter, loc, MemRefType::get({rows, n / rows}, type.getElementType()),
        flat, ArrayRef<ReassociationIndices>{{0, 1}}));
  }
  // Each row into its partial, the partials into the output.
  AffineMap rowElement = AffineMap::getMultiDimIdentityMap(2, ctx);
  SmallVector<AffineMap> maps(inputs.size(), rowElement);
  return reduceThroughPartials(
      rewriter, op, combiner, inputs, maps,
      AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
      {utils::IteratorType::parallel, utils::IteratorType::reduction}, rows);
}

/// Reductions shorter than this stay in their threads: their loop costs
/// less than a second kernel.
constexpr int64_t kMinSplitReduction = 256;

/// The reduction loop of OP, a generic on buffers with parallel loops of
/// PARALLEL iterations in all and one reduction loop (static ranges),
/// whose inputs have identity layouts and read the reduction loop at most
/// once each, as one dimension, and whose outputs' maps are projected
/// permutations; else nullopt.
static std::optional<unsigned> getReductionBesideParallel(linalg::GenericOp op,
                                                          int64_t &parallel) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() != 1 ||
      op.getNumParallelLoops() == 0)
    return std::nullopt;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  const unsigned r = reductions.front();
  parallel = 1;
  for (auto [d, extent] : llvm::enumerate(op.getStaticLoopRanges())) {
    if (ShapedType::isDynamic(extent))
      return std::nullopt;
    if (d != r)
      parallel *= extent;
  }
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!type || !type.getLayout().isIdentity() ||
        !map.isProjectedPermutation() ||
        llvm::count_if(map.getResults(), [&](AffineExpr e) {
          return e.isFunctionOfDim(r);
        }) > 1)
      return std::nullopt;
  }
  for (OpOperand &output : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&output).isProjectedPermutation())
      return std::nullopt;
  return r;
}

/// getReductionBesideParallel's loop, when getCombiner takes OP.
static std::optional<unsigned> getSplittableReduction(linalg::GenericOp op,
                                                      int64_t &parallel) {
  if (!getCombiner(op))
    return std::nullopt;
  return getReductionBesideParallel(op, parallel);
}

/// MAP over one dimension more: dimension R as (R, R + 1), the others
/// after R shifted by one.
static AffineMap splitDim(AffineMap map, unsigned r) {
  MLIRContext *ctx = map.getContext();
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (d == r) {
      results.push_back(getAffineDimExpr(r, ctx));
      results.push_back(getAffineDimExpr(r + 1, ctx));
    } else {
      results.push_back(getAffineDimExpr(d < r ? d : d + 1, ctx));
    }
  }
  return AffineMap::get(map.getNumDims() + 1, 0, results, ctx);
}

/// OP's inputs and their maps with OP's reduction loop R (of N
/// iterations) split into ROWS x N/ROWS loops (R, R + 1): each input that
/// reads R viewed with that dimension as ROWS x N/ROWS.
static void splitInputs(RewriterBase &rewriter, linalg::GenericOp op,
                        unsigned r, int64_t n, int64_t rows,
                        SmallVectorImpl<Value> &inputs,
                        SmallVectorImpl<AffineMap> &maps) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    Value value = input->get();
    std::optional<unsigned> position = map.getResultPosition(
        getAffineDimExpr(r, ctx));
    if (position) {
      auto type = cast<MemRefType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[*position] = n / rows;
      shape.insert(shape.begin() + *position, rows);
      SmallVector<ReassociationIndices> groups;
      for (unsigned d = 0, next = 0; d < type.getRank(); ++d) {
        ReassociationIndices group = {next++};
        if (d == *position)
          group.push_back(next++);
        groups.push_back(group);
      }
      value = memref::ExpandShapeOp::create(
          rewriter, loc, MemRefType::get(shape, type.getElementType()), value,
          groups);
    }
    inputs.push_back(value);
    maps.push_back(splitDim(map, r));
  }
}

/// The map of partial results for an output of OP read by OUTPUTMAP, once
/// OP's reduction loop R is split (splitInputs): the output's dimensions,
/// then the rows (R).
static AffineMap getPartialMap(linalg::GenericOp op, AffineMap outputMap,
                               unsigned r) {
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineExpr> results =
      llvm::to_vector(splitDim(outputMap, r).getResults());
  results.push_back(getAffineDimExpr(r, ctx));
  return AffineMap::get(op.getNumLoops() + 1, 0, results, ctx);
}

/// OP's iterators once its reduction loop R is split: the rows parallel,
/// the rest of the reduction after them.
static SmallVector<utils::IteratorType> getSplitIterators(linalg::GenericOp op,
                                                          unsigned r) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators[r] = utils::IteratorType::parallel;
  iterators.insert(iterators.begin() + r + 1, utils::IteratorType::reduction);
  return iterators;
}

/// Splits OP's reduction loop R (of N iterations) into ROWS rows computed
/// in parallel beside its parallel loops: each of OP's inputs that reads R
/// is viewed with that dimension as ROWS x N/ROWS, a generic reduces each
/// row into a buffer of partial results (OP's output with a last dimension
/// of ROWS, filled with COMBINER's neutral element), and a second one folds
/// the partials into OP's output, in order.
static void splitReductionBesideParallel(RewriterBase &rewriter,
                                         linalg::GenericOp op,
                                         Operation *combiner, unsigned r,
                                         int64_t n, int64_t rows) {
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  splitInputs(rewriter, op, r, n, rows, inputs, maps);
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  reduceThroughPartials(rewriter, op, combiner, inputs, maps,
                        getPartialMap(op, outputMap, r),
                        getSplitIterators(op, r), rows);
}

/// Whether COMPARE is a strict ordered compare: of COMPARE(X, BEST), X
/// wins only over a BEST it strictly beats, and a NaN never wins.
static bool isStrictOrder(Operation *compare) {
  if (auto cmpf = dyn_cast<arith::CmpFOp>(compare))
    return cmpf.getPredicate() == arith::CmpFPredicate::OGT ||
           cmpf.getPredicate() == arith::CmpFPredicate::OLT;
  if (auto cmpi = dyn_cast<arith::CmpIOp>(compare))
    return llvm::is_contained(
        {arith::CmpIPredicate::sgt, arith::CmpIPredicate::slt,
         arith::CmpIPredicate::ugt, arith::CmpIPredicate::ult},
        cmpi.getPredicate());
  return false;
}

/// The compare of OP when OP is an arg-reduction that can be split beside
/// its parallel loops (getReductionBesideParallel): one input, whose
/// elements along the reduction loop R OP scans for the first that beats the
/// best so far (outputs: the best value and its index along R), in a body of
/// exactly
///   i = linalg.index R [cast], c = CMP(x, best) (strict: isStrictOrder),
///   yield select(c, x, best), select(c, i, bestIndex);
/// R is set to the reduction loop, PARALLEL as by getSplittableReduction.
/// Else null.
static Operation *getSplittableArgReduction(linalg::GenericOp op,
                                            int64_t &parallel, unsigned &r) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 2 ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
          op.getMatchingIndexingMap(op.getDpsInitOperand(1)))
    return nullptr;
  std::optional<unsigned> loop = getReductionBesideParallel(op, parallel);
  if (!loop)
    return nullptr;
  r = *loop;
  // The body, op by op.
  Block *body = op.getBody();
  BlockArgument x = body->getArgument(0), best = body->getArgument(1),
                bestIndex = body->getArgument(2);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto pickValue = yield.getOperand(0).getDefiningOp<arith::SelectOp>();
  auto pickIndex = yield.getOperand(1).getDefiningOp<arith::SelectOp>();
  if (!pickValue || !pickIndex ||
      pickValue.getCondition() != pickIndex.getCondition() ||
      pickValue.getTrueValue() != x || pickValue.getFalseValue() != best ||
      pickIndex.getFalseValue() != bestIndex)
    return nullptr;
  Operation *compare = pickValue.getCondition().getDefiningOp();
  if (!compare || !isStrictOrder(compare) || compare->getOperand(0) != x ||
      compare->getOperand(1) != best)
    return nullptr;
  Value index = pickIndex.getTrueValue();
  Operation *cast = nullptr;
  if (auto indexCast = index.getDefiningOp<arith::IndexCastOp>()) {
    cast = indexCast;
    index = indexCast.getIn();
  }
  auto linalgIndex = index.getDefiningOp<linalg::IndexOp>();
  if (!linalgIndex || linalgIndex.getDim() != r ||
      body->getOperations().size() != (cast ? 6u : 5u))
    return nullptr;
  return compare;
}

/// Splits OP, an arg-reduction whose elements COMPARE picks from
/// (getSplittableArgReduction), along its reduction loop R (of N
/// iterations) into ROWS rows beside its parallel loops: each row's pick
/// (its first winner's value and index along R) into partial results
/// that start from OP's outputs, then the rows' picks folded into the
/// outputs, in order, by the same compare. The first winner of a row
/// that beats the rows before it is the first winner of all.
static void splitArgReductionBesideParallel(RewriterBase &rewriter,
                                            linalg::GenericOp op,
                                            Operation *compare, unsigned r,
                                            int64_t n, int64_t rows) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  splitInputs(rewriter, op, r, n, rows, inputs, maps);
  SmallVector<Value> outputs(op.getDpsInits());
  const unsigned outRank =
      cast<MemRefType>(outputs.front().getType()).getRank();
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SplitGenerics split = reduceThroughPartials(
      rewriter, op, inputs, maps, getPartialMap(op, outputMap, r),
      getSplitIterators(op, r), rows,
      [&](ValueRange partials) {
        // Every row starts from the outputs' values.
        AffineMap all = AffineMap::getMultiDimIdentityMap(outRank + 1, ctx);
        AffineMap output = getRowOutputMap(ctx, outRank);
        linalg::GenericOp::create(
            rewriter, loc, TypeRange(), outputs, partials,
            {output, output, all, all},
            SmallVector<utils::IteratorType>(outRank + 1,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(b, loc, args.take_front(2));
            });
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        // args: the row's value and index, the best value and index.
        Operation *wins = b.clone(*compare);
        wins->setOperands({args[0], args[2]});
        Value better = wins->getResult(0);
        linalg::YieldOp::create(
            b, loc,
            ValueRange{
                arith::SelectOp::create(b, loc, better, args[0], args[2]),
                arith::SelectOp::create(b, loc, better, args[1], args[3])});
      });
  // Each row's index along R: the row and the index in it.
  linalg::IndexOp index =
      *split.perRow.getBody()->getOps<linalg::IndexOp>().begin();
  rewriter.setInsertionPoint(index);
  Value row = linalg::IndexOp::create(rewriter, loc, r);
  Value inRow = linalg::IndexOp::create(rewriter, loc, r + 1);
  Value rowLength = arith::ConstantIndexOp::create(rewriter, loc, n / rows);
  rewriter.replaceOp(
      index, arith::AddIOp::create(
                 rewriter, loc,
                 arith::MulIOp::create(rewriter, loc, row, rowLength), inRow));
}

namespace {
struct ParallelizeSerialGenericsPass
    : dtrain::lower::impl::ParallelizeSerialGenericsBase<
          ParallelizeSerialGenericsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxSerialIterations < 1 || partialSums < 2 ||
        maxCombineIterations < 2) {
      getOperation().emitError(
          "--dtrain-parallelize-serial-generics: max-serial-iterations must "
          "be at least 1, partial-sums and max-combine-iterations at least "
          "2");
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Scalar fills become generics first.
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (isScalarBuffer(fill.getDpsInits().front()))
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      rewriter.setInsertionPoint(fill);
      if (failed(linalg::generalizeNamedOp(rewriter, fill))) {
        fill.emitError("--dtrain-parallelize-serial-generics: cannot "
                       "generalize this fill");
        return signalPassFailure();
      }
    }
    SmallVector<std::pair<linalg::GenericOp, int64_t>> serial;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<int64_t> iterations = getSerialIterations(op))
        serial.push_back({op, *iterations});
    });
    // Long reductions beside few parallel iterations: rows as long as
    // there are rows, within PARTIAL-SUMS threads.
    // Arg-reductions (an argmax) the same way.
    struct Beside {
      linalg::GenericOp op;
      unsigned r;         // the reduction loop
      int64_t n, rows;    // its iterations and rows
      Operation *compare; // an arg-reduction's, else null
    };
    SmallVector<Beside> beside;
    getOperation().walk([&](linalg::GenericOp op) {
      int64_t parallel = 0;
      unsigned r = 0;
      Operation *compare = nullptr;
      if (std::optional<unsigned> dim = getSplittableReduction(op, parallel))
        r = *dim;
      else if (!(compare = getSplittableArgReduction(op, parallel, r)))
        return;
      if (2 * parallel > partialSums)
        return;
      const int64_t n = op.getStaticLoopRanges()[r];
      const int64_t rows = getBalancedPartialCount(n, partialSums / parallel);
      if (n >= kMinSplitReduction && rows != 0)
        beside.push_back({op, r, n, rows, compare});
    });
    for (const Beside &split : beside) {
      if (split.compare)
        splitArgReductionBesideParallel(rewriter, split.op, split.compare,
                                        split.r, split.n, split.rows);
      else
        splitReductionBesideParallel(rewriter, split.op, getCombiner(split.op),
                                     split.r, split.n, split.rows);
    }
    for (auto [op, iterations] : serial) {
      if (iterations > maxSerialIterations) {
        Operation *combiner = getSplittableCombiner(op);
        // The partials' combination is one thread's loop too.
        int64_t rows = getPartialCount(
            iterations, std::min<int64_t>(partialSums, maxSerialIterations));
        if (!combiner || rows == 0)
          continue;
        op = splitReduction(rewriter, op, combiner, iterations, rows);
        // Many partials: split their combination again, and so on.
        while (rows > maxCombineIterations) {
          const int64_t partials = rows;
          rows = getBalancedPartialCount(partials, maxCombineIterations);
          if (rows == 0)
            break;
          op = splitReduction(rewriter, op, getSplittableCombiner(op), partials,
                              rows);
        }
      }
      addUnitParallelLoop(rewriter, op);
    }
  }
};
} // namespace
