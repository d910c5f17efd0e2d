//===- Passes.td - Train phase passes ----------------------*- tablegen -*-===//
//
// The Train phase turns a forward function in the nn dialect into one
// training step: reverse-mode differentiation from the scalar loss
// (--dtrain-build-training{loss=... optimizer=...}), then optimizer updates
// in the train dialect. Its passes arrive with issue 5; until then this file
// is not built (tablegen of an empty pass list would only generate an empty
// registration function). To add the first pass: a def here, the tablegen
// and doc lines of include/dtrain/Dist/CMakeLists.txt, a library in
// lib/Train, and its registration in lib/Registration/InitAll.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_TRAIN_PASSES_TD
#define DTRAIN_TRAIN_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // DTRAIN_TRAIN_PASSES_TD
