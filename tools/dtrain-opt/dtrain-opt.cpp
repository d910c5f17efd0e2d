//===- dtrain-opt.cpp - dtrain's mlir-opt ---------------------------------===//
//
// mlir-opt with every upstream dialect, pass and extension plus dtrain's.
//
//===----------------------------------------------------------------------===//

#include "dtrain/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::dtrain::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::dtrain::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "dtrain optimizer driver: runs dtrain and MLIR passes on "
                  ".mlir files\n",
      registry));
}
