//===- CheckParallelStores.cpp - stores that every iteration shares -------===//
//
// Implements --dtrain-check-parallel-stores: a store inside an
// scf.parallel whose element does not depend on one of the loop's indices
// is written by every iteration along that dimension, which on a GPU is a
// race between the kernel's threads (a lost update where it reads the
// element first). Running the loops on the CPU, in order or reversed,
// cannot show a lost update: both orders sum the same.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "ParallelLoops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_CHECKPARALLELSTORES
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

namespace {
/// The parallel loops' indices that values depend on, through the
/// operations that compute them, the bounds of the scf.for loops whose
/// indices they use, and everything inside the regions of the operations
/// that yield them.
class IndexDependences {
public:
  /// Adds VALUE's dependences.
  void add(Value value) {
    SmallVector<Value> work = {value};
    while (!work.empty()) {
      Value next = work.pop_back_val();
      if (!visited.insert(next).second)
        continue;
      if (auto argument = dyn_cast<BlockArgument>(next)) {
        Operation *owner = argument.getOwner()->getParentOp();
        if (isa<scf::ParallelOp>(owner))
          indices.insert(argument);
        else if (isa<scf::ForOp>(owner))
          work.append(owner->operand_begin(), owner->operand_end());
        continue;
      }
      Operation *op = next.getDefiningOp();
      work.append(op->operand_begin(), op->operand_end());
      op->walk([&](Operation *nested) {
        if (nested != op)
          work.append(nested->operand_begin(), nested->operand_end());
      });
    }
  }

  bool contains(Value index) const { return indices.contains(index); }

private:
  DenseSet<Value> visited;
  DenseSet<Value> indices;
};
} // namespace

/// The buffer STORED is a view of, through view-like operations.
static Value getRootBuffer(Value stored) {
  while (auto view = stored.getDefiningOp<ViewLikeOpInterface>())
    stored = view.getViewSource();
  return stored;
}

/// Checks STORE, which writes BUFFER at INDICES, inside KERNEL: emits an
/// error and fails where a dimension of an enclosing parallel loop (of
/// more than one iteration) reaches neither the indices nor a condition
/// that the store is under.
static LogicalResult checkStore(Operation *store, Value buffer,
                                ValueRange indices, scf::ParallelOp kernel) {
  // A buffer allocated inside the kernel is each iteration's own.
  if (Operation *allocation = getRootBuffer(buffer).getDefiningOp())
    if (kernel->isProperAncestor(allocation))
      return success();
  IndexDependences dependences;
  for (Value index : indices)
    dependences.add(index);
  for (Operation *parent = store->getParentOp(); parent != kernel;
       parent = parent->getParentOp()) {
    if (auto branch = dyn_cast<scf::IfOp>(parent))
      dependences.add(branch.getCondition());
    else if (auto dispatch = dyn_cast<scf::IndexSwitchOp>(parent))
      dependences.add(dispatch.getArg());
  }
  for (auto loop = store->getParentOfType<scf::ParallelOp>(); loop;
       loop = loop == kernel ? nullptr
                             : loop->getParentOfType<scf::ParallelOp>()) {
    for (unsigned dim = 0; dim < loop.getNumLoops(); ++dim) {
      std::optional<int64_t> trips =
          dtrain::lower::getStaticTripCount(loop, dim);
      if (trips && *trips <= 1)
        continue;
      if (dependences.contains(loop.getInductionVars()[dim]))
        continue;
      InFlightDiagnostic error =
          store->emitError("--dtrain-check-parallel-stores: every iteration "
                           "of dimension ")
          << dim
          << " of the enclosing parallel loop writes this element: a race "
             "between a kernel's threads";
      error.attachNote(loop.getLoc()) << "the parallel loop";
      return failure();
    }
  }
  return success();
}

namespace {
struct CheckParallelStoresPass
    : public mlir::dtrain::lower::impl::CheckParallelStoresBase<
          CheckParallelStoresPass> {
  void runOnOperation() override {
    bool failed = false;
    // Each outermost loop (a kernel), then the stores inside it.
    getOperation().walk([&](scf::ParallelOp kernel) {
      if (kernel->getParentOfType<scf::ParallelOp>())
        return;
      kernel.walk([&](Operation *op) {
        if (auto store = dyn_cast<memref::StoreOp>(op))
          failed |= mlir::failed(
              checkStore(op, store.getMemRef(), store.getIndices(), kernel));
        else if (auto store = dyn_cast<vector::StoreOp>(op))
          failed |= mlir::failed(
              checkStore(op, store.getBase(), store.getIndices(), kernel));
      });
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
