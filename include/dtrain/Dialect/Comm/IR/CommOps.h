//===- CommOps.h - comm dialect types, attributes and ops -------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_COMM_IR_COMMOPS_H
#define DTRAIN_DIALECT_COMM_IR_COMMOPS_H

#include "dtrain/Dialect/Comm/IR/CommDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dtrain/Dialect/Comm/IR/CommEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dtrain/Dialect/Comm/IR/CommAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dtrain/Dialect/Comm/IR/CommTypes.h.inc"

namespace mlir::dtrain::comm {
/// The state that collectives read and write besides their buffers: the
/// network. Every rank must issue collectives in the same order, so no
/// transformation may reorder, merge or drop them.
struct CommunicationResource
    : public SideEffects::Resource::Base<CommunicationResource> {
  StringRef getName() final { return "dtrain::comm::Communication"; }
};
} // namespace mlir::dtrain::comm

#define GET_OP_CLASSES
#include "dtrain/Dialect/Comm/IR/CommOps.h.inc"

#endif // DTRAIN_DIALECT_COMM_IR_COMMOPS_H
