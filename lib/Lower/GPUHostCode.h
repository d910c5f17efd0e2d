//===- GPUHostCode.h - host code between kernel launches --------*- C++ -*-===//
//
// What --dtrain-chain-gpu-launches and --dtrain-register-graph-steps share:
// which host ops between a step's kernel launches may touch the memory the
// kernels use, and which calls queue their work on the step stream.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LIB_LOWER_GPUHOSTCODE_H
#define DTRAIN_LIB_LOWER_GPUHOSTCODE_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dtrain::lower {

/// Whether the host op OP may touch memory that kernels of an open chain
/// read or write, or hand it to code that does: every memory effect but
/// allocation and deallocation counts, unknown effects (calls) too, and so
/// does anything with regions or that ends a block.
bool needsChainResults(Operation *op);

/// Whether OP calls a function of SYMBOLS that carries the unit attribute
/// NAME (kStepStreamAttrName, kStreamIndependentAttrName).
bool callsFunctionWith(Operation *op, StringRef name, SymbolTable &symbols);

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LIB_LOWER_GPUHOSTCODE_H
