//===- EmitModelEntry.cpp - the compiled-model ABI around @forward --------===//
//
// Implements --dtrain-emit-model-entry: dtrain_model_info, dtrain_model_run
// and main, as the "Compiled models" section of dtrain_rt.h specifies. The
// run function receives bare pointers from the runtime's main and views
// them as memrefs (a descriptor built in the LLVM dialect and cast to the
// memref type; the casts cancel out in --reconcile-unrealized-casts), so
// that one function with static shapes holds the whole model after
// inlining, and the ops that produce the outputs write straight into the
// caller's buffers.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "RuntimeABI.h"
#include "dtrain/Dialect/Comm/IR/CommDialect.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_EMITMODELENTRY
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

static constexpr StringLiteral kInfoSymbol = "dtrain_model_info";
static constexpr StringLiteral kRunSymbol = "dtrain_model_run";
static constexpr StringLiteral kEvalSymbol = "dtrain_model_eval";
static constexpr StringLiteral kMainSymbol = "main";

/// The dtype name of dtrain_rt.h's model info, or "" when unsupported.
static StringRef getDTypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isSignlessInteger(64))
    return "i64";
  if (type.isSignlessInteger(32))
    return "i32";
  if (type.isSignlessInteger(1))
    return "bool";
  return "";
}

/// Appends one `arg <role> <dtype> <shape> <name>` line; fails (after an
/// error at `loc`) when the type cannot cross the ABI.
static LogicalResult appendArgLine(llvm::raw_ostream &os, Location loc,
                                   StringRef role, Type type, StringRef name) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType || !tensorType.hasStaticShape())
    return emitError(loc) << "'" << name << "' has type " << type
                          << "; a compiled model needs tensors of static "
                             "shape (import with --batch-size or "
                             "--input-shape)";
  StringRef dtype = getDTypeName(tensorType.getElementType());
  if (dtype.empty())
    return emitError(loc) << "'" << name << "' has element type "
                          << tensorType.getElementType()
                          << ", which a compiled model cannot pass (f32, "
                             "f64, f16, bf16, i64, i32 or i1)";
  if (name.contains('\n'))
    return emitError(loc) << "the name of '" << role
                          << "' contains a newline";
  os << "arg " << role << ' ' << dtype << ' ';
  if (tensorType.getRank() == 0)
    os << '-';
  llvm::interleave(tensorType.getShape(), os, "x");
  os << ' ' << name << '\n';
  return success();
}

/// The role and name of argument `index` of `forward` in the model info.
static FailureOr<std::pair<StringRef, StringRef>>
getArgRole(func::FuncOp forward, unsigned index) {
  static constexpr std::pair<StringLiteral, StringLiteral> kRoles[] = {
      {train::TrainDialect::kParamAttrName, "param"},
      {train::TrainDialect::kBufferAttrName, "buffer"},
      {train::TrainDialect::kInputAttrName, "input"},
      // A training step's labels are one more file to read; its optimizer
      // state starts at zero.
      {train::TrainDialect::kLabelAttrName, "input"},
      {train::TrainDialect::kOptimizerStateAttrName, "state"},
      {train::TrainDialect::kRankStateAttrName, "rankstate"}};
  for (auto [attrName, role] : kRoles)
    if (auto name = forward.getArgAttrOfType<StringAttr>(index, attrName))
      return std::make_pair(StringRef(role), name.getValue());
  return forward.emitOpError("argument #")
         << index
         << " needs a train.param, train.buffer, train.optimizer_state, "
            "train.rank_state, train.input or train.label attribute to be "
            "passed by a compiled model";
}

/// A memref of static `type` over the memory at `pointer`.
static Value viewPointerAsMemRef(OpBuilder &b, Location loc, Value pointer,
                                 MemRefType type) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  Type ptr = pointer.getType();
  int64_t rank = type.getRank();
  // The descriptor layout of the memref-to-LLVM conversion: allocated and
  // aligned pointers, offset, sizes and strides.
  SmallVector<Type> fields = {ptr, ptr, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descriptorType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  Value descriptor = LLVM::UndefOp::create(b, loc, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor =
        LLVM::InsertValueOp::create(b, loc, descriptor, value, position);
  };
  auto constant = [&](int64_t value) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(value));
  };
  insert(pointer, 0);
  insert(pointer, 1);
  insert(constant(0), 2);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    insert(constant(type.getDimSize(d)), {3, d});
    insert(constant(stride), {4, d});
    stride *= type.getDimSize(d);
  }
  return UnrealizedConversionCastOp::create(b, loc, type, descriptor)
      .getResult(0);
}

namespace {
struct EmitModelEntryPass
    : public lower::impl::EmitModelEntryBase<EmitModelEntryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "cpu" && target != "cuda") {
      module.emitError("--dtrain-emit-model-entry: target '")
          << target << "' is not valid (accepted: cpu, cuda)";
      return signalPassFailure();
    }
    // A model (infer), or one training step of --dtrain-build-training.
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      forward = module.lookupSymbol<func::FuncOp>("train_step");
    if (!forward || forward.isExternal()) {
      module.emitError("a compiled model needs a func.func @forward (or the "
                       "@train_step of --dtrain-build-training) with a body");
      return signalPassFailure();
    }
    // A trainer: the step and, for validation, the evaluation step.
    auto eval = forward.getSymName() == "train_step"
                    ? module.lookupSymbol<func::FuncOp>("eval_step")
                    : func::FuncOp();
    for (StringRef symbol :
         {kInfoSymbol, kRunSymbol, kEvalSymbol, kMainSymbol}) {
      if (Operation *existing = module.lookupSymbol(symbol)) {
        existing->emitOpError("uses the symbol '")
            << symbol << "', which the compiled-model ABI defines";
        return signalPassFailure();
      }
    }
    FailureOr<std::string> info = buildInfo(forward, eval);
    if (failed(info))
      return signalPassFailure();

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = forward.getLoc();
    MLIRContext *ctx = &getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    std::string infoBytes = *info + '\0';
    auto infoGlobal = LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), infoBytes.size()),
        /*isConstant=*/true, LLVM::Linkage::External, kInfoSymbol,
        b.getStringAttr(infoBytes));

    FunctionType runType = b.getFunctionType({ptr}, {});
    auto run = func::FuncOp::create(b, loc, kRunSymbol, runType);
    unsigned numArgs = forward.getNumArguments();
    unsigned numResults = forward.getNumResults();
    buildRunBody(run, forward, llvm::to_vector(llvm::seq<int32_t>(0, numArgs)),
                 llvm::to_vector(llvm::seq<int32_t>(numArgs,
                                                    numArgs + numResults)),
                 forward.getSymName() == "train_step"
                     ? getUpdatedArgs(forward)
                     : SmallVector<std::optional<unsigned>>());
    forward.setPrivate();
    func::FuncOp evalRun;
    if (eval) {
      // The evaluation step reads the step's buffers of the same role and
      // name, and writes its own outputs after the step's.
      SmallVector<int32_t> argSlots;
      for (unsigned i = 0, e = eval.getNumArguments(); i < e; ++i) {
        std::optional<int32_t> slot;
        for (unsigned j = 0; j < numArgs && !slot; ++j)
          if (eval.getArgAttrDict(i) == forward.getArgAttrDict(j))
            slot = int32_t(j);
        if (!slot) {
          eval.emitOpError("argument #")
              << i << " has no argument of @train_step with the same role";
          return signalPassFailure();
        }
        argSlots.push_back(*slot);
      }
      int32_t first = int32_t(numArgs + numResults);
      b.setInsertionPointToEnd(module.getBody());
      evalRun = func::FuncOp::create(b, loc, kEvalSymbol, runType);
      buildRunBody(evalRun, eval, argSlots,
                   llvm::to_vector(llvm::seq<int32_t>(
                       first, first + int32_t(eval.getNumResults()))));
      eval.setPrivate();
    }

    b.setInsertionPointToEnd(module.getBody());
    Type i32 = b.getI32Type();
    auto main =
        func::FuncOp::create(b, loc, kMainSymbol, b.getFunctionType({i32, ptr}, {i32}));
    Block *body = main.addEntryBlock();
    b.setInsertionPointToStart(body);
    if (target == "cuda")
      lower::createRuntimeCall(b, main, "dtrain_rt_cuda_init_trainer",
                               b.getFunctionType({}, {}), {});
    Value infoAddress = LLVM::AddressOfOp::create(b, loc, infoGlobal);
    Value runAddress = func::ConstantOp::create(
        b, loc, runType, FlatSymbolRefAttr::get(ctx, kRunSymbol));
    Value argc = body->getArgument(0), argv = body->getArgument(1);
    func::CallOp call =
        evalRun
            ? lower::createRuntimeCall(
                  b, main, "dtrain_rt_trainer_main",
                  b.getFunctionType({i32, ptr, ptr, runType, runType}, {i32}),
                  {argc, argv, infoAddress, runAddress,
                   func::ConstantOp::create(
                       b, loc, runType, FlatSymbolRefAttr::get(ctx, kEvalSymbol))})
            : lower::createRuntimeCall(
                  b, main, "dtrain_rt_model_main",
                  b.getFunctionType({i32, ptr, ptr, runType}, {i32}),
                  {argc, argv, infoAddress, runAddress});
    func::ReturnOp::create(b, loc, call.getResult(0));
  }

  FailureOr<std::string> buildInfo(func::FuncOp forward, func::FuncOp eval) {
    ModuleOp module = getOperation();
    std::string info;
    llvm::raw_string_ostream os(info);
    os << "dtrain-model 1\n";
    // Without a recorded model there are no weights to read ('-').
    auto path = module->getAttrOfType<StringAttr>("train.onnx_model");
    if (path && path.getValue().contains('\n'))
      return module.emitError("the train.onnx_model path contains a newline");
    os << "onnx " << (path ? path.getValue() : StringRef("-")) << '\n';
    os << "mode "
       << (forward.getSymName() == "forward" ? "infer"
           : eval                            ? "train"
                                             : "step")
       << '\n';
    // A data-parallel step: the runtime initializes MPI around it.
    if (forward
            .walk([](Operation *op) {
              return isa<comm::CommDialect>(op->getDialect())
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted())
      os << "collectives\n";
    Location loc = forward.getLoc();
    for (auto [index, type] : llvm::enumerate(forward.getArgumentTypes())) {
      FailureOr<std::pair<StringRef, StringRef>> role =
          getArgRole(forward, index);
      if (failed(role) ||
          failed(appendArgLine(os, loc, role->first, type, role->second)))
        return failure();
    }
    for (auto [index, type] : llvm::enumerate(forward.getResultTypes())) {
      std::string name = ("output" + Twine(index)).str();
      for (StringRef attrName : {train::TrainDialect::kOutputAttrName,
                                 train::TrainDialect::kUpdatedAttrName})
        if (auto attr =
                forward.getResultAttrOfType<StringAttr>(index, attrName))
          name = attr.getValue().str();
      if (failed(appendArgLine(os, loc, "output", type, name)))
        return failure();
    }
    if (eval) {
      for (auto [index, type] : llvm::enumerate(eval.getResultTypes())) {
        auto name = eval.getResultAttrOfType<StringAttr>(
            index, train::TrainDialect::kOutputAttrName);
        if (!name)
          return eval.emitOpError("result #")
                 << index << " needs a train.output name";
        if (failed(appendArgLine(os, loc, "eval", type, name.getValue())))
          return failure();
      }
      // The number of classes, for the runtime to check the labels.
      forward.walk([&](nn::SoftmaxCrossEntropyOp op) {
        os << "classes " << op.getLogits().getType().getShape().back()
           << '\n';
        return WalkResult::interrupt();
      });
    }
    // The inputs that pick rows of embedding tables, for the runtime to
    // check their range.
    forward.walk([&](nn::EmbeddingOp op) {
      auto arg = dyn_cast<BlockArgument>(op.getIndices());
      if (!arg || arg.getOwner()->getParentOp() != forward)
        return;
      FailureOr<std::pair<StringRef, StringRef>> role =
          getArgRole(forward, arg.getArgNumber());
      if (succeeded(role) && role->first == "input")
        os << "indices " << op.getTable().getType().getDimSize(0) << ' '
           << role->second << '\n';
    });
    return info;
  }

  /// For each result of STEP, the argument it is the new value of: the
  /// parameter, buffer or optimizer state of the same name and type that a
  /// result marked train.updated replaces (dtrain_rt.h: the runtime passes
  /// one buffer for both), else nothing.
  static SmallVector<std::optional<unsigned>>
  getUpdatedArgs(func::FuncOp step) {
    SmallVector<std::optional<unsigned>> updatedArgs(step.getNumResults());
    for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
      auto name = step.getResultAttrOfType<StringAttr>(
          i, train::TrainDialect::kUpdatedAttrName);
      for (unsigned j = 0, n = step.getNumArguments(); name && j < n; ++j) {
        bool stateful = false;
        for (StringRef role : train::TrainDialect::kUpdatableAttrNames)
          stateful |= step.getArgAttrOfType<StringAttr>(j, role) == name;
        if (stateful && step.getArgumentTypes()[j] == step.getResultTypes()[i])
          updatedArgs[i] = j;
      }
    }
    return updatedArgs;
  }

  /// The body of RUN(buffers): FORWARD's arguments from the buffers at
  /// ARGSLOTS, its results materialized into those at RESULTSLOTS, except
  /// that a result in UPDATEDARGS is written over its argument, in place
  /// where bufferization can prove that safe.
  void buildRunBody(func::FuncOp run, func::FuncOp forward,
                    ArrayRef<int32_t> argSlots, ArrayRef<int32_t> resultSlots,
                    ArrayRef<std::optional<unsigned>> updatedArgs = {}) {
    Location loc = forward.getLoc();
    OpBuilder b(run.getContext());
    Block *body = run.addEntryBlock();
    b.setInsertionPointToStart(body);
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    Value base = body->getArgument(0);
    auto loadBuffer = [&](RankedTensorType type, int32_t index) {
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, base,
                                       ArrayRef<LLVM::GEPArg>{index});
      Value pointer = LLVM::LoadOp::create(b, loc, ptr, slot);
      return viewPointerAsMemRef(
          b, loc, pointer,
          MemRefType::get(type.getShape(), type.getElementType()));
    };
    SmallVector<Value> argBuffers, args;
    for (auto [i, type, index] : llvm::enumerate(forward.getArgumentTypes(),
                                                 argSlots)) {
      auto tensorType = cast<RankedTensorType>(type);
      argBuffers.push_back(loadBuffer(tensorType, index));
      // Inputs and weights that the step does not update are only read.
      bool updated = llvm::is_contained(updatedArgs, unsigned(i));
      args.push_back(bufferization::ToTensorOp::create(
          b, loc, tensorType, argBuffers.back(), b.getUnitAttr(),
          updated ? b.getUnitAttr() : UnitAttr()));
    }
    auto updatedArg = [&](size_t result) {
      return result < updatedArgs.size() ? updatedArgs[result] : std::nullopt;
    };
    // Output buffers are loaded before the call so that they dominate the
    // inlined body: --eliminate-empty-tensors can then make the ops that
    // produce the outputs write into them directly. Not an updated
    // result's: the runtime passes its argument's buffer there too, which
    // the code reaches through the argument's slot alone (so that distinct
    // slots in the code are distinct buffers).
    SmallVector<Value> outputs;
    for (auto [i, type, index] :
         llvm::enumerate(forward.getResultTypes(), resultSlots))
      outputs.push_back(updatedArg(i)
                            ? Value()
                            : loadBuffer(cast<RankedTensorType>(type), index));
    auto call = func::CallOp::create(b, loc, forward, args);
    for (auto [i, result] : llvm::enumerate(call.getResults()))
      if (!updatedArg(i))
        bufferization::MaterializeInDestinationOp::create(
            b, loc, /*result=*/Type(), result, outputs[i], b.getUnitAttr(),
            b.getUnitAttr());
    // Then, after every other output has read what it needs, each new
    // parameter or state into its argument's tensor: one-shot bufferization
    // has the update write in place unless the old value is still read
    // after it (then the update writes a new buffer, copied here). The
    // store into the argument's buffer keeps the value alive; once in place
    // it copies a buffer onto itself, which canonicalization removes.
    for (auto [i, result] : llvm::enumerate(call.getResults())) {
      std::optional<unsigned> arg = updatedArg(i);
      if (!arg)
        continue;
      Value inPlace = bufferization::MaterializeInDestinationOp::create(
                          b, loc, result.getType(), result, args[*arg])
                          .getResult();
      bufferization::MaterializeInDestinationOp::create(
          b, loc, /*result=*/Type(), inPlace, argBuffers[*arg],
          b.getUnitAttr(), b.getUnitAttr());
    }
    func::ReturnOp::create(b, loc);
  }
};
} // namespace
