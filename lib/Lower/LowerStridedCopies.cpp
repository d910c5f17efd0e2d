//===- LowerStridedCopies.cpp - strided memref.copy as linalg.copy -------===//
//
// Implements --dtrain-lower-strided-copies. The LLVM lowering turns a copy
// between contiguous buffers into a memcpy, but a copy touching a strided
// view (a concat along an inner axis, a pad's interior) into a call of
// `memrefCopy` from libmlir_c_runner_utils, which compiled models do not
// link. As a linalg.copy the same copy becomes a loop nest in the model.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
  void runOnOperation() override {
    SmallVector<memref::CopyOp> stridedCopies;
    getOperation()->walk([&](memref::CopyOp copy) {
      if (!isContiguous(copy.getSource().getType()) ||
          !isContiguous(copy.getTarget().getType()))
        stridedCopies.push_back(copy);
    });
    for (memref::CopyOp copy : stridedCopies) {
      OpBuilder builder(copy);
      linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
