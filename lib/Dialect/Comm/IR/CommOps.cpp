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
/// bufferized, its memref.
static void getCollectiveEffects(
    OpOperand &buffer,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(),
                       CommunicationResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
  if (!isa<MemRefType>(buffer.get().getType()))
    return;
  effects.emplace_back(MemoryEffects::Read::get(), &buffer,
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &buffer,
                       SideEffects::DefaultResource::get());
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
  getCollectiveEffects(getInputMutable(), effects);
}

LogicalResult AllReduceStartOp::verify() {
  return verifyInPlaceResult(*this, getInput(), getInflight());
}

void AllReduceStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getInputMutable(), effects);
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
  getCollectiveEffects(getBufferMutable(), effects);
}

#define GET_OP_CLASSES
#include "dtrain/Dialect/Comm/IR/CommOps.cpp.inc"
