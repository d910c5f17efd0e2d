//===- dtrain-opt.cpp - dtrain's mlir-opt ---------------------------------===//
//
// mlir-opt with every upstream dialect, pass and extension plus dtrain's. An
// input file ending in .onnx is imported into the nn dialect first (with
// --batch-size / --input-shape), then processed like any .mlir file.
//
//===----------------------------------------------------------------------===//

#include "dtrain/InitAll.h"
#include "dtrain/Import/ONNXImporter.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

/// Imports `inputFilename` and returns its IR, with locations, as the
/// buffer MlirOptMain reads.
static std::unique_ptr<llvm::MemoryBuffer>
importONNXToBuffer(StringRef inputFilename, DialectRegistry &registry) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return nullptr;
  }
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  FailureOr<dtrain::ONNXImportOptions> options =
      dtrain::getONNXImportOptionsFromCL(
          FileLineColLoc::get(&context, inputFilename, 0, 0));
  if (failed(options))
    return nullptr;
  OwningOpRef<ModuleOp> module =
      dtrain::importONNX(*file, &context, *options);
  if (!module)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo());
  return llvm::MemoryBuffer::getMemBufferCopy(text, inputFilename);
}

int main(int argc, char **argv) {
  registerAllPasses();
  dtrain::registerAllPasses();
  dtrain::registerONNXImportCLOptions();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR (--dtrain-lower-to-nvvm).
  registerAllGPUToLLVMIRTranslations(registry);
  dtrain::registerAllDialects(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "dtrain optimizer driver: runs dtrain and MLIR passes on .mlir files "
      "and on .onnx models (imported into the nn dialect first)\n",
      registry);
  if (llvm::sys::path::extension(inputFilename) != ".onnx")
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::unique_ptr<llvm::MemoryBuffer> buffer =
      importONNXToBuffer(inputFilename, registry);
  if (!buffer)
    return EXIT_FAILURE;
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain(output->os(), std::move(buffer), registry,
                         MlirOptMainConfig::createFromCLOptions())))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
