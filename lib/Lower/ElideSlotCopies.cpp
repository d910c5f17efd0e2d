//===- ElideSlotCopies.cpp - producers written straight into slots -------===//
//
// Implements --dtrain-elide-slot-copies: a gradient bucket after
// bufferization is a 1-D buffer filled by copies of freshly written
// buffers; each qualifying source buffer becomes a view of its slot, and
// its copy goes away.
//
//===----------------------------------------------------------------------===//

#include "BufferUses.h"
#include "dtrain/Lower/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_ELIDESLOTCOPIES
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

namespace {

/// A static memref.alloc with the identity layout, the kind that can
/// become a view of a byte buffer.
memref::AllocOp getPlainAlloc(Value value) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  return alloc && lower::isStaticPlainAlloc(alloc) ? alloc : memref::AllocOp();
}

/// Elements [begin, end) of a bucket.
struct Slot {
  int64_t begin, end;
  bool overlaps(Slot other) const {
    return begin < other.end && other.begin < end;
  }
};

/// The elements of BUCKET (1-D) that USER, one of its direct users, may
/// touch: a static subview's, otherwise all of them.
Slot getTouchedSlot(Operation *user, int64_t bucketSize) {
  auto subview = dyn_cast<memref::SubViewOp>(user);
  if (subview && subview.getType().getRank() == 1 &&
      !ShapedType::isDynamic(subview.getStaticOffsets()[0]) &&
      !ShapedType::isDynamic(subview.getStaticSizes()[0]))
    return {subview.getStaticOffsets()[0],
            subview.getStaticOffsets()[0] + subview.getStaticSizes()[0]};
  return {0, bucketSize};
}

/// A copy whose source buffer can be its destination slot instead.
struct ElidableCopy {
  memref::CopyOp copy;
  memref::AllocOp source;
  Slot slot;
};

/// Whether A is strictly between FROM and TO in their block.
bool isBetween(Operation *a, Operation *from, Operation *to) {
  return from->isBeforeInBlock(a) && a->isBeforeInBlock(to);
}

/// COPY as an ElidableCopy into a slot of BUCKET, if it is one (see the
/// pass description).
std::optional<ElidableCopy> analyzeCopy(memref::CopyOp copy, Block &block,
                                        memref::AllocOp &bucket) {
  // The source: an alloc seen through reshapes.
  Value source = copy.getSource();
  while (Operation *def = source.getDefiningOp()) {
    if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(def))
      break;
    source = def->getOperand(0);
  }
  memref::AllocOp alloc = getPlainAlloc(source);
  if (!alloc || alloc->getBlock() != &block)
    return std::nullopt;

  // The destination: a static unit-stride slice of a flat alloc.
  auto slice = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  if (!slice || slice.getType().getRank() != 1)
    return std::nullopt;
  bucket = getPlainAlloc(slice.getSource());
  if (!bucket || bucket->getBlock() != &block ||
      bucket.getType().getRank() != 1 ||
      bucket.getType().getElementType() != alloc.getType().getElementType())
    return std::nullopt;
  const int64_t offset = slice.getStaticOffsets()[0],
                size = slice.getStaticSizes()[0],
                stride = slice.getStaticStrides()[0];
  if (ShapedType::isDynamic(offset) || stride != 1 ||
      size != alloc.getType().getNumElements())
    return std::nullopt;
  const Slot slot{offset, offset + size};

  // Every use of the source precedes the copy: the slot may then hold the
  // data from the source's allocation on.
  std::optional<SetVector<Operation *>> sourceUsers =
      lower::getDerivedUsers(alloc, block);
  if (!sourceUsers)
    return std::nullopt;
  for (Operation *user : *sourceUsers)
    if (user != copy && !user->isBeforeInBlock(copy))
      return std::nullopt;

  // Nothing else touches the slot's elements in the meantime, nor does
  // the bucket escape.
  if (!lower::getDerivedUsers(bucket, block))
    return std::nullopt;
  for (Operation *user : bucket->getUsers()) {
    if (user == slice ||
        !getTouchedSlot(user, bucket.getType().getNumElements()).overlaps(slot))
      continue;
    SetVector<Operation *> touching;
    touching.insert(user);
    for (Value result : user->getResults())
      touching.insert_range(*lower::getDerivedUsers(result, block));
    for (Operation *op : touching)
      if (isBetween(op, alloc, copy))
        return std::nullopt;
  }
  return ElidableCopy{copy, alloc, slot};
}

/// Rewrites BUCKET into a byte buffer with views, allocated before its
/// earliest member, and each of COPIES' sources into a view of its slot.
void elideCopies(memref::AllocOp bucket, MutableArrayRef<ElidableCopy> copies) {
  Operation *first = bucket;
  for (ElidableCopy &member : copies)
    if (member.source->isBeforeInBlock(first))
      first = member.source;
  MemRefType bucketType = bucket.getType();
  const int64_t elementBytes =
      llvm::divideCeil(bucketType.getElementTypeBitWidth(), 8);
  OpBuilder b(first);
  Location loc = bucket.getLoc();
  auto bytes = memref::AllocOp::create(
      b, loc,
      MemRefType::get({bucketType.getNumElements() * elementBytes},
                      b.getI8Type()),
      bucket.getAlignmentAttr());
  auto viewAt = [&](MemRefType type, int64_t element) {
    Value shift =
        arith::ConstantIndexOp::create(b, loc, element * elementBytes);
    return memref::ViewOp::create(b, loc, type, bytes, shift, ValueRange{});
  };
  bucket.replaceAllUsesWith(viewAt(bucketType, 0).getResult());
  bucket.erase();
  for (ElidableCopy &member : copies) {
    b.setInsertionPoint(member.source);
    member.source.replaceAllUsesWith(
        viewAt(member.source.getType(), member.slot.begin).getResult());
    member.source.erase();
    // The copy, and the views that only it used.
    SmallVector<Operation *> dead{member.copy};
    for (size_t i = 0; i < dead.size(); ++i) {
      SmallVector<Value> operands(dead[i]->getOperands());
      dead[i]->erase();
      for (Value operand : operands)
        if (Operation *def = operand.getDefiningOp();
            def && def->use_empty() &&
            isa<memref::SubViewOp, memref::CollapseShapeOp,
                memref::ExpandShapeOp>(def))
          dead.push_back(def);
    }
  }
}

struct ElideSlotCopiesPass
    : dtrain::lower::impl::ElideSlotCopiesBase<ElideSlotCopiesPass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal())
        elideInBlock(function.getBody().front());
  }

  void elideInBlock(Block &block) {
    // Decided on the IR as it is: eliding one copy only moves writes of
    // its own slot earlier, within the span its check covered.
    llvm::MapVector<Operation *, SmallVector<ElidableCopy>> byBucket;
    for (auto copy : block.getOps<memref::CopyOp>()) {
      memref::AllocOp bucket;
      if (std::optional<ElidableCopy> member = analyzeCopy(copy, block, bucket))
        byBucket[bucket].push_back(*member);
    }
    for (auto &[bucket, copies] : byBucket)
      elideCopies(cast<memref::AllocOp>(bucket), copies);
  }
};

} // namespace
