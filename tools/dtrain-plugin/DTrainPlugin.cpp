//===- DTrainPlugin.cpp - dtrain as an mlir-opt plugin --------------------===//
//
// Loaded by an upstream mlir-opt of the same LLVM version:
//   mlir-opt --load-dialect-plugin=DTrainPlugin.so \
//            --load-pass-plugin=DTrainPlugin.so \
//            --pass-pipeline="builtin.module(dtrain-lower-comm-to-runtime)"
//
//===----------------------------------------------------------------------===//

#include "dtrain/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DTrain", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::dtrain::registerAllDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DTrain", LLVM_VERSION_STRING,
          []() { mlir::dtrain::registerAllPasses(); }};
}
