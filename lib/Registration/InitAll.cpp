//===- InitAll.cpp - register everything dtrain provides ------------------===//

#include "dtrain/InitAll.h"

#include "dtrain/Dialect/Comm/IR/CommDialect.h"
#include "dtrain/Dialect/Comm/Transforms/BufferizableOpInterfaceImpl.h"
#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "dtrain/Dist/Passes.h"
#include "dtrain/Lower/Passes.h"
#include "dtrain/Lower/Pipelines.h"
#include "dtrain/Train/Passes.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::dtrain::registerAllDialects(DialectRegistry &registry) {
  registry.insert<comm::CommDialect, nn::NNDialect, train::TrainDialect>();
  comm::registerBufferizableOpInterfaceExternalModels(registry);
}

void mlir::dtrain::registerAllPasses() {
  dist::registerDistPasses();
  lower::registerLowerPasses();
  lower::registerLowerPipelines();
  train::registerTrainPasses();
}
