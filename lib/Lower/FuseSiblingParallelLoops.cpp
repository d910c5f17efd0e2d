//===- FuseSiblingParallelLoops.cpp - sibling loops as one kernel ---------===//
//
// Implements --dtrain-fuse-sibling-parallel-loops: independent
// scf.parallel loops become one 1-D loop over their ranges laid end to
// end, each starting at a multiple of a block's threads, so that the GPU
// path launches one kernel for them (an optimizer's updates, the casts of
// the parameters to 16 bits, LARS's norms, the weights' transposes of
// --dtrain-channels-last) and each block of it runs one loop's body (a
// nest's indices taken apart from the range's). Loops move up to the first
// loop of a run, then down to the last.
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
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_FUSESIBLINGPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

namespace {

/// A loop that may join a run: its trip counts (one a dimension) and their
/// product, and the buffers it reads and writes.
struct Member {
  scf::ParallelOp loop;
  SmallVector<int64_t> sizes;
  int64_t iterations = 0;
  dtrain::lower::BufferAccesses accesses;
  /// The values from above that its body uses, which become a kernel's
  /// parameters (constants aside: gpu-launch-sink-index-computations puts
  /// them in the kernel).
  SetVector<Value> captured;
};

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

/// LOOP as a member of a run, when it may be one: outermost, 1-D from 0 to
/// a constant in steps of 1, without results, its body's only memory
/// effects reads and writes of known buffers.
std::optional<Member> asMember(scf::ParallelOp loop) {
  std::optional<SmallVector<int64_t>> sizes =
      dtrain::lower::getKernelTripCounts(loop);
  if (!sizes || llvm::any_of(*sizes, [](int64_t size) { return size < 1; }))
    return std::nullopt;
  std::optional<dtrain::lower::BufferAccesses> accesses =
      dtrain::lower::getNestedBufferAccesses(loop);
  if (!accesses)
    return std::nullopt;
  Member member{
      loop, *sizes, llvm::product_of(*sizes), std::move(*accesses), {}};
  getUsedValuesDefinedAbove(loop.getRegion(), member.captured);
  return member;
}

/// Whether CALL calls one of the runtime's collectives or communicator
/// queries (--dtrain-lower-comm-to-runtime marks them
/// dtrain.stream_independent), or one of its heavy-op kernels
/// (--dtrain-lower-nn{target=cuda} marks them dtrain.step_stream): calls
/// that touch no memory but what their pointers address.
bool isRuntimeCall(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  return callee &&
         (callee->hasAttr(dtrain::lower::kStreamIndependentAttrName) ||
          callee->hasAttr(dtrain::lower::kStepStreamAttrName));
}

/// The buffers that CALL, a runtime call (isRuntimeCall), may touch: a
/// collective's or a kernel's are those its pointers address (dtrain_rt.h,
/// dtrain_rt_cuda.h), and a wait's those of the collective whose request
/// it takes; the operands' definitions are followed back to the memrefs
/// they come from. Nullopt where one is not a known buffer.
std::optional<llvm::SmallPtrSet<Value, 4>>
getRuntimeCallBuffers(func::CallOp call) {
  llvm::SmallPtrSet<Value, 4> buffers;
  SmallVector<Value> pending(call.getOperands());
  llvm::SmallPtrSet<Value, 16> seen;
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (isa<MemRefType>(value.getType())) {
      Value buffer = dtrain::lower::getViewedBuffer(value);
      if (!buffer)
        return std::nullopt;
      buffers.insert(buffer);
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (!def || def->getNumRegions() != 0)
      return std::nullopt;
    auto producer = dyn_cast<func::CallOp>(def);
    if (producer && !isRuntimeCall(producer))
      return std::nullopt;
    llvm::append_range(pending, def->getOperands());
  }
  return buffers;
}

/// Whether A and B may run in either order: neither writes a buffer that
/// the other reads or writes.
bool areIndependent(const dtrain::lower::BufferAccesses &a,
                    const dtrain::lower::BufferAccesses &b) {
  return llvm::none_of(a.writes, [&](Value v) { return b.touches(v); }) &&
         llvm::none_of(b.writes, [&](Value v) { return a.touches(v); });
}

/// Makes the index constants that the merged loop's body uses, before it.
using ConstantMaker = llvm::function_ref<Value(int64_t)>;

/// The bodies of RUN[LO, HI) under the merged loop's index I, whose
/// member K starts at STARTS[K]: a tree of comparisons with the starts,
/// which a block's threads take alike when every start is a multiple of
/// its threads.
void emitBodies(OpBuilder &b, Location loc, MutableArrayRef<Member> run,
                ArrayRef<int64_t> starts, int64_t align, Value i,
                ConstantMaker constant, size_t lo, size_t hi) {
  if (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    Value before = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                         constant(starts[mid]));
    auto branch = scf::IfOp::create(b, loc, before, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    emitBodies(b, loc, run, starts, align, i, constant, lo, mid);
    b.setInsertionPointToStart(branch.elseBlock());
    emitBodies(b, loc, run, starts, align, i, constant, mid, hi);
    return;
  }
  Member &member = run[lo];
  Value index = i;
  if (starts[lo] != 0)
    index = arith::SubIOp::create(b, loc, i, constant(starts[lo]));
  OpBuilder::InsertionGuard guard(b);
  // The iterations that pad the loop's range to a multiple of ALIGN do
  // nothing.
  if (member.iterations % align != 0) {
    Value inBounds = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           index, constant(member.iterations));
    auto bounded =
        scf::IfOp::create(b, loc, inBounds, /*withElseRegion=*/false);
    b.setInsertionPointToStart(bounded.thenBlock());
  }
  // A nest's indices, row-major: the last the remainder by its size.
  IRMapping mapping;
  for (int64_t d = member.sizes.size() - 1; d >= 0; --d) {
    Value dim = index;
    if (d > 0) {
      Value size = constant(member.sizes[d]);
      dim = arith::RemUIOp::create(b, loc, index, size);
      index = arith::DivUIOp::create(b, loc, index, size);
    }
    mapping.map(member.loop.getInductionVars()[d], dim);
  }
  for (Operation &op : member.loop.getBody()->without_terminator())
    b.clone(op, mapping);
}

/// RUN (2 loops or more) as one loop before WHERE (one of them): their
/// ranges end to end, each padded to a multiple of ALIGN.
void fuse(MutableArrayRef<Member> run, int64_t align, Operation *where) {
  OpBuilder b(where);
  Location loc = b.getFusedLoc(llvm::to_vector(
      llvm::map_range(run, [](Member &m) { return m.loop.getLoc(); })));
  SmallVector<int64_t> starts;
  int64_t total = 0;
  for (Member &m : run) {
    starts.push_back(total);
    total += llvm::alignTo(m.iterations, align);
  }
  OpBuilder outside = b;
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(outside, loc, value);
  };
  auto fused = scf::ParallelOp::create(b, loc, ValueRange{constant(0)},
                                       ValueRange{constant(total)},
                                       ValueRange{constant(1)});
  outside.setInsertionPoint(fused);
  b.setInsertionPointToStart(fused.getBody());
  emitBodies(b, loc, run, starts, align, fused.getInductionVars()[0], constant,
             0, run.size());
  for (Member &m : run)
    m.loop.erase();
}

/// The ops, in block order, that must move before POINT for VALUES to be
/// available there: allocations of static shape and side-effect-free ops
/// of POINT's block after it, with those their operands need. Nullopt
/// when another op defines one (a call's result).
std::optional<SetVector<Operation *>>
getDefinitionsToHoist(ArrayRef<Value> values, Operation *point) {
  SetVector<Operation *> hoisted;
  SmallVector<Value> pending(values);
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != point->getBlock() ||
        def->isBeforeInBlock(point) || hoisted.contains(def))
      continue;
    if (def->getNumRegions() != 0 ||
        !(isMemoryEffectFree(def) ||
          (isa<memref::AllocOp>(def) && def->getNumOperands() == 0)))
      return std::nullopt;
    hoisted.insert(def);
    llvm::append_range(pending, def->getOperands());
  }
  SmallVector<Operation *> ordered(hoisted.begin(), hoisted.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return SetVector<Operation *>(ordered.begin(), ordered.end());
}

/// What a loop moving up meets in a block: a run that it may join (its
/// merged loop goes before the run's first loop), or ops it may pass only
/// when independent of their accesses (a loop that no run takes, a
/// collective).
struct Level {
  SmallVector<Member> run;                // empty for an obstacle
  dtrain::lower::BufferAccesses accesses; // of the run's loops, or of the op
  SetVector<Value> captured;              // by the run's loops
};

/// Adds ACCESSES to INTO.
void addAccesses(dtrain::lower::BufferAccesses &into,
                 const dtrain::lower::BufferAccesses &accesses) {
  into.reads.insert(accesses.reads.begin(), accesses.reads.end());
  into.writes.insert(accesses.writes.begin(), accesses.writes.end());
}

struct FuseSiblingParallelLoopsPass
    : dtrain::lower::impl::FuseSiblingParallelLoopsBase<
          FuseSiblingParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (align < 1) {
      getOperation().emitError("--dtrain-fuse-sibling-parallel-loops: "
                               "align must be at least 1");
      return signalPassFailure();
    }
    if (maxParameterBytes < 1) {
      getOperation().emitError("--dtrain-fuse-sibling-parallel-loops: "
                               "max-parameter-bytes must be at least 1");
      return signalPassFailure();
    }
    // Levels first: runs merged down would tie each parameter's chain to
    // the next one's (its update with the next parameter's first sums).
    mergeLevelsUp();
    mergeRunsDown();
  }

  /// Merges runs of loops that may each move down to the run's last loop.
  void mergeRunsDown() {
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
        return getParameterBytes(joined) <= maxParameterBytes &&
               llvm::all_of(run, [&](const Member &m) {
                 return areIndependent(m.accesses, member.accesses);
               });
      };
      for (Operation &op : *block) {
        if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
          std::optional<Member> member = asMember(loop);
          if (member && joins(*member)) {
            append(std::move(*member));
            continue;
          }
          // A loop that no run takes (a 2-D nest between two updates)
          // may stay between the run's loops when those so far can move
          // past it: the merged loop goes where the run's last loop was.
          if (!member && !run.empty())
            if (std::optional<dtrain::lower::BufferAccesses> other =
                    dtrain::lower::getNestedBufferAccesses(loop))
              if (llvm::all_of(run, [&](const Member &m) {
                    return areIndependent(m.accesses, *other);
                  }))
                continue;
          close();
          if (member)
            append(std::move(*member));
          continue;
        }
        // Side-effect-free ops and allocations between the loops may stay
        // where they are: the merged loop goes where the run's last loop
        // was, and the loops before cannot reach a buffer allocated after
        // them. So may the runtime's calls on buffers that the run's loops
        // so far do not touch: collectives and their waits (an
        // optimizer's update follows its gradient's wait), and heavy ops
        // (a batch norm's running statistics follow its kernel; the next
        // layers' kernels need them not).
        if (isMemoryEffectFree(&op) || isa<memref::AllocOp>(op))
          continue;
        if (auto call = dyn_cast<func::CallOp>(op);
            call && isRuntimeCall(call))
          if (std::optional<llvm::SmallPtrSet<Value, 4>> buffers =
                  getRuntimeCallBuffers(call))
            if (llvm::all_of(run, [&](const Member &m) {
                  return llvm::none_of(*buffers, [&](Value buffer) {
                    return m.accesses.touches(buffer);
                  });
                }))
              continue;
        close();
      }
      close();
    });
    for (SmallVector<Member> &run : runs)
      fuse(run, align, run.back().loop);
  }

  /// Merges loops that may each move up to the first loop of a run: a
  /// chain of dependent loops per parameter (LARS's norms: partial sums,
  /// their sum, the update) becomes one loop per link, each loop joining
  /// the earliest run it may move up to.
  void mergeLevelsUp() {
    // The levels of each block, found before any is fused.
    SmallVector<SmallVector<Member>> runs;
    getOperation().walk([&](Block *block) {
      std::vector<Level> levels;
      auto close = [&] {
        for (Level &level : levels)
          if (level.run.size() > 1)
            runs.push_back(std::move(level.run));
        levels.clear();
      };
      auto addObstacle = [&](dtrain::lower::BufferAccesses accesses) {
        levels.push_back({{}, std::move(accesses), {}});
      };
      // The earliest run MEMBER may join: independent of it and of every
      // level after it, within the parameter budget, the values it uses
      // available before the run's first loop.
      auto findRun = [&](const Member &member) -> Level * {
        Level *found = nullptr;
        for (Level &level : llvm::reverse(levels)) {
          if (!areIndependent(level.accesses, member.accesses))
            break;
          if (level.run.empty())
            continue;
          SetVector<Value> joined = level.captured;
          joined.insert(member.captured.begin(), member.captured.end());
          if (getParameterBytes(joined) <= maxParameterBytes &&
              getDefinitionsToHoist(member.captured.getArrayRef(),
                                    level.run.front().loop))
            found = &level;
        }
        return found;
      };
      for (Operation &op : *block) {
        if (isMemoryEffectFree(&op) ||
            isa<memref::AllocOp, memref::DeallocOp>(op))
          continue;
        if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
          if (std::optional<Member> member = asMember(loop)) {
            if (Level *level = findRun(*member)) {
              // The definitions move now, so that later loops' checks see
              // them where they will be.
              std::optional<SetVector<Operation *>> hoisted =
                  getDefinitionsToHoist(member->captured.getArrayRef(),
                                        level->run.front().loop);
              for (Operation *def : *hoisted)
                def->moveBefore(level->run.front().loop);
              addAccesses(level->accesses, member->accesses);
              level->captured.insert(member->captured.begin(),
                                     member->captured.end());
              level->run.push_back(std::move(*member));
              continue;
            }
            dtrain::lower::BufferAccesses accesses = member->accesses;
            SetVector<Value> captured = member->captured;
            levels.push_back({{std::move(*member)},
                              std::move(accesses),
                              std::move(captured)});
            continue;
          }
          if (std::optional<dtrain::lower::BufferAccesses> accesses =
                  dtrain::lower::getNestedBufferAccesses(loop)) {
            addObstacle(std::move(*accesses));
            continue;
          }
        }
        if (auto call = dyn_cast<func::CallOp>(op);
            call && isRuntimeCall(call))
          if (std::optional<llvm::SmallPtrSet<Value, 4>> buffers =
                  getRuntimeCallBuffers(call)) {
            dtrain::lower::BufferAccesses accesses;
            accesses.reads.insert(buffers->begin(), buffers->end());
            accesses.writes.insert(buffers->begin(), buffers->end());
            addObstacle(std::move(accesses));
            continue;
          }
        close();
      }
      close();
    });
    for (SmallVector<Member> &run : runs)
      fuse(run, align, run.front().loop);
  }
};

} // namespace
