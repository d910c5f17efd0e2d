//===- TrainDialect.cpp - train dialect and its argument roles ------------===//

#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "dtrain/Dialect/AllowInlining.h"
#include "dtrain/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::dtrain::train;

#include "dtrain/Dialect/Train/IR/TrainDialect.cpp.inc"

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dtrain/Dialect/Train/IR/TrainOps.cpp.inc"
      >();
  addInterfaces<AllowInliningInterface>();
}

static constexpr llvm::StringLiteral kRoleAttrNames[] = {
    TrainDialect::kParamAttrName,          TrainDialect::kBufferAttrName,
    TrainDialect::kOptimizerStateAttrName, TrainDialect::kRankStateAttrName,
    TrainDialect::kInputAttrName,          TrainDialect::kLabelAttrName};

BlockArgument TrainDialect::insertStateArgument(FunctionOpInterface func,
                                                Type type, StringRef role,
                                                StringRef name) {
  unsigned index = 0;
  while (index < func.getNumArguments() &&
         (func.getArgAttr(index, kParamAttrName) ||
          func.getArgAttr(index, kOptimizerStateAttrName) ||
          func.getArgAttr(index, kRankStateAttrName)))
    ++index;
  Builder b(func.getContext());
  (void)func.insertArgument(
      index, type,
      b.getDictionaryAttr(b.getNamedAttr(role, b.getStringAttr(name))),
      func.getLoc());
  return func.getArgument(index);
}

void TrainDialect::appendStateResult(FunctionOpInterface func, Value value,
                                     StringRef name) {
  Builder b(func.getContext());
  unsigned index = func.getNumResults();
  (void)func.insertResult(index, value.getType(),
                          b.getDictionaryAttr(b.getNamedAttr(
                              kUpdatedAttrName, b.getStringAttr(name))));
  Operation *terminator = func.getFunctionBody().front().getTerminator();
  terminator->insertOperands(terminator->getNumOperands(), value);
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attribute) {
  StringRef attrName = attribute.getName().strref();
  auto emitArgError = [&]() {
    return op->emitOpError()
           << "argument #" << argIndex << " attribute '" << attrName << "' ";
  };
  if (!llvm::is_contained(kRoleAttrNames, attrName))
    return emitArgError() << "is not a train dialect argument attribute "
                             "(expected train.param, train.buffer, "
                             "train.optimizer_state, train.rank_state, "
                             "train.input or train.label)";
  auto name = dyn_cast<StringAttr>(attribute.getValue());
  if (!name || name.empty())
    return emitArgError() << "must be a non-empty string naming the tensor";

  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || regionIndex != 0)
    return emitArgError() << "is only valid on function arguments";
  Type argType = function.getArgumentTypes()[argIndex];
  if (!isa<RankedTensorType, MemRefType>(argType))
    return emitArgError() << "needs a ranked tensor or memref argument, got "
                          << argType;

  // One role per argument, one argument per name. Checked from the first
  // role attribute of each argument, so each problem is reported once.
  DictionaryAttr argAttrs = function.getArgAttrDict(argIndex);
  StringRef firstRole = *llvm::find_if(kRoleAttrNames, [&](StringRef role) {
    return static_cast<bool>(argAttrs.get(role));
  });
  if (firstRole != attrName)
    return emitArgError() << "conflicts with '" << firstRole
                          << "': an argument has a single role";
  for (unsigned other = 0; other < argIndex; ++other) {
    DictionaryAttr otherAttrs = function.getArgAttrDict(other);
    if (!otherAttrs)
      continue;
    for (StringRef role : kRoleAttrNames)
      if (otherAttrs.get(role) == name)
        return emitArgError()
               << "reuses the name " << name << " of argument #" << other;
  }
  return success();
}

LogicalResult
TrainDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                          unsigned resultIndex,
                                          NamedAttribute attribute) {
  StringRef attrName = attribute.getName().strref();
  auto emitResultError = [&]() {
    return op->emitOpError()
           << "result #" << resultIndex << " attribute '" << attrName << "' ";
  };
  if (attrName != kOutputAttrName && attrName != kUpdatedAttrName)
    return emitResultError() << "is not a train dialect result attribute "
                                "(expected train.output or train.updated)";
  auto name = dyn_cast<StringAttr>(attribute.getValue());
  if (!name || name.empty())
    return emitResultError()
           << "must be a non-empty string naming the "
           << (attrName == kOutputAttrName ? "output" : "state");
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || regionIndex != 0)
    return emitResultError() << "is only valid on function results";
  if (attrName == kOutputAttrName)
    return success();
  // The new value of a parameter, buffer or optimizer state argument.
  for (unsigned arg = 0, e = function.getNumArguments(); arg < e; ++arg) {
    DictionaryAttr argAttrs = function.getArgAttrDict(arg);
    if (!argAttrs)
      continue;
    for (StringRef role : kUpdatableAttrNames) {
      if (argAttrs.get(role) != name)
        continue;
      Type argType = function.getArgumentTypes()[arg];
      Type resultType = function.getResultTypes()[resultIndex];
      if (argType != resultType)
        return emitResultError()
               << "updates argument #" << arg << " of type " << argType
               << " with a result of type " << resultType;
      return success();
    }
  }
  return emitResultError() << "names " << name
                           << ", which is not a train.param, train.buffer or "
                              "train.optimizer_state argument";
}
