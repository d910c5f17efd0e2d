//===- VectorizeParallelLoops.cpp - several elements a GPU thread ---------===//
//
// Implements --dtrain-vectorize-parallel-loops: a 1-D elementwise
// scf.parallel over contiguous buffers takes several elements an
// iteration, with vector loads and stores of `access-bytes` bytes (16: one
// 128-bit access) for its narrowest element type. A GPU kernel of 16-bit
// data that moves 2 bytes a thread is bound by its instructions and its
// blocks' scheduling, not by memory bandwidth. Each iteration checks that
// its buffers are aligned for the vector accesses and otherwise runs its
// elements one by one, as the loop did.
//
//===----------------------------------------------------------------------===//

#include "ParallelLoops.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_VECTORIZEPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

namespace {

/// Bytes of an element of a buffer the pass accesses as vectors: floats of
/// 16 to 64 bits and integers of 8 to 64 (not i1, which memory holds a byte
/// an element and a vector a bit); 0 for any other type.
int64_t getElementBytes(Type type) {
  if (isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(type))
    return type.getIntOrFloatBitWidth() / 8;
  if (auto integer = dyn_cast<IntegerType>(type))
    if (llvm::is_contained({8u, 16u, 32u, 64u}, integer.getWidth()))
      return integer.getWidth() / 8;
  return 0;
}

/// Whether a value of TYPE can become a vector of it: a scalar float or
/// integer (i1 included: compares and selects).
bool isScalar(Type type) { return isa<FloatType, IntegerType>(type); }

/// A loop the pass rewrites, and what the rewrite needs to know.
struct Candidate {
  scf::ParallelOp loop;
  /// Elements an iteration of the rewritten loop.
  int64_t width = 0;
  /// The buffers the body loads or stores, each a rank-1 memref with unit
  /// stride.
  llvm::SetVector<Value> buffers;
};

/// Whether MEMREF is a rank-1 buffer of unit stride with elements the pass
/// vectorizes.
bool isContiguousBuffer(Value memref) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || type.getRank() != 1 || !getElementBytes(type.getElementType()))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides[0] == 1;
}

/// LOOP as a candidate: outermost (a kernel's), 1-D from 0 to a constant
/// in steps of 1, without results, its body loads and stores at the
/// induction variable of contiguous buffers and element-wise arith ops on
/// scalars (values from above included) between them. Its vectors are the
/// widest that divide the trip count and keep an access within
/// ACCESSBYTES.
std::optional<Candidate> getCandidate(scf::ParallelOp loop,
                                      int64_t accessBytes) {
  std::optional<int64_t> upper = dtrain::lower::getKernelTripCount(loop);
  if (!upper || *upper < 2)
    return std::nullopt;
  Candidate candidate{loop, 0, {}};
  Value index = loop.getInductionVars()[0];
  Region &region = loop.getRegion();
  int64_t narrowest = 0;
  bool stores = false;
  auto access = [&](Value memref, ValueRange indices) {
    if (indices.size() != 1 || indices[0] != index ||
        !isContiguousBuffer(memref))
      return false;
    const int64_t bytes =
        getElementBytes(cast<MemRefType>(memref.getType()).getElementType());
    narrowest = narrowest ? std::min(narrowest, bytes) : bytes;
    candidate.buffers.insert(memref);
    return true;
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    bool fits;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      fits = access(load.getMemRef(), load.getIndices());
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      fits = access(store.getMemRef(), store.getIndices());
      stores = true;
    } else {
      fits = op.getNumRegions() == 0 &&
             (matchPattern(&op, m_Constant()) ||
              (isa<arith::ArithDialect>(op.getDialect()) &&
               OpTrait::hasElementwiseMappableTraits(&op))) &&
             llvm::all_of(op.getOperandTypes(), isScalar) &&
             llvm::all_of(op.getResultTypes(), isScalar);
    }
    if (!fits)
      return std::nullopt;
    // Values from above: buffers (checked where accessed) or scalars.
    for (Value operand : op.getOperands())
      if (!region.isAncestor(operand.getParentRegion()) &&
          !isa<MemRefType>(operand.getType()) && !isScalar(operand.getType()))
        return std::nullopt;
  }
  auto reduce = cast<scf::ReduceOp>(loop.getBody()->getTerminator());
  if (!stores || reduce.getNumOperands() != 0)
    return std::nullopt;
  int64_t width = accessBytes / narrowest;
  while (width >= 2 && *upper % width != 0)
    width /= 2;
  if (width < 2)
    return std::nullopt;
  candidate.width = width;
  return candidate;
}

/// The alignment, in bytes, of a vector access of WIDTH elements of
/// BUFFER: its size, at most ACCESSBYTES (a wider vector is split into
/// accesses of that size).
int64_t getVectorAlignment(Value buffer, int64_t width, int64_t accessBytes) {
  const int64_t elementBytes =
      getElementBytes(cast<MemRefType>(buffer.getType()).getElementType());
  return std::min(width * elementBytes, accessBytes);
}

/// Whether BUFFER's first element lies at a multiple of ALIGNMENT bytes,
/// computed where B is.
Value isAligned(OpBuilder &b, Location loc, Value buffer, int64_t alignment) {
  auto type = cast<MemRefType>(buffer.getType());
  const int64_t elementBytes = getElementBytes(type.getElementType());
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  SmallVector<int64_t> strides;
  int64_t offset;
  (void)type.getStridesAndOffset(strides, offset);
  if (ShapedType::isDynamic(offset)) {
    Value elements =
        memref::ExtractStridedMetadataOp::create(b, loc, buffer).getOffset();
    address = arith::AddIOp::create(
        b, loc, address,
        arith::MulIOp::create(
            b, loc, elements,
            arith::ConstantIndexOp::create(b, loc, elementBytes)));
  } else if (offset != 0) {
    address = arith::AddIOp::create(
        b, loc, address,
        arith::ConstantIndexOp::create(b, loc, offset * elementBytes));
  }
  Value low = arith::AndIOp::create(
      b, loc, address, arith::ConstantIndexOp::create(b, loc, alignment - 1));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, low,
                               arith::ConstantIndexOp::create(b, loc, 0));
}

/// Rewrites C's loop into a loop over vectors of C.width elements: each
/// iteration runs the body once on vectors where every buffer is aligned
/// for them, else C.width times on scalars.
void vectorize(const Candidate &c, int64_t accessBytes) {
  scf::ParallelOp loop = c.loop;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value zero = constant(0), one = constant(1), width = constant(c.width);
  const int64_t iterations = *dtrain::lower::getKernelTripCount(loop);
  auto vectorLoop = scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{constant(iterations / c.width)},
      ValueRange{one});
  b.setInsertionPointToStart(vectorLoop.getBody());
  Value first =
      arith::MulIOp::create(b, loc, vectorLoop.getInductionVars()[0], width);
  Value aligned;
  for (Value buffer : c.buffers) {
    Value each = isAligned(b, loc, buffer,
                           getVectorAlignment(buffer, c.width, accessBytes));
    aligned = aligned ? arith::AndIOp::create(b, loc, aligned, each) : each;
  }
  auto choice = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
  Value index = loop.getInductionVars()[0];

  // Vectors: loads and stores at FIRST, every other op on vectors, values
  // from above broadcast.
  b.setInsertionPointToStart(choice.thenBlock());
  IRMapping vectors;
  auto broadcast = [&](Value scalar) -> Value {
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({c.width}, scalar.getType()), scalar);
  };
  auto vectorOf = [&](Value scalar) -> Value {
    if (Value mapped = vectors.lookupOrNull(scalar))
      return mapped;
    Value vector = broadcast(scalar); // from above
    vectors.map(scalar, vector);
    return vector;
  };
  auto alignment = [&](Value buffer) {
    return llvm::Align(getVectorAlignment(buffer, c.width, accessBytes));
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto type = VectorType::get({c.width}, load.getType());
      auto vectorLoad = vector::LoadOp::create(
          b, loc, type, load.getMemRef(), ValueRange{first},
          /*nontemporal=*/false, alignment(load.getMemRef()));
      vectors.map(load.getResult(), vectorLoad.getResult());
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      vector::StoreOp::create(b, loc, vectorOf(store.getValueToStore()),
                              store.getMemRef(), ValueRange{first},
                              /*nontemporal=*/false,
                              alignment(store.getMemRef()));
    } else if (matchPattern(&op, m_Constant())) {
      vectors.map(op.getResult(0), broadcast(b.clone(op)->getResult(0)));
    } else {
      SmallVector<Value> operands =
          llvm::map_to_vector(op.getOperands(), vectorOf);
      SmallVector<Type> types =
          llvm::map_to_vector(op.getResultTypes(), [&](Type t) -> Type {
            return VectorType::get({c.width}, t);
          });
      Operation *vectorOp = clone(b, &op, types, operands);
      vectors.map(op.getResults(), vectorOp->getResults());
    }
  }

  // Scalars: the original body for each of the elements from FIRST.
  b.setInsertionPointToStart(choice.elseBlock());
  auto elements = scf::ForOp::create(b, loc, zero, width, one);
  b.setInsertionPointToStart(elements.getBody());
  IRMapping scalars;
  scalars.map(index,
              arith::AddIOp::create(b, loc, first, elements.getInductionVar()));
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, scalars);
  loop.erase();
}

struct VectorizeParallelLoopsPass
    : dtrain::lower::impl::VectorizeParallelLoopsBase<
          VectorizeParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (accessBytes < 2 || !llvm::isPowerOf2_64(accessBytes)) {
      getOperation().emitError("--dtrain-vectorize-parallel-loops: "
                               "access-bytes must be a power of 2 of at "
                               "least 2, not ")
          << int64_t(accessBytes);
      return signalPassFailure();
    }
    SmallVector<Candidate> candidates;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (std::optional<Candidate> c = getCandidate(loop, accessBytes))
        candidates.push_back(std::move(*c));
    });
    for (const Candidate &c : candidates)
      vectorize(c, accessBytes);
  }
};

} // namespace
