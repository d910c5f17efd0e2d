//===- OutlineParallelLoops.cpp - large loops on the runtime's threads ----===//
//
// Implements --dtrain-outline-parallel-loops: each large outermost
// scf.parallel of the CPU target becomes a function over a range of its
// leading iterations, which dtrain_rt_parallel_for runs in chunks on the
// threads that the heavy-op kernels use.
//
//===----------------------------------------------------------------------===//

#include "ParallelLoops.h"
#include "RuntimeABI.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain::lower;

/// The trip count assumed of a loop whose bounds are not constants.
static constexpr uint64_t kUnknownTripCount = 16;
/// The iterations the leading dimensions taken as one should reach: a few
/// chunks for each of many threads.
static constexpr int64_t kLeadingIterations = 64;

/// The operations that one run of BLOCK executes: one each, times the trip
/// counts of the loops they are in (saturating), terminators not counted.
static uint64_t estimateCost(Block &block) {
  uint64_t cost = 0;
  for (Operation &op : block.without_terminator()) {
    if (op.getNumRegions() == 0) {
      cost = llvm::SaturatingAdd(cost, uint64_t(1));
      continue;
    }
    uint64_t trips = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      trips = getStaticTripCount(loop.getLowerBound(), loop.getUpperBound(),
                                 loop.getStep())
                  .value_or(kUnknownTripCount);
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      for (unsigned d = 0; d < loop.getNumLoops(); ++d)
        trips = llvm::SaturatingMultiply(
            trips,
            uint64_t(getStaticTripCount(loop, d).value_or(kUnknownTripCount)));
    }
    uint64_t body = 0;
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        body = llvm::SaturatingAdd(body, estimateCost(nested));
    cost = llvm::SaturatingAdd(cost, llvm::SaturatingMultiply(trips, body));
  }
  return cost;
}

/// The trip count of a loop from LOWER to UPPER by a positive STEP.
static Value createTripCount(OpBuilder &b, Location loc, Value lower,
                             Value upper, Value step) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, upper, lower), zero);
  return arith::CeilDivSIOp::create(b, loc, span, step);
}

namespace {

/// How LOOP is split: its first LEADING dimensions, taken as one, are the
/// range that the runtime divides into chunks.
struct LoopSplit {
  unsigned leading = 1;
  /// The estimated operations of one iteration of the leading dimensions.
  uint64_t costPerIteration = 0;
  /// Their iterations, when the bounds are constants.
  std::optional<int64_t> leadingIterations;
};

struct OutlineParallelLoopsPass
    : public mlir::dtrain::lower::impl::OutlineParallelLoopsBase<
          OutlineParallelLoopsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

/// LOOP's leading dimensions: the first, and the next ones (not the
/// innermost) while their iterations are constants below
/// kLeadingIterations.
static LoopSplit splitLoop(scf::ParallelOp loop) {
  LoopSplit split;
  const unsigned dims = loop.getNumLoops();
  split.leadingIterations = getStaticTripCount(loop, 0);
  while (split.leading + 1 < dims && split.leadingIterations &&
         *split.leadingIterations < kLeadingIterations) {
    std::optional<int64_t> next = getStaticTripCount(loop, split.leading);
    if (!next)
      break;
    split.leadingIterations = *split.leadingIterations * *next;
    ++split.leading;
  }
  uint64_t cost = estimateCost(*loop.getBody());
  for (unsigned d = split.leading; d < dims; ++d)
    cost = llvm::SaturatingMultiply(
        cost,
        uint64_t(getStaticTripCount(loop, d).value_or(kUnknownTripCount)));
  split.costPerIteration = cost;
  return split;
}

/// Whether every operation nested in LOOP may run on any thread, in any
/// order of its iterations: no calls (the runtime's functions are not all
/// thread-safe) and no results to combine.
static bool isOutlinable(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0 || loop->getParentOfType<scf::ParallelOp>() ||
      !loop->getParentOfType<func::FuncOp>())
    return false;
  return !loop.getBody()
              ->walk([](CallOpInterface) { return WalkResult::interrupt(); })
              .wasInterrupted();
}

/// Whether OP is cloned into the outlined function rather than passed: it
/// has no operands, no regions and no effects (a constant, a global's
/// address).
static bool isClonedIntoBody(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         isPure(def);
}

/// Clones LOOP's body into B for the indices INDICES of its dimensions,
/// mapping the values from above through MAPPING.
static void cloneBody(OpBuilder &b, scf::ParallelOp loop, ValueRange indices,
                      IRMapping &mapping) {
  mapping.map(loop.getInductionVars(), indices);
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
}

/// Replaces LOOP by a call of dtrain_rt_parallel_for on a new function;
/// leaves it where a value the body uses has no LLVM type.
static void outlineLoop(scf::ParallelOp loop, const LoopSplit &split,
                        SymbolTable &symbols,
                        const LLVMTypeConverter &converter) {
  auto func = loop->getParentOfType<func::FuncOp>();
  MLIRContext *context = loop.getContext();
  Location loc = loop.getLoc();

  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(loop->getRegions(), above);
  above.insert(loop->getOperands().begin(), loop->getOperands().end());
  SmallVector<Value> cloned, passed;
  SmallVector<Type> fieldTypes;
  for (Value value : above) {
    if (isClonedIntoBody(value)) {
      cloned.push_back(value);
      continue;
    }
    Type fieldType = converter.convertType(value.getType());
    if (!fieldType || !LLVM::isCompatibleType(fieldType))
      return;
    passed.push_back(value);
    fieldTypes.push_back(fieldType);
  }
  auto contextType = LLVM::LLVMStructType::getLiteral(context, fieldTypes);
  auto pointerType = LLVM::LLVMPointerType::get(context);
  Type i64 = IntegerType::get(context, 64);
  auto bodyType = FunctionType::get(context, {pointerType, i64, i64}, {});

  // The function: the context's fields loaded, then the leading
  // iterations [begin, end) one after another.
  OpBuilder moduleBuilder(func);
  moduleBuilder.setInsertionPointAfter(func);
  auto body = func::FuncOp::create(
      moduleBuilder, loc, (func.getSymName() + "_parallel").str(), bodyType);
  body.setPrivate();
  // Internal in the object file too: only the runtime calls it, through
  // the address passed.
  body->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
  symbols.insert(body);
  Block *entry = body.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  for (Value value : cloned)
    b.clone(*value.getDefiningOp(), mapping);
  for (auto [field, value] : llvm::enumerate(passed)) {
    Value address = LLVM::GEPOp::create(
        b, loc, pointerType, contextType, entry->getArgument(0),
        ArrayRef<LLVM::GEPArg>{0, int32_t(field)});
    Value loaded = LLVM::LoadOp::create(b, loc, fieldTypes[field], address);
    if (loaded.getType() != value.getType())
      loaded =
          UnrealizedConversionCastOp::create(b, loc, value.getType(), loaded)
              .getResult(0);
    mapping.map(value, loaded);
  }
  auto toIndex = [&](Value value) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
  };
  auto mapped = [&](OperandRange range) {
    return llvm::to_vector(llvm::map_range(
        range, [&](Value value) { return mapping.lookup(value); }));
  };
  const unsigned dims = loop.getNumLoops();
  SmallVector<Value> lower = mapped(loop.getLowerBound());
  SmallVector<Value> upper = mapped(loop.getUpperBound());
  SmallVector<Value> steps = mapped(loop.getStep());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto chunk = scf::ForOp::create(b, loc, toIndex(entry->getArgument(1)),
                                  toIndex(entry->getArgument(2)), one);
  func::ReturnOp::create(b, loc);
  b.setInsertionPointToStart(chunk.getBody());
  // The leading indices from the linear one, the last dimension varying
  // fastest.
  SmallVector<Value> indices(split.leading);
  Value rest = chunk.getInductionVar();
  for (unsigned d = split.leading; d-- > 0;) {
    Value position = rest;
    if (d > 0) {
      Value trips = createTripCount(b, loc, lower[d], upper[d], steps[d]);
      position = arith::RemSIOp::create(b, loc, rest, trips);
      rest = arith::DivSIOp::create(b, loc, rest, trips);
    }
    indices[d] = arith::AddIOp::create(
        b, loc, lower[d], arith::MulIOp::create(b, loc, position, steps[d]));
  }
  if (split.leading == dims) {
    cloneBody(b, loop, indices, mapping);
  } else {
    ArrayRef<Value> inner(lower), innerUpper(upper), innerSteps(steps);
    scf::ParallelOp::create(
        b, loc, inner.drop_front(split.leading),
        innerUpper.drop_front(split.leading),
        innerSteps.drop_front(split.leading),
        [&](OpBuilder &nested, Location, ValueRange innerIndices) {
          SmallVector<Value> all(indices);
          llvm::append_range(all, innerIndices);
          cloneBody(nested, loop, all, mapping);
        });
  }

  // The call: the context on the stack (one for each loop, allocated once
  // at the function's entry), filled just before.
  OpBuilder entryBuilder = OpBuilder::atBlockBegin(&func.getBody().front());
  Value count = LLVM::ConstantOp::create(entryBuilder, loc, i64,
                                         entryBuilder.getI64IntegerAttr(1));
  Value contextAddress = LLVM::AllocaOp::create(
      entryBuilder, loc, pointerType, contextType, count, /*alignment=*/8);
  b.setInsertionPoint(loop);
  for (auto [field, value] : llvm::enumerate(passed)) {
    Value stored = value;
    if (fieldTypes[field] != value.getType())
      stored =
          UnrealizedConversionCastOp::create(b, loc, fieldTypes[field], value)
              .getResult(0);
    Value address =
        LLVM::GEPOp::create(b, loc, pointerType, contextType, contextAddress,
                            ArrayRef<LLVM::GEPArg>{0, int32_t(field)});
    LLVM::StoreOp::create(b, loc, stored, address);
  }
  Value iterations = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < split.leading; ++d)
    iterations = arith::MulIOp::create(
        b, loc, iterations,
        createTripCount(b, loc, loop.getLowerBound()[d],
                        loop.getUpperBound()[d], loop.getStep()[d]));
  Value bodyAddress = func::ConstantOp::create(
      b, loc, bodyType, FlatSymbolRefAttr::get(body.getSymNameAttr()));
  Value cost = arith::ConstantIntOp::create(
      b, loc, i64,
      int64_t(std::min<uint64_t>(split.costPerIteration, INT64_MAX)));
  createRuntimeCall(
      b, loop, "dtrain_rt_parallel_for",
      FunctionType::get(context, {bodyType, pointerType, i64, i64}, {}),
      {bodyAddress, contextAddress,
       arith::IndexCastOp::create(b, loc, i64, iterations), cost});
  loop.erase();
}

void OutlineParallelLoopsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<scf::ParallelOp> loops;
  module.walk([&](scf::ParallelOp loop) {
    if (isOutlinable(loop))
      loops.push_back(loop);
  });
  SymbolTable symbols(module);
  LLVMTypeConverter converter(&getContext());
  for (scf::ParallelOp loop : loops) {
    LoopSplit split = splitLoop(loop);
    if (split.leadingIterations &&
        llvm::SaturatingMultiply(uint64_t(*split.leadingIterations),
                                 split.costPerIteration) < uint64_t(minCost))
      continue;
    outlineLoop(loop, split, symbols, converter);
  }
}
