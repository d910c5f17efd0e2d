//===- dtrain-translate.cpp - dtrain's mlir-translate ---------------------===//
//
// mlir-translate with every upstream translation plus dtrain's
// --import-onnx.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Import/ONNXImporter.h"

#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  mlir::dtrain::registerONNXImportTranslation();
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv, "dtrain translation driver: --import-onnx model.onnx "
                  "produces the nn dialect\n"));
}
