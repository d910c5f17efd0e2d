//===- LowerCommToRuntime.cpp - comm ops to runtime calls -----------------===//
//
// Implements --dtrain-lower-comm-to-runtime: comm ops on memrefs become calls
// of the C ABI in runtime/include/dtrain_rt.h, with communicators and
// requests as opaque pointers. The integer codes passed to the runtime come
// from that header, so the compiler and the runtime cannot disagree on them.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "RuntimeABI.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_LOWERCOMMTORUNTIME
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::comm;

//===----------------------------------------------------------------------===//
// The runtime's C ABI as seen from MLIR
//===----------------------------------------------------------------------===//

namespace {
/// The runtime functions this pass calls, with their signatures in MLIR
/// types (pointers are !llvm.ptr, int32_t is i32, int64_t is i64).
enum class RuntimeFunction { CommWorld, CommRank, CommSize, AllReduce,
                             AllReduceStart, SparseAllReduceStart, Wait };
} // namespace

static StringRef getRuntimeFunctionName(RuntimeFunction function) {
  switch (function) {
  case RuntimeFunction::CommWorld:
    return "dtrain_rt_comm_world";
  case RuntimeFunction::CommRank:
    return "dtrain_rt_comm_rank";
  case RuntimeFunction::CommSize:
    return "dtrain_rt_comm_size";
  case RuntimeFunction::AllReduce:
    return "dtrain_rt_all_reduce_with";
  case RuntimeFunction::AllReduceStart:
    return "dtrain_rt_all_reduce_start_with";
  case RuntimeFunction::SparseAllReduceStart:
    return "dtrain_rt_sparse_all_reduce_start";
  case RuntimeFunction::Wait:
    return "dtrain_rt_wait";
  }
  llvm_unreachable("unknown runtime function");
}

static FunctionType getRuntimeFunctionType(MLIRContext *ctx,
                                           RuntimeFunction function) {
  Builder b(ctx);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  switch (function) {
  case RuntimeFunction::CommWorld:
    return b.getFunctionType({}, {ptr});
  case RuntimeFunction::CommRank:
  case RuntimeFunction::CommSize:
    return b.getFunctionType({ptr}, {i32});
  case RuntimeFunction::AllReduce:
    return b.getFunctionType({ptr, ptr, i64, i32, i32, i32}, {});
  case RuntimeFunction::AllReduceStart:
    return b.getFunctionType({ptr, ptr, i64, i32, i32, i32}, {ptr});
  case RuntimeFunction::SparseAllReduceStart:
    return b.getFunctionType(
        {ptr, ptr, ptr, i64, i64, ptr, i64, i32, i32, i32, i32, i64}, {ptr});
  case RuntimeFunction::Wait:
    return b.getFunctionType({ptr}, {});
  }
  llvm_unreachable("unknown runtime function");
}

static constexpr RuntimeFunction kAllRuntimeFunctions[] = {
    RuntimeFunction::CommWorld,      RuntimeFunction::CommRank,
    RuntimeFunction::CommSize,       RuntimeFunction::AllReduce,
    RuntimeFunction::AllReduceStart, RuntimeFunction::SparseAllReduceStart,
    RuntimeFunction::Wait};

/// Calls `function`, declaring it in the enclosing module on first use.
/// None of them needs the host to wait for a --target=cuda step's kernels
/// first: the communicator's queries touch no buffer; a collective's
/// buffers are its own from its submission to its wait, and the thread
/// that runs it waits for the kernels queued before its submission (the
/// runtime's buffer fence, which --target=cuda trainers install). Across
/// one rank, all but the sparse exchange leave the buffers alone.
static func::CallOp createRuntimeCall(OpBuilder &builder, Operation *from,
                                      RuntimeFunction function,
                                      ValueRange args) {
  func::CallOp call = lower::createRuntimeCall(
      builder, from, getRuntimeFunctionName(function),
      getRuntimeFunctionType(builder.getContext(), function), args);
  Operation *callee =
      SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr());
  callee->setAttr(lower::kStreamIndependentAttrName, builder.getUnitAttr());
  // Across one rank only a sparse exchange works on its buffers (it
  // selects, and keeps a residual).
  if (function != RuntimeFunction::SparseAllReduceStart)
    callee->setAttr(lower::kInertOnOneRankAttrName, builder.getUnitAttr());
  return call;
}

static int32_t getRuntimeDType(Type elementType) {
  if (elementType.isF32())
    return DTRAIN_RT_F32;
  if (elementType.isF64())
    return DTRAIN_RT_F64;
  if (elementType.isF16())
    return DTRAIN_RT_F16;
  if (elementType.isBF16())
    return DTRAIN_RT_BF16;
  llvm_unreachable("element type excluded by the comm op verifiers");
}

static int32_t getRuntimeReduction(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::sum:
    return DTRAIN_RT_SUM;
  case ReductionKind::mean:
    return DTRAIN_RT_MEAN;
  case ReductionKind::max:
    return DTRAIN_RT_MAX;
  }
  llvm_unreachable("unknown reduction kind");
}

//===----------------------------------------------------------------------===//
// Arguments
//===----------------------------------------------------------------------===//

static Value createI32Constant(OpBuilder &b, Location loc, int32_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 32);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

struct WorldOpLowering : public OpConversionPattern<WorldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WorldOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, createRuntimeCall(rewriter, op,
                                             RuntimeFunction::CommWorld, {})
                               .getResults());
    return success();
  }
};

/// comm.rank and comm.size: an i32 from the runtime, as an index.
template <typename OpTy, RuntimeFunction function>
struct CommQueryLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto call =
        createRuntimeCall(rewriter, op, function, {adaptor.getCommunicator()});
    rewriter.replaceOpWithNewOp<arith::IndexCastOp>(
        op, rewriter.getIndexType(), call.getResult(0));
    return success();
  }
};

/// The runtime arguments of an all-reduce: communicator, buffer address,
/// element count, and the dtype, reduction and algorithm codes.
static SmallVector<Value> getAllReduceArgs(OpBuilder &b, Location loc,
                                           Value communicator, Value buffer,
                                           ReductionKind reduction,
                                           lower::AllReduceAlgorithm algorithm) {
  Value pointer = lower::getBufferAddress(b, loc, buffer);
  Value count = lower::getBufferElementCount(b, loc, buffer);
  Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
  return {communicator,
          pointer,
          count,
          createI32Constant(b, loc, getRuntimeDType(elementType)),
          createI32Constant(b, loc, getRuntimeReduction(reduction)),
          createI32Constant(b, loc, static_cast<int32_t>(algorithm))};
}

/// comm.all_reduce and comm.all_reduce_start: the same arguments, a blocking
/// call or one that returns the request.
template <typename OpTy, RuntimeFunction function>
struct AllReduceLowering : public OpConversionPattern<OpTy> {
  AllReduceLowering(const TypeConverter &converter, MLIRContext *ctx,
                    lower::AllReduceAlgorithm algorithm)
      : OpConversionPattern<OpTy>(converter, ctx), algorithm(algorithm) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto call = createRuntimeCall(
        rewriter, op, function,
        getAllReduceArgs(rewriter, op.getLoc(), adaptor.getCommunicator(),
                         adaptor.getInput(), op.getReduction(), algorithm));
    rewriter.replaceOp(op, call.getResults());
    return success();
  }

  lower::AllReduceAlgorithm algorithm;
};

static int32_t getRuntimeSelectMethod(SelectMethod method) {
  switch (method) {
  case SelectMethod::exact:
    return DTRAIN_RT_SELECT_EXACT;
  case SelectMethod::gaussian:
    return DTRAIN_RT_SELECT_GAUSSIAN;
  case SelectMethod::dgc:
    return DTRAIN_RT_SELECT_DGC;
  case SelectMethod::random:
    return DTRAIN_RT_SELECT_RANDOM;
  }
  llvm_unreachable("unknown select method");
}

// `aggregate <auto>`'s operand holds a SparseAggregate value and goes to
// the runtime as it is.
static_assert(int32_t(SparseAggregate::allgather) ==
                      DTRAIN_RT_SPARSE_ALLGATHER &&
                  int32_t(SparseAggregate::gtopk) == DTRAIN_RT_SPARSE_GTOPK &&
                  int32_t(SparseAggregate::dense) == DTRAIN_RT_SPARSE_DENSE,
              "comm's sparse aggregates are the runtime's codes");

/// The runtime's aggregate code for OP as an i32: a constant, or its
/// chosen aggregate operand (CHOSEN, converted) for `aggregate <auto>`.
static Value getRuntimeAggregate(OpBuilder &b, Location loc,
                                 SparseAllReduceStartOp op, Value chosen) {
  if (op.getAggregate() == SparseAggregate::automatic)
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), chosen);
  return createI32Constant(b, loc, int32_t(op.getAggregate()));
}

/// The address of the segment sizes VALUES as a constant i64 array: a
/// private memref.global `__dtrain_segments_<n>` of the module that
/// encloses FROM, shared by equal arrays.
static Value getSegmentsArray(OpBuilder &b, Operation *from,
                              ArrayRef<int64_t> values) {
  auto module = from->getParentOfType<ModuleOp>();
  auto type = MemRefType::get({int64_t(values.size())}, b.getI64Type());
  auto init = DenseElementsAttr::get(
      RankedTensorType::get(type.getShape(), type.getElementType()), values);
  memref::GlobalOp global;
  unsigned count = 0;
  for (auto candidate : module.getOps<memref::GlobalOp>()) {
    if (!candidate.getSymName().starts_with("__dtrain_segments_"))
      continue;
    ++count;
    if (candidate.getInitialValue() == Attribute(init))
      global = candidate;
  }
  Location loc = from->getLoc();
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    global = memref::GlobalOp::create(
        b, loc, ("__dtrain_segments_" + Twine(count)).str(),
        b.getStringAttr("private"), type, init, /*constant=*/true,
        /*alignment=*/IntegerAttr());
  }
  Value array =
      memref::GetGlobalOp::create(b, loc, type, global.getSymName());
  return lower::getBufferAddress(b, loc, array);
}

/// comm.sparse_all_reduce_start: gradient and residual addresses, element
/// count, k, the segments (a constant array and its length, or null and
/// 0), and the method, aggregate and reduction codes (the runtime varies
/// the seed per call).
struct SparseAllReduceStartLowering
    : public OpConversionPattern<SparseAllReduceStartOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SparseAllReduceStartOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value k = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                         adaptor.getK());
    std::optional<ArrayRef<int64_t>> segments = op.getSegments();
    Value segmentArray =
        segments ? getSegmentsArray(rewriter, op, *segments)
                 : LLVM::ZeroOp::create(rewriter, loc,
                                        LLVM::LLVMPointerType::get(
                                            rewriter.getContext()))
                       .getResult();
    Value segmentCount = arith::ConstantIntOp::create(
        rewriter, loc, segments ? int64_t(segments->size()) : 0, 64);
    auto call = createRuntimeCall(
        rewriter, op, RuntimeFunction::SparseAllReduceStart,
        {adaptor.getCommunicator(),
         lower::getBufferAddress(rewriter, loc, adaptor.getInput()),
         lower::getBufferAddress(rewriter, loc, adaptor.getResidual()),
         lower::getBufferElementCount(rewriter, loc, adaptor.getInput()), k,
         segmentArray, segmentCount,
         createI32Constant(rewriter, loc,
                           getRuntimeSelectMethod(op.getSelect())),
         getRuntimeAggregate(rewriter, loc, op, adaptor.getChosenAggregate()),
         createI32Constant(rewriter, loc,
                           getRuntimeReduction(op.getReduction())),
         createI32Constant(rewriter, loc,
                           getRuntimeDType(op.getWire()
                                               ? *op.getWire()
                                               : rewriter.getF32Type())),
         arith::ConstantIntOp::create(rewriter, loc, 0, 64)});
    rewriter.replaceOp(op, call.getResults());
    return success();
  }
};

/// comm.wait and comm.sparse_wait: the runtime waits on the request.
template <typename OpTy>
struct WaitOpLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    createRuntimeCall(rewriter, op, RuntimeFunction::Wait,
                      {adaptor.getRequest()});
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct LowerCommToRuntimePass
    : public lower::impl::LowerCommToRuntimeBase<LowerCommToRuntimePass> {
  using LowerCommToRuntimeBase::LowerCommToRuntimeBase;

  /// Reports every op this pass cannot lower, and runtime symbols that the
  /// module already defines differently, before anything is rewritten.
  LogicalResult checkLowerable(ModuleOp module) {
    bool ok = true;
    auto checkBuffer = [&](Operation *op, Value buffer, bool passedToRuntime) {
      auto memrefType = dyn_cast<MemRefType>(buffer.getType());
      if (!memrefType) {
        op->emitError() << "'" << op->getName()
                        << "' on a tensor must be bufferized (e.g. by "
                           "--one-shot-bufferize) before "
                           "--dtrain-lower-comm-to-runtime";
        ok = false;
      } else if (passedToRuntime &&
                 !memrefType.areTrailingDimsContiguous(memrefType.getRank())) {
        op->emitError() << "'" << op->getName()
                        << "' needs a contiguous buffer, got " << memrefType
                        << "; bufferize with "
                           "function-boundary-type-conversion=identity-layout-"
                           "map or copy into a contiguous buffer";
        ok = false;
      }
    };
    module.walk([&](Operation *op) {
      // Which buffers the op has, and whether the runtime call receives
      // them (a wait only names its request).
      SmallVector<Value, 2> buffers;
      bool passedToRuntime = true;
      if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
        buffers = {allReduce.getBuffer()};
      } else if (auto start = dyn_cast<AllReduceStartOp>(op)) {
        buffers = {start.getBuffer()};
      } else if (auto sparse = dyn_cast<SparseAllReduceStartOp>(op)) {
        buffers = {sparse.getInput(), sparse.getResidual()};
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        buffers = {wait.getBuffer()};
        passedToRuntime = false;
      } else if (auto wait = dyn_cast<SparseWaitOp>(op)) {
        buffers = {wait.getBuffer(), wait.getResidual()};
        passedToRuntime = false;
      } else {
        return;
      }
      for (Value buffer : buffers)
        checkBuffer(op, buffer, passedToRuntime);
    });
    for (RuntimeFunction function : kAllRuntimeFunctions) {
      StringRef name = getRuntimeFunctionName(function);
      Operation *existing = module.lookupSymbol(name);
      if (!existing)
        continue;
      auto decl = dyn_cast<func::FuncOp>(existing);
      FunctionType expected =
          getRuntimeFunctionType(module.getContext(), function);
      if (!decl || decl.getFunctionType() != expected) {
        existing->emitError() << "symbol '" << name
                              << "' is reserved for the dtrain runtime and "
                                 "must be a func.func of type "
                              << expected;
        ok = false;
      }
    }
    return success(ok);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(checkLowerable(module)))
      return signalPassFailure();

    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion([ctx](CommunicatorType) -> Type {
      return LLVM::LLVMPointerType::get(ctx);
    });
    converter.addConversion([ctx](RequestType) -> Type {
      return LLVM::LLVMPointerType::get(ctx);
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<CommDialect>();
    target.addLegalDialect<arith::ArithDialect, LLVM::LLVMDialect,
                           memref::MemRefDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    patterns.add<WorldOpLowering,
                 CommQueryLowering<RankOp, RuntimeFunction::CommRank>,
                 CommQueryLowering<SizeOp, RuntimeFunction::CommSize>,
                 SparseAllReduceStartLowering, WaitOpLowering<WaitOp>,
                 WaitOpLowering<SparseWaitOp>>(converter, ctx);
    patterns.add<AllReduceLowering<AllReduceOp, RuntimeFunction::AllReduce>,
                 AllReduceLowering<AllReduceStartOp,
                                   RuntimeFunction::AllReduceStart>>(
        converter, ctx, algorithm);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);

    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
