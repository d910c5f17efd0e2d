//===- LowerStridedCopies.cpp - strided memref.copy as linalg.copy -------===//
//
// Implements --dtrain-lower-strided-copies. The LLVM lowering turns a copy
// between contiguous buffers into a memcpy, but a copy touching a strided
// view (a concat along an inner axis, a pad's interior) into a call of
// `memrefCopy` from libmlir_c_runner_utils, which compiled models do not
// link. As a linalg.copy the same copy becomes a loop nest in the model
// (with `contiguous`, every copy, as a linalg.generic: a kernel of the CUDA
// target).
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_LOWERSTRIDEDCOPIES
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

static bool isContiguous(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && (memref.getLayout().isIdentity() ||
                    memref::isStaticShapeAndContiguousRowMajor(memref));
}

namespace {
struct LowerStridedCopiesPass
    : dtrain::lower::impl::LowerStridedCopiesBase<LowerStridedCopiesPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::CopyOp> stridedCopies; // or all, with `contiguous`
    getOperation()->walk([&](memref::CopyOp copy) {
      if (contiguous || !isContiguous(copy.getSource().getType()) ||
          !isContiguous(copy.getTarget().getType()))
        stridedCopies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : stridedCopies) {
      rewriter.setInsertionPoint(copy);
      auto linalgCopy = linalg::CopyOp::create(
          rewriter, copy.getLoc(), copy.getSource(), copy.getTarget());
      rewriter.eraseOp(copy);
      // A generic, which --dtrain-parallelize-serial-generics gives a
      // thread where it is 0-d (a loss copied into its output) rather than
      // leave a host load and store.
      if (contiguous &&
          failed(linalg::generalizeNamedOp(rewriter, linalgCopy))) {
        linalgCopy.emitError("cannot make this copy a linalg.generic");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
