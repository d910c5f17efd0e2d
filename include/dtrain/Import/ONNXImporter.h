//===- ONNXImporter.h - ONNX models into the nn dialect ---------*- C++ -*-===//

#ifndef DTRAIN_IMPORT_ONNXIMPORTER_H
#define DTRAIN_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace mlir {
class MLIRContext;

namespace dtrain {

struct ONNXImportOptions {
  /// Binds dimension 0 of every data input whose size is symbolic.
  std::optional<int64_t> batchSize;
  /// Full shapes of named data inputs (take precedence over batchSize).
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Float initializers to keep constant rather than train, as PyTorch's
  /// buffers (an attention mask); the model's `dtrain.frozen` metadata
  /// (comma-separated names, which dtrain.export writes) adds to them.
  llvm::SmallVector<std::string> frozen;
};

/// Parses an ONNX model (binary protobuf, or the ONNX text format when the
/// buffer starts with '<') and builds a module with one `func.func @forward`
/// in the nn dialect: arguments are the float initializers (trainable
/// parameters, `train.param = "<name>"`, and batch-norm running statistics,
/// `train.buffer = "<name>"`) then the data inputs
/// (`train.input = "<name>"`); results are the graph outputs. Weights stay in
/// the ONNX file, whose path the module records as `train.onnx_model`.
/// Every problem is reported as a located error; returns null on failure.
OwningOpRef<ModuleOp> importONNX(const llvm::MemoryBuffer &buffer,
                                 MLIRContext *context,
                                 const ONNXImportOptions &options);

/// Registers the command-line options of the importer (`--batch-size`,
/// `--input-shape`, `--frozen`), shared by dtrain-translate, dtrain-opt and
/// dtrain-compile.
void registerONNXImportCLOptions();

/// The importer options given on the command line; emits an error at `loc`
/// and fails on a malformed value.
FailureOr<ONNXImportOptions> getONNXImportOptionsFromCL(Location loc);

/// Registers the `--import-onnx` translation for mlir-translate-style tools.
void registerONNXImportTranslation();

} // namespace dtrain
} // namespace mlir

#endif // DTRAIN_IMPORT_ONNXIMPORTER_H
