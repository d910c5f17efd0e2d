//===- InitAll.h - register everything dtrain provides ----------*- C++ -*-===//
//
// The single place that lists dtrain's dialects, interface models and passes,
// shared by dtrain-opt and the mlir-opt plugin.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_INITALL_H
#define DTRAIN_INITALL_H

namespace mlir {
class DialectRegistry;

namespace dtrain {
/// Adds the nn, train and comm dialects and their external interface models
/// (bufferization of comm ops) to `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers every dtrain pass with the global pass registry, so that
/// --dtrain-* flags and --pass-pipeline can name them.
void registerAllPasses();
} // namespace dtrain
} // namespace mlir

#endif // DTRAIN_INITALL_H
