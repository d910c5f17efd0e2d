//===- ChainGPULaunches.cpp - asynchronous kernel launches ----------------===//
//
// Implements --dtrain-chain-gpu-launches: the synchronous gpu.launch_func
// ops of each host block become one chain of asynchronous launches, which
// a gpu.wait ends only before host code that may need their results.
//
//===----------------------------------------------------------------------===//

#include "GPUHostCode.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_CHAINGPULAUNCHES
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

bool mlir::dtrain::lower::needsChainResults(Operation *op) {
  if (op->getNumRegions() != 0 || op->hasTrait<OpTrait::IsTerminator>())
    return true;
  if (isMemoryEffectFree(op))
    return false;
  auto interface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!interface)
    return true;
  SmallVector<MemoryEffects::EffectInstance> effects;
  interface.getEffects(effects);
  return llvm::any_of(effects, [](const MemoryEffects::EffectInstance &e) {
    return !isa<MemoryEffects::Allocate, MemoryEffects::Free>(e.getEffect());
  });
}

bool mlir::dtrain::lower::callsFunctionWith(Operation *op, StringRef name,
                                            SymbolTable &symbols) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call)
    return false;
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  return callee && callee->hasAttr(name);
}

/// LAUNCH, made asynchronous after DEPENDENCY; returns its token.
static Value makeAsync(gpu::LaunchFuncOp launch, Value dependency) {
  OpBuilder b(launch);
  std::optional<gpu::KernelDim3> cluster;
  if (launch.hasClusterSize())
    cluster = gpu::KernelDim3{launch.getClusterSizeX(),
                              launch.getClusterSizeY(),
                              launch.getClusterSizeZ()};
  auto async = gpu::LaunchFuncOp::create(
      b, launch.getLoc(), launch.getKernelAttr(),
      gpu::KernelDim3{launch.getGridSizeX(), launch.getGridSizeY(),
                      launch.getGridSizeZ()},
      gpu::KernelDim3{launch.getBlockSizeX(), launch.getBlockSizeY(),
                      launch.getBlockSizeZ()},
      launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
      b.getType<gpu::AsyncTokenType>(), ValueRange{dependency}, cluster);
  async->setDiscardableAttrs(launch->getDiscardableAttrDictionary());
  launch.erase();
  return async.getAsyncToken();
}

namespace {
struct ChainGPULaunchesPass
    : dtrain::lower::impl::ChainGPULaunchesBase<ChainGPULaunchesPass> {
  void runOnOperation() override {
    SymbolTable table(getOperation());
    symbols = &table;
    for (auto function : getOperation().getOps<func::FuncOp>())
      for (Block &block : function.getBody())
        chainBlock(block);
  }

private:
  /// Chains the launches of BLOCK, and of the blocks nested in its ops,
  /// each block on its own.
  void chainBlock(Block &block) {
    Value token; // the open chain's last token; null when none is open
    OpBuilder b(&getContext());
    auto open = [&](Operation *before) {
      if (token)
        return;
      b.setInsertionPoint(before);
      token = gpu::WaitOp::create(b, before->getLoc(),
                                  b.getType<gpu::AsyncTokenType>(),
                                  ValueRange())
                  .getAsyncToken();
    };
    auto close = [&](Operation *before) {
      if (!token)
        return;
      b.setInsertionPoint(before);
      gpu::WaitOp::create(b, before->getLoc(), Type(), ValueRange{token});
      token = nullptr;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
      if (launch && !launch.getAsyncToken() && !launch.getAsyncObject()) {
        open(launch);
        token = makeAsync(launch, token);
        continue;
      }
      if (lower::callsFunctionWith(&op, lower::kStepStreamAttrName,
                                   *symbols)) {
        open(&op);
        continue;
      }
      if (lower::callsFunctionWith(&op, lower::kStreamIndependentAttrName,
                                   *symbols))
        continue;
      if (lower::needsChainResults(&op))
        close(&op);
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          chainBlock(nested);
    }
  }

  SymbolTable *symbols = nullptr; // the module's, during runOnOperation
};
} // namespace
