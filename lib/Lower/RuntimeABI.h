//===- RuntimeABI.h - Calling the runtime's C ABI from MLIR -----*- C++ -*-===//
//
// What every Lower pass that emits calls of runtime/include/dtrain_rt.h
// needs: declaring and calling a runtime function, and passing a buffer as
// the C ABI takes it (the address of its first element).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LIB_LOWER_RUNTIMEABI_H
#define DTRAIN_LIB_LOWER_RUNTIMEABI_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dtrain::lower {

/// Calls the runtime function `name` of type `type` (pointers are !llvm.ptr,
/// int32_t is i32, int64_t is i64, float is f32), declaring it privately in
/// the module that encloses `from` on first use.
func::CallOp createRuntimeCall(OpBuilder &builder, Operation *from,
                               StringRef name, FunctionType type,
                               ValueRange args);

/// The address of the first element of a contiguous memref (its aligned
/// pointer plus its offset), as !llvm.ptr.
Value getBufferAddress(OpBuilder &b, Location loc, Value memref);

/// The number of elements of a memref, as i64.
Value getBufferElementCount(OpBuilder &b, Location loc, Value memref);

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LIB_LOWER_RUNTIMEABI_H
