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

/// The tensor result that carries the collective's buffer.
template <typename OpTy>
static Value getInPlaceResult(OpTy op) {
  if constexpr (std::is_same_v<OpTy, AllReduceStartOp>)
    return op.getInflight();
  else
    return op.getResult();
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
    return std::is_same_v<OpTy, WaitOp>;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{getInPlaceResult(cast<OpTy>(op)), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    OpOperand &tensorOperand = collective.getBufferMutable();
    FailureOr<Value> buffer =
        getBuffer(rewriter, tensorOperand.get(), options, state);
    if (failed(buffer))
      return failure();

    // The same op on the buffer, without the tensor result.
    OperationState bufferized(op->getLoc(), op->getName());
    SmallVector<Value> operands(op->getOperands());
    operands[tensorOperand.getOperandNumber()] = *buffer;
    bufferized.addOperands(operands);
    bufferized.addAttributes(op->getAttrs());
    for (Type type : op->getResultTypes())
      if (!isa<TensorType>(type))
        bufferized.addTypes(type);
    rewriter.setInsertionPoint(op);
    Operation *newOp = rewriter.create(bufferized);

    SmallVector<Value> replacements;
    unsigned nextResult = 0;
    for (Value result : op->getResults())
      replacements.push_back(isa<TensorType>(result.getType())
                                 ? *buffer
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
  });
}
