//===- CopyConstantGlobals.cpp - constant globals read through buffers ----===//
//
// Implements --dtrain-copy-constant-globals: for the CUDA target, where
// kernels reach only buffers the trainer allocates (in managed memory),
// each constant global a function reads is copied once per call into such
// a buffer.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_COPYCONSTANTGLOBALS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

namespace {
struct CopyConstantGlobalsPass
    : dtrain::lower::impl::CopyConstantGlobalsBase<CopyConstantGlobalsPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    SmallVector<memref::GetGlobalOp> reads;
    function.walk([&](memref::GetGlobalOp read) { reads.push_back(read); });
    if (reads.empty())
      return;
    SmallVector<func::ReturnOp> returns;
    function.walk([&](func::ReturnOp ret) { returns.push_back(ret); });
    Block &entry = function.getBody().front();
    // One buffer per global, however many places read it.
    llvm::DenseMap<StringAttr, Value> buffers;
    for (memref::GetGlobalOp read : reads) {
      StringAttr name = read.getNameAttr().getAttr();
      if (Value buffer = buffers.lookup(name)) {
        read.getResult().replaceAllUsesWith(buffer);
        read.erase();
        continue;
      }
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          read, read.getNameAttr());
      if (!global || !global.getConstant()) {
        read.emitError("--dtrain-copy-constant-globals: global '")
            << read.getName()
            << "' is not constant; the CUDA target keeps no mutable global "
               "state (its value would differ between host and device)";
        return signalPassFailure();
      }
      // The copy at the entry dominates every use; the read moves there
      // too, since its operands are none.
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Location loc = read.getLoc();
      auto buffer = memref::AllocOp::create(b, loc, read.getType());
      read->moveBefore(buffer);
      read.getResult().replaceAllUsesWith(buffer.getResult());
      memref::CopyOp::create(b, loc, read.getResult(), buffer);
      for (func::ReturnOp ret : returns) {
        b.setInsertionPoint(ret);
        memref::DeallocOp::create(b, loc, buffer);
      }
      buffers[name] = buffer;
    }
  }
};
} // namespace
