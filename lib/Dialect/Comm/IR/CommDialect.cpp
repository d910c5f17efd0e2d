//===- CommDialect.cpp - comm dialect, types and attributes ---------------===//

#include "dtrain/Dialect/AllowInlining.h"
#include "dtrain/Dialect/Comm/IR/CommDialect.h"
#include "dtrain/Dialect/Comm/IR/CommOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dtrain::comm;

#include "dtrain/Dialect/Comm/IR/CommDialect.cpp.inc"
#include "dtrain/Dialect/Comm/IR/CommEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dtrain/Dialect/Comm/IR/CommAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dtrain/Dialect/Comm/IR/CommTypes.cpp.inc"

void CommDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dtrain/Dialect/Comm/IR/CommTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dtrain/Dialect/Comm/IR/CommAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dtrain/Dialect/Comm/IR/CommOps.cpp.inc"
      >();
  addInterfaces<AllowInliningInterface>();
}
