//===- PlanBuffers.cpp - one static arena for the buffers of a step ------===//
//
// Implements --dtrain-plan-buffers. A compiled step runs the same straight-
// line code every time, so its buffers can be laid out once at compile time:
// each static memref.alloc of a function's entry block becomes a view at a
// fixed offset of one global arena, and buffers whose lifetimes do not
// overlap share memory. No malloc or free is left on the hot path.
//
//===----------------------------------------------------------------------===//

#include "BufferUses.h"
#include "dtrain/Lower/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_PLANBUFFERS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

static constexpr int64_t kArenaAlignment = 64;

static int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

namespace {
/// A buffer to place: alive from op index `start` to `end` (inclusive) of
/// the entry block, `bytes` long.
struct PlannedBuffer {
  memref::AllocOp alloc;
  int64_t start, end, bytes;
  int64_t offset = 0;
};
} // namespace

/// The index of the last op of `block` that uses `alloc` or a value derived
/// from it, or nullopt when the buffer escapes the function or is
/// deallocated explicitly (it is then left alone).
static std::optional<int64_t>
getLastUse(memref::AllocOp alloc, Block &block,
           const DenseMap<Operation *, int64_t> &indices) {
  std::optional<SetVector<Operation *>> users =
      lower::getDerivedUsers(alloc, block);
  if (!users)
    return std::nullopt;
  int64_t last = indices.lookup(alloc);
  for (Operation *user : *users)
    last = std::max(last, indices.lookup(user));
  return last;
}

/// Assigns offsets, largest buffers first, each at the lowest offset that
/// does not overlap a placed buffer alive at the same time; returns the
/// arena size.
static int64_t assignOffsets(MutableArrayRef<PlannedBuffer> buffers) {
  SmallVector<PlannedBuffer *> order;
  for (PlannedBuffer &buffer : buffers)
    order.push_back(&buffer);
  // Ties in size go by allocation order, so the plan is deterministic.
  llvm::sort(order, [](PlannedBuffer *a, PlannedBuffer *b) {
    return std::make_pair(-a->bytes, a->start) <
           std::make_pair(-b->bytes, b->start);
  });
  SmallVector<PlannedBuffer *> placed;
  int64_t arenaBytes = 0;
  for (PlannedBuffer *buffer : order) {
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (PlannedBuffer *other : placed)
      if (other->start <= buffer->end && buffer->start <= other->end)
        busy.push_back({other->offset, other->offset + other->bytes});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + buffer->bytes <= begin)
        break;
      offset = std::max(offset, alignTo(end, kArenaAlignment));
    }
    buffer->offset = offset;
    arenaBytes = std::max(arenaBytes, offset + buffer->bytes);
    placed.push_back(buffer);
  }
  return alignTo(arenaBytes, kArenaAlignment);
}

namespace {
struct PlanBuffersPass
    : public lower::impl::PlanBuffersBase<PlanBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        planFunction(function, symbols);
  }

  void planFunction(func::FuncOp function, SymbolTable &symbols) {
    Block &block = function.getBody().front();
    DenseMap<Operation *, int64_t> indices;
    for (auto [index, op] : llvm::enumerate(block))
      indices[&op] = index;

    SmallVector<PlannedBuffer> buffers;
    for (auto alloc : block.getOps<memref::AllocOp>()) {
      if (!lower::isStaticPlainAlloc(alloc))
        continue;
      MemRefType type = alloc.getType();
      std::optional<int64_t> last = getLastUse(alloc, block, indices);
      if (!last)
        continue;
      int64_t elementBytes =
          llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      buffers.push_back({alloc, indices[alloc], *last,
                         std::max<int64_t>(1, type.getNumElements() *
                                                  elementBytes)});
    }
    if (buffers.empty())
      return;
    int64_t arenaBytes = assignOffsets(buffers);

    // The arena, uninitialized (.bss), and one view per buffer.
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPoint(function);
    auto arenaType = MemRefType::get({arenaBytes}, b.getI8Type());
    auto arena = memref::GlobalOp::create(
        b, function.getLoc(), ("__dtrain_arena_" + function.getName()).str(),
        b.getStringAttr("private"), arenaType, b.getUnitAttr(),
        /*constant=*/false, b.getI64IntegerAttr(kArenaAlignment));
    symbols.insert(arena);
    b.setInsertionPointToStart(&block);
    Value base = memref::GetGlobalOp::create(b, function.getLoc(), arenaType,
                                             arena.getSymName());
    for (PlannedBuffer &buffer : buffers) {
      b.setInsertionPoint(buffer.alloc);
      Location loc = buffer.alloc.getLoc();
      Value offset = arith::ConstantIndexOp::create(b, loc, buffer.offset);
      Value view = memref::ViewOp::create(b, loc, buffer.alloc.getType(),
                                          base, offset, ValueRange{});
      buffer.alloc.replaceAllUsesWith(view);
      buffer.alloc.erase();
    }
  }
};
} // namespace
