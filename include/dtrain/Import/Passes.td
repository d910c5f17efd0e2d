//===- Passes.td - Import phase passes ---------------------*- tablegen -*-===//
//
// The Import phase brings a model into the nn dialect: the ONNX translation
// (dtrain-translate --import-onnx, and dtrain-opt on a .onnx file) and the
// passes that finish the import, such as binding symbolic input dimensions.
// Its passes arrive with the ONNX importer (issue 3); until then this file
// is not built (tablegen of an empty pass list would only generate an empty
// registration function). To add the first pass: a def here, the tablegen
// and doc lines of include/dtrain/Dist/CMakeLists.txt, a library in
// lib/Import, and its registration in lib/Registration/InitAll.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_IMPORT_PASSES_TD
#define DTRAIN_IMPORT_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // DTRAIN_IMPORT_PASSES_TD
