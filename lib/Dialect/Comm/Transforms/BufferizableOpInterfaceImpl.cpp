//===- BufferizableOpInterfaceImpl.cpp - comm op bufferization ------------===//
//
// A tensor collective bufferizes to the same op on the tensor's buffer, with
// the tensor result replaced by that buffer: collectives work in place. The
// start of an async collective returns its in-flight tensor and the wait
// takes it back, so the buffer stays alive and unread until the wait; the
// wait must bufferize in place so that it completes into that same buffer.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/Comm/Transforms/BufferizableOpInterfaceImpl.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::dtrain::comm;

namespace {

/// The operands that are the collective's buffers (tensors before
/// bufferization), in order; the i-th tensor result is the i-th buffer,
/// in place.
static SmallVector<OpOperand *> getBufferOperands(Operation *op) {
  SmallVector<OpOperand *> buffers;
  for (OpOperand &operand : op->getOpOperands())
    if (isa<TensorType, MemRefType>(operand.get().getType()))
      buffers.push_back(&operand);
  return buffers;
}

static SmallVector<OpResult> getTensorResults(Operation *op) {
  return llvm::filter_to_vector(op->getResults(), [](Value result) {
    return isa<TensorType>(result.getType());
  });
}

template <typename OpTy>
struct CollectiveOpInterface
    : public BufferizableOpInterface::ExternalModel<CollectiveOpInterface<OpTy>,
                                                    OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }

  bool mustBufferizeInPlace(Operation *, OpOperand &,
                            const AnalysisState &) const {
    return std::is_same_v<OpTy, WaitOp> || std::is_same_v<OpTy, SparseWaitOp>;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    SmallVector<OpOperand *> buffers = getBufferOperands(op);
    size_t index = llvm::find(buffers, &operand) - buffers.begin();
    return {{getTensorResults(op)[index], BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    // The same op on the buffers, without the tensor results.
    SmallVector<Value> operands(op->getOperands());
    SmallVector<Value> buffers;
    for (OpOperand *operand : getBufferOperands(op)) {
      FailureOr<Value> buffer =
          getBuffer(rewriter, operand->get(), options, state);
      if (failed(buffer))
        return failure();
      operands[operand->getOperandNumber()] = *buffer;
      buffers.push_back(*buffer);
    }
    OperationState bufferized(op->getLoc(), op->getName());
    bufferized.addOperands(operands);
    bufferized.addAttributes(op->getAttrs());
    for (Type type : op->getResultTypes())
      if (!isa<TensorType>(type))
        bufferized.addTypes(type);
    if constexpr (OpTy::template hasTrait<OpTrait::AttrSizedResultSegments>()) {
      // Each result segment holds at most one result; the tensor ones go.
      SmallVector<int32_t> sizes;
      for (Value result : op->getResults())
        sizes.push_back(isa<TensorType>(result.getType()) ? 0 : 1);
      bufferized.attributes.set("resultSegmentSizes",
                                rewriter.getDenseI32ArrayAttr(sizes));
    }
    rewriter.setInsertionPoint(op);
    Operation *newOp = rewriter.create(bufferized);

    SmallVector<Value> replacements;
    unsigned nextResult = 0, nextBuffer = 0;
    for (Value result : op->getResults())
      replacements.push_back(isa<TensorType>(result.getType())
                                 ? buffers[nextBuffer++]
                                 : newOp->getResult(nextResult++));
    replaceOpWithBufferizedValues(rewriter, op, replacements);
    return success();
  }
};

} // namespace

void mlir::dtrain::comm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, CommDialect *) {
    AllReduceOp::attachInterface<CollectiveOpInterface<AllReduceOp>>(*ctx);
    AllReduceStartOp::attachInterface<CollectiveOpInterface<AllReduceStartOp>>(
        *ctx);
    WaitOp::attachInterface<CollectiveOpInterface<WaitOp>>(*ctx);
    SparseAllReduceStartOp::attachInterface<
        CollectiveOpInterface<SparseAllReduceStartOp>>(*ctx);
    SparseWaitOp::attachInterface<CollectiveOpInterface<SparseWaitOp>>(*ctx);
  });
}
