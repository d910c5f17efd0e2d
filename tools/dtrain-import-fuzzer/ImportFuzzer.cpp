//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// Feeds arbitrary bytes to the importer as an ONNX model. Errors are the
// expected outcome; crashes, hangs, leaks and sanitizer reports are bugs.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Import/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    ctx->printOpOnDiagnostic(false);
    return ctx;
  }();
  // Diagnostics are the importer's normal answer to bad input: drop them.
  mlir::ScopedDiagnosticHandler silence(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", /*RequiresNullTerminator=*/false);
  mlir::dtrain::ONNXImportOptions options;
  options.batchSize = 2;
  (void)mlir::dtrain::importONNX(*buffer, context, options);
  return 0;
}
