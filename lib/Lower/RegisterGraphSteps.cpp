//===- RegisterGraphSteps.cpp - run functions that CUDA graphs may replay -===//
//
// Implements --dtrain-register-graph-steps: @main tells the CUDA runtime,
// for each run function it hands to the runtime's mains, whether the
// function may be captured as a CUDA graph, and if not, why not.
//
//===----------------------------------------------------------------------===//

#include "GPUHostCode.h"
#include "RuntimeABI.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_REGISTERGRAPHSTEPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

/// Whether OP loads a buffer's pointer from RUN's table of buffers (its
/// argument), which the runtime keys its graphs by.
static bool loadsBufferTable(Operation *op, func::FuncOp run) {
  auto load = dyn_cast<LLVM::LoadOp>(op);
  if (!load)
    return false;
  Value address = load.getAddr();
  if (auto element = address.getDefiningOp<LLVM::GEPOp>())
    address = element.getBase();
  return run.getNumArguments() == 1 && address == run.getArgument(0);
}

/// Whether graphs may replay a run function, and if not, why not.
struct Capturability {
  /// Why not; empty where they may.
  std::string whyNot;
  /// Whether they may where the job has one rank: what rules the function
  /// out is only calls that do nothing there (kInertOnOneRankAttrName).
  bool onOneRank = false;
};

/// Whether the host code of RUN does nothing but queue the same work on the
/// step stream for the same buffers.
static Capturability getCapturability(func::FuncOp run, SymbolTable &symbols) {
  std::string name = ("@" + run.getSymName()).str();
  if (run.isExternal())
    return {name + " has no body here"};
  if (!run.getBody().hasOneBlock())
    return {name + " branches on the host"};
  Capturability result;
  for (Operation &op : run.front().without_terminator()) {
    if (isa<gpu::LaunchFuncOp, gpu::WaitOp, gpu::MemcpyOp, gpu::MemsetOp>(op) ||
        lower::callsFunctionWith(&op, lower::kStepStreamAttrName, symbols) ||
        loadsBufferTable(&op, run) || !lower::needsChainResults(&op))
      continue;
    if (lower::callsFunctionWith(&op, lower::kInertOnOneRankAttrName,
                                 symbols)) {
      if (result.whyNot.empty())
        result = {name + " calls @" + cast<func::CallOp>(op).getCallee().str() +
                      ", which communicates on the host between its kernels "
                      "across more than one rank",
                  /*onOneRank=*/true};
      continue;
    }
    if (lower::callsFunctionWith(&op, lower::kStreamIndependentAttrName,
                                 symbols))
      return {name + " calls @" + cast<func::CallOp>(op).getCallee().str() +
              ", which communicates on the host between its kernels"};
    if (auto call = dyn_cast<func::CallOp>(op))
      return {name + " calls @" + call.getCallee().str() +
              " on the host between its kernels"};
    return {name + " runs " + op.getName().getStringRef().str() +
            " on the host between its kernels"};
  }
  return result;
}

namespace {
struct RegisterGraphStepsPass
    : dtrain::lower::impl::RegisterGraphStepsBase<RegisterGraphStepsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    auto main = symbols.lookup<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    // The functions main hands to the runtime: a model's, or a trainer's
    // step and evaluation step.
    SmallVector<func::ConstantOp> runs;
    main.walk([&](func::ConstantOp constant) { runs.push_back(constant); });
    MLIRContext *ctx = &getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder globals = OpBuilder::atBlockBegin(module.getBody());
    for (auto [index, constant] : llvm::enumerate(runs)) {
      auto run = symbols.lookup<func::FuncOp>(constant.getValue());
      if (!run)
        continue;
      Location loc = constant.getLoc();
      OpBuilder b(constant->getContext());
      b.setInsertionPointAfter(constant);
      Capturability capturability = getCapturability(run, symbols);
      Value reason;
      if (capturability.whyNot.empty()) {
        reason = LLVM::ZeroOp::create(b, loc, ptr);
      } else {
        std::string bytes = capturability.whyNot + '\0';
        auto global = LLVM::GlobalOp::create(
            globals, loc,
            LLVM::LLVMArrayType::get(globals.getI8Type(), bytes.size()),
            /*isConstant=*/true, LLVM::Linkage::Internal,
            ("dtrain_graph_step_why_not_" + Twine(index)).str(),
            globals.getStringAttr(bytes));
        symbols.insert(global);
        reason = LLVM::AddressOfOp::create(b, loc, global);
      }
      Value onOneRank = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                     capturability.onOneRank);
      lower::createRuntimeCall(
          b, main, "dtrain_rt_cuda_set_graph_step",
          b.getFunctionType({constant.getType(), ptr, b.getI32Type()}, {}),
          {constant.getResult(), reason, onOneRank});
    }
  }
};
} // namespace
