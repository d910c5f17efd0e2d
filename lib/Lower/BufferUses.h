//===- BufferUses.h - where a buffer of a step is used ----------*- C++ -*-===//
//
// What the Lower passes that reason about buffers after bufferization share:
// the ops of a straight-line block that may touch a buffer's memory.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LIB_LOWER_BUFFERUSES_H
#define DTRAIN_LIB_LOWER_BUFFERUSES_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::dtrain::lower {

/// Whether ALLOC is a static allocation with the identity layout in the
/// default memory space: one that can become a view of a byte buffer.
bool isStaticPlainAlloc(memref::AllocOp alloc);

/// The ops of BLOCK (ancestors of the users) that use BUFFER or any value
/// derived from it: data flow is followed through every op (views,
/// extracted pointers, casts, ...), since anything computed from a buffer
/// may reach its memory. Nullopt when the buffer escapes: a user outside
/// BLOCK, a memref.dealloc or a func.return.
std::optional<llvm::SetVector<Operation *>> getDerivedUsers(Value buffer,
                                                            Block &block);

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LIB_LOWER_BUFFERUSES_H
