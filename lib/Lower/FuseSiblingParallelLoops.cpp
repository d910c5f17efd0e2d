//===- FuseSiblingParallelLoops.cpp - small loops as one kernel -----------===//
//
// Implements --dtrain-fuse-sibling-parallel-loops: runs of adjacent small
// independent 1-D scf.parallel loops become one 2-D loop over (loop,
// iteration) whose body switches on the loop, so that the GPU path launches
// one kernel for them (an optimizer's updates of small parameters).
//
//===----------------------------------------------------------------------===//

#include "ParallelLoops.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_FUSESIBLINGPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

namespace {

/// A loop that may join a run: its trip count and the buffers it reads and
/// writes (the values that define them: see getBuffer).
struct Member {
  scf::ParallelOp loop;
  int64_t iterations = 0;
  llvm::SmallPtrSet<Value, 4> reads, writes;
  /// The values from above that its body uses, which become a kernel's
  /// parameters (constants aside: outlining copies them in).
  SetVector<Value> captured;
};

/// The most bytes of parameters a merged loop's kernel may take: PTX 8.0
/// allows 4352 (resnet50's 52 batch-norm updates took 8656).
constexpr int64_t kMaxParameterBytes = 4096;

/// The bytes of VALUES as kernel parameters: a memref's descriptor is two
/// pointers, an offset, and a size and a stride per dimension; a scalar
/// takes 8 bytes at most.
int64_t getParameterBytes(const SetVector<Value> &values) {
  int64_t bytes = 0;
  for (Value value : values) {
    if (matchPattern(value, m_Constant()))
      continue;
    auto memref = dyn_cast<MemRefType>(value.getType());
    bytes += memref ? 8 * (3 + 2 * memref.getRank()) : 8;
  }
  return bytes;
}

/// The buffer that MEMREF views: through view-like ops to a memref.alloc
/// or memref.alloca, or to an unrealized cast (a compiled model's slot,
/// which --dtrain-emit-model-entry makes of the buffer table); else null.
/// Distinct allocations, and distinct slots, are distinct buffers: the one
/// buffer that the runtime passes for a parameter and for its updated
/// output (dtrain_rt.h) is reached through the parameter's slot alone
/// (--dtrain-emit-model-entry does not load the output's).
Value getBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  Operation *def = memref.getDefiningOp();
  if (def &&
      isa<memref::AllocOp, memref::AllocaOp, UnrealizedConversionCastOp>(def))
    return memref;
  return {};
}

/// LOOP's accesses, when its body's only memory effects are loads and
/// stores of known buffers.
std::optional<Member> getAccesses(scf::ParallelOp loop) {
  Member member{loop, 0, {}, {}, {}};
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    Value buffer;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!(buffer = getBuffer(load.getMemRef())))
        return WalkResult::interrupt();
      member.reads.insert(buffer);
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!(buffer = getBuffer(store.getMemRef())))
        return WalkResult::interrupt();
      member.writes.insert(buffer);
    } else if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
               !isMemoryEffectFree(op)) {
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return member;
}

/// LOOP as a member of a run, when it may be one: outermost, 1-D from 0 to
/// a constant of at most MAXITERATIONS in steps of 1, without results, its
/// body's only memory effects loads and stores of known buffers.
std::optional<Member> asMember(scf::ParallelOp loop, int64_t maxIterations) {
  std::optional<int64_t> upper = dtrain::lower::getKernelTripCount(loop);
  if (!upper || *upper < 1 || *upper > maxIterations)
    return std::nullopt;
  std::optional<Member> member = getAccesses(loop);
  if (!member)
    return std::nullopt;
  member->iterations = *upper;
  getUsedValuesDefinedAbove(loop.getRegion(), member->captured);
  return member;
}

/// Whether A and B may run in either order: neither writes a buffer that
/// the other reads or writes.
bool areIndependent(const Member &a, const Member &b) {
  auto touches = [](const Member &m, Value buffer) {
    return m.reads.contains(buffer) || m.writes.contains(buffer);
  };
  return llvm::none_of(a.writes, [&](Value v) { return touches(b, v); }) &&
         llvm::none_of(b.writes, [&](Value v) { return touches(a, v); });
}

/// RUN (2 loops or more) as one loop, where its last loop was.
void fuse(MutableArrayRef<Member> run) {
  scf::ParallelOp last = run.back().loop;
  IRRewriter rewriter(last);
  rewriter.setInsertionPoint(last);
  Location loc = rewriter.getFusedLoc(llvm::to_vector(
      llvm::map_range(run, [](Member &m) { return m.loop.getLoc(); })));
  int64_t widest = 0;
  for (Member &m : run)
    widest = std::max(widest, m.iterations);
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, value);
  };
  Value zero = constant(0), one = constant(1);
  auto fused = scf::ParallelOp::create(
      rewriter, loc, ValueRange{zero, zero},
      ValueRange{constant(int64_t(run.size())), constant(widest)},
      ValueRange{one, one});
  rewriter.setInsertionPointToStart(fused.getBody());
  Value which = fused.getInductionVars()[0], i = fused.getInductionVars()[1];
  SmallVector<int64_t> cases(run.size());
  for (size_t k = 0; k < run.size(); ++k)
    cases[k] = int64_t(k);
  auto dispatch = scf::IndexSwitchOp::create(rewriter, loc, TypeRange{}, which,
                                             cases, unsigned(run.size()));
  rewriter.createBlock(&dispatch.getDefaultRegion());
  scf::YieldOp::create(rewriter, loc);
  for (auto [k, member] : llvm::enumerate(run)) {
    Block *block = rewriter.createBlock(&dispatch.getCaseRegions()[k]);
    // The iterations past this loop's own bound do nothing.
    if (member.iterations < widest) {
      Value inBounds = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, i,
          arith::ConstantIndexOp::create(rewriter, loc, member.iterations));
      auto guard = scf::IfOp::create(rewriter, loc, inBounds,
                                     /*withElseRegion=*/false);
      rewriter.setInsertionPointToStart(guard.thenBlock());
    }
    IRMapping mapping;
    mapping.map(member.loop.getInductionVars()[0], i);
    for (Operation &op : member.loop.getBody()->without_terminator())
      rewriter.clone(op, mapping);
    rewriter.setInsertionPointToEnd(block);
    scf::YieldOp::create(rewriter, loc);
  }
  for (Member &m : run)
    rewriter.eraseOp(m.loop);
}

struct FuseSiblingParallelLoopsPass
    : dtrain::lower::impl::FuseSiblingParallelLoopsBase<
          FuseSiblingParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxIterations < 1) {
      getOperation().emitError("--dtrain-fuse-sibling-parallel-loops: "
                               "max-iterations must be at least 1");
      return signalPassFailure();
    }
    // The runs of each block, found before any is fused.
    SmallVector<SmallVector<Member>> runs;
    getOperation().walk([&](Block *block) {
      SmallVector<Member> run;
      SetVector<Value> captured; // by the run's loops
      auto close = [&] {
        if (run.size() > 1)
          runs.push_back(std::move(run));
        run.clear();
        captured.clear();
      };
      auto append = [&](Member member) {
        captured.insert(member.captured.begin(), member.captured.end());
        run.push_back(std::move(member));
      };
      auto joins = [&](const Member &member) {
        SetVector<Value> joined = captured;
        joined.insert(member.captured.begin(), member.captured.end());
        return getParameterBytes(joined) <= kMaxParameterBytes &&
               llvm::all_of(run, [&](const Member &m) {
                 return areIndependent(m, member);
               });
      };
      for (Operation &op : *block) {
        if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
          std::optional<Member> member = asMember(loop, maxIterations);
          if (member && joins(*member)) {
            append(std::move(*member));
            continue;
          }
          // A loop that no run takes (a large parameter's update between
          // two small ones) may stay between the run's loops when those
          // so far can move past it: the merged loop goes where the
          // run's last loop was.
          if (!member && !run.empty())
            if (std::optional<Member> other = getAccesses(loop))
              if (llvm::all_of(run, [&](const Member &m) {
                    return areIndependent(m, *other);
                  }))
                continue;
          close();
          if (member)
            append(std::move(*member));
          continue;
        }
        // Side-effect-free ops between the loops may stay where they are:
        // the merged loop goes where the run's last loop was.
        if (!isMemoryEffectFree(&op))
          close();
      }
      close();
    });
    for (SmallVector<Member> &run : runs)
      fuse(run);
  }
};

} // namespace
