//===- CommOps.cpp - comm dialect operations ------------------------------===//

#include "dtrain/Dialect/Comm/IR/CommOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::dtrain::comm;

//===----------------------------------------------------------------------===//
// The buffer type of a collective also gives its in-place result: present,
// with the same type, exactly when the buffer is a tensor. The assembly
// format prints the buffer type only.
//===----------------------------------------------------------------------===//

static ParseResult parseBufferType(OpAsmParser &parser, Type &bufferType,
                                   Type &resultType) {
  if (parser.parseType(bufferType))
    return failure();
  if (isa<RankedTensorType>(bufferType))
    resultType = bufferType;
  return success();
}

static void printBufferType(OpAsmPrinter &printer, Operation *, Type bufferType,
                            Type) {
  printer << bufferType;
}

/// The buffers of a sparse all-reduce (gradient and residual): one type
/// when they agree, else both; the in-place results follow as above.
static ParseResult parseBufferPairType(OpAsmParser &parser, Type &bufferType,
                                       Type &residualType, Type &resultType,
                                       Type &residualResultType) {
  if (parseBufferType(parser, bufferType, resultType))
    return failure();
  residualType = bufferType;
  if (succeeded(parser.parseOptionalComma()) &&
      parser.parseType(residualType))
    return failure();
  if (isa<RankedTensorType>(residualType))
    residualResultType = residualType;
  return success();
}

static void printBufferPairType(OpAsmPrinter &printer, Operation *,
                                Type bufferType, Type residualType, Type,
                                Type) {
  printer << bufferType;
  if (residualType != bufferType)
    printer << ", " << residualType;
}

static LogicalResult verifyInPlaceResult(Operation *op, Value buffer,
                                         Value result) {
  if (isa<RankedTensorType>(buffer.getType())) {
    if (!result || result.getType() != buffer.getType())
      return op->emitOpError("on a tensor must return a tensor of type ")
             << buffer.getType();
  } else if (result) {
    return op->emitOpError("on a memref works in place and has no result");
  }
  return success();
}

/// Effects of a collective: it reads and writes the network, and, once
/// bufferized, its memrefs.
static void getCollectiveEffects(
    ArrayRef<OpOperand *> buffers,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(),
                       CommunicationResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
  for (OpOperand *buffer : buffers) {
    if (!isa<MemRefType>(buffer->get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), buffer,
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), buffer,
                         SideEffects::DefaultResource::get());
  }
}

/// The gradient and residual of a sparse all-reduce: f32, of one shape.
static LogicalResult verifySparseBuffers(Operation *op, Value buffer,
                                         Value residual) {
  auto bufferType = cast<ShapedType>(buffer.getType());
  auto residualType = cast<ShapedType>(residual.getType());
  if (!bufferType.getElementType().isF32() ||
      !residualType.getElementType().isF32())
    return op->emitOpError("sparsifies f32 buffers only, got ")
           << bufferType << " and " << residualType;
  if (bufferType.getShape() != residualType.getShape() ||
      isa<TensorType>(bufferType) != isa<TensorType>(residualType))
    return op->emitOpError("needs a residual of the buffer's shape and kind, "
                           "got ")
           << bufferType << " and " << residualType;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  return verifyInPlaceResult(*this, getInput(), getResult());
}

void AllReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects({&getInputMutable()}, effects);
}

LogicalResult AllReduceStartOp::verify() {
  return verifyInPlaceResult(*this, getInput(), getInflight());
}

void AllReduceStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects({&getInputMutable()}, effects);
}

LogicalResult WaitOp::verify() {
  if (failed(verifyInPlaceResult(*this, getBuffer(), getResult())))
    return failure();
  // The request and the buffer must belong to the same started collective,
  // when both are visible here.
  auto start = getRequest().getDefiningOp<AllReduceStartOp>();
  if (!start)
    return success();
  Value startBuffer =
      start.hasBufferSemantics() ? start.getInput() : start.getInflight();
  if (isa<RankedTensorType>(getBuffer().getType()) &&
      getBuffer() != startBuffer)
    return emitOpError("buffer is not the in-flight tensor of the request's "
                       "start op");
  return success();
}

void WaitOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects({&getBufferMutable()}, effects);
}

LogicalResult SparseAllReduceStartOp::verify() {
  if (failed(verifySparseBuffers(*this, getInput(), getResidual())) ||
      failed(verifyInPlaceResult(*this, getInput(), getInflight())) ||
      failed(verifyInPlaceResult(*this, getResidual(), getInflightResidual())))
    return failure();
  if (getReduction() == ReductionKind::max)
    return emitOpError("reduces with sum or mean, not max");
  if ((getAggregate() == SparseAggregate::automatic) !=
      bool(getChosenAggregate()))
    return emitOpError("takes a chosen aggregate operand with aggregate "
                       "<auto>, and only then");
  if (std::optional<ArrayRef<int64_t>> segments = getSegments()) {
    auto type = cast<ShapedType>(getInput().getType());
    if (!type.hasStaticShape())
      return emitOpError("segments need a buffer of static shape");
    int64_t total = 0;
    for (int64_t n : *segments) {
      if (n <= 0)
        return emitOpError("segments must be positive element counts");
      total += n;
    }
    if (total != type.getNumElements())
      return emitOpError("segments add up to ")
             << total << " elements, not the buffer's "
             << type.getNumElements();
  }
  return success();
}

void SparseAllReduceStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects({&getInputMutable(), &getResidualMutable()}, effects);
}

LogicalResult SparseWaitOp::verify() {
  if (failed(verifySparseBuffers(*this, getBuffer(), getResidual())) ||
      failed(verifyInPlaceResult(*this, getBuffer(), getResult())) ||
      failed(verifyInPlaceResult(*this, getResidual(), getNewResidual())))
    return failure();
  auto start = getRequest().getDefiningOp<SparseAllReduceStartOp>();
  if (!start)
    return success();
  if (isa<RankedTensorType>(getBuffer().getType()) &&
      (getBuffer() != start.getInflight() ||
       getResidual() != start.getInflightResidual()))
    return emitOpError("buffers are not the in-flight tensors of the "
                       "request's start op");
  return success();
}

void SparseWaitOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects({&getBufferMutable(), &getResidualMutable()}, effects);
}

#define GET_OP_CLASSES
#include "dtrain/Dialect/Comm/IR/CommOps.cpp.inc"
