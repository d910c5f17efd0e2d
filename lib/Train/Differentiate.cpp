//===- Differentiate.cpp - reverse-mode differentiation -------------------===//
//
// The ops that lie on a path from a WRT value to the objective are visited
// in reverse order of the block; each turns the gradients of its results
// into those of its operands (nn::DifferentiableOpInterface). Everything
// else is a constant of the backward pass and is never asked for a
// gradient, so integer code, shape arithmetic and the labels need none.
// Integer and boolean values carry no gradient even where computed from a
// WRT value (a comparison of activations, `(h == 0).float()`), as in
// PyTorch: the path stops at them.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Train/Differentiate.h"

#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::dtrain;

/// A constant tensor of TYPE filled with VALUE.
static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

FailureOr<SmallVector<Value>>
mlir::dtrain::train::buildGradients(OpBuilder &b, Value objective,
                                    ArrayRef<Value> wrt, Value seed) {
  Block *block = objective.getParentBlock();
  Location loc = objective.getLoc();

  // Float values that depend on WRT (forward), in block order.
  DenseSet<Value> varied(wrt.begin(), wrt.end());
  for (Operation &op : *block)
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value result : op.getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
          varied.insert(result);

  // Values the objective depends on (backward) that also depend on WRT:
  // the values that carry a gradient.
  DenseSet<Value> active;
  if (varied.contains(objective))
    active.insert(objective);
  SmallVector<Operation *> path;
  for (Operation &op : llvm::reverse(*block)) {
    if (llvm::none_of(op.getResults(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    path.push_back(&op);
    for (Value operand : op.getOperands())
      if (varied.contains(operand))
        active.insert(operand);
  }

  // The op before the backward pass, to clean up after it.
  Block::iterator insertion = b.getInsertionPoint();
  Operation *beforeBackward = insertion == b.getInsertionBlock()->begin()
                                  ? nullptr
                                  : &*std::prev(insertion);

  DenseMap<Value, Value> grads;
  auto accumulate = [&](Value value, Value grad) {
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = nn::AddOp::create(b, grad.getLoc(), it->second, grad);
  };
  if (active.contains(objective))
    grads[objective] =
        seed ? seed
             : splat(b, loc, cast<RankedTensorType>(objective.getType()), 1.0);

  for (Operation *op : path) {
    auto differentiable = dyn_cast<nn::DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitError("cannot differentiate '")
             << op->getName() << "': the gradient reaches it on its way from "
             << "the parameters to the loss, and it has no vector-Jacobian "
                "product";
    SmallVector<Value> resultGrads = llvm::map_to_vector(
        op->getResults(), [&](Value result) { return grads.lookup(result); });
    SmallVector<Value> operandGrads;
    if (failed(differentiable.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] :
         llvm::zip_equal(op->getOperands(), operandGrads))
      if (grad && active.contains(operand))
        accumulate(operand, grad);
  }

  SmallVector<Value> result;
  for (Value value : wrt) {
    Value grad = grads.lookup(value);
    result.push_back(
        grad ? grad
             : splat(b, loc, cast<RankedTensorType>(value.getType()), 0.0));
  }
  // Vector-Jacobian products build the gradients of every operand; those
  // of constants of the backward pass (the inputs, say) are unused.
  DenseSet<Value> wanted(result.begin(), result.end());
  for (Block::iterator it = b.getInsertionPoint();
       it != b.getInsertionBlock()->begin();) {
    Operation *op = &*--it;
    if (op == beforeBackward)
      break;
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return wanted.contains(v); }) &&
        isOpTriviallyDead(op)) {
      it = std::next(it);
      op->erase();
    }
  }
  return result;
}
