//===- SparseAllReduce.cpp - top-k sparse all-reduce with residuals -------===//
//
// dtrain_rt_sparse_all_reduce_start: the exchange of a sparsified gradient
// with error feedback, run on the communication thread like every
// collective:
//
//   u = grad + residual               (kept in the residual buffer)
//   (I, V) = select(u, k)             (dtrain_rt_select_f32)
//   V = V rounded to the value type   (f32, or bf16/f16: 6 bytes an entry)
//   residual = u with I zeroed, but for what the rounding dropped
//   aggregate the ranks' (I, V)       all-gather or gTop-k
//   grad = the dense sum (or mean) of what was aggregated
//
// Every transfer goes through the transport (MPI unless another is
// installed), and the work on the gradient and the residual (forming u,
// the selection, the residual's update, the final scatter-add) through the
// sparse-exchange kernels (SparseKernels.cpp: the CPU's unless another
// device's are installed); the rest works on host arrays of about k
// entries.
//
// all-gather: one all-gather of every rank's indices and values when
// each selected exactly k (exact and random-k); else one of the counts
// first (Gaussian-k and DGC do not select exactly k) and an all-gather of
// blocks of those sizes. Then a scatter-add in rank order (duplicate
// indices across ranks add up; every rank adds in the same order, so all
// get the same bits). Each collective costs latencies, so there are no
// others.
//
// With segments (a merged bucket's members), each segment is selected on
// its own with its share of k, and gTop-k's merges keep each segment's
// share: layer-wise top-k in one exchange.
//
// gTop-k (Shi et al., ICDCS'19): a binomial tree merges the ranks' sets;
// each merge sums values at common indices and keeps the k largest |value|
// of the union. The published code assumes P = 2^m, and the sums it applies
// miss the contributions that a merge dropped lower in the tree, which are
// lost. Here the ranks beyond the largest power of two m are folded into
// ranks 0..P-m-1 first, and the tree runs on 0..m-1. The tree only chooses
// the global index set G: rank 0 broadcasts G (its size and at most k
// indices, one message), then one all-reduce of k values sums, at each
// index of G, the values of every rank that selected it. A rank's selected
// entries outside G go back to its own residual. So nothing is lost, and
// each residual holds only its own rank's gradients:
//   sum over ranks of the residual change + the applied sum = sum of grads.
// The tree's messages have a size that both ends know, a count and the
// set padded to k entries (no set holds more), since a transport need not
// be able to probe for a message's size (NCCL cannot).
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace dtrain::rt;

namespace {

/// The bytes of one entry on the wire: an int32 index and a value of
/// VALUETYPE (DTRAIN_RT_F32, _BF16 or _F16).
int64_t entryBytes(int32_t valueType) {
  return valueType == DTRAIN_RT_F32 ? 8 : 6;
}

/// A sparse vector: ascending indices and their values.
struct SparseSet {
  std::vector<int32_t> indices;
  std::vector<float> values;

  int64_t size() const { return int64_t(indices.size()); }
  void resize(int64_t n) {
    indices.resize(size_t(n));
    values.resize(size_t(n));
  }
  /// The wire form, size() * entryBytes(VALUETYPE) bytes at BYTES: the
  /// indices, then the values in VALUETYPE (exact for a rank's own
  /// selection, which roundToValueType made; a gTop-k merge's sums are
  /// rounded, which only affects the choice of indices).
  void packTo(char *bytes, int32_t valueType) const {
    std::memcpy(bytes, indices.data(), indices.size() * 4);
    char *out = bytes + indices.size() * 4;
    if (valueType == DTRAIN_RT_F32) {
      std::memcpy(out, values.data(), values.size() * 4);
      return;
    }
    for (size_t j = 0; j < values.size(); ++j) {
      uint16_t v = valueType == DTRAIN_RT_BF16 ? f32ToBF16(values[j])
                                               : f32ToF16(values[j]);
      std::memcpy(out + 2 * j, &v, 2);
    }
  }
  std::vector<char> pack(int32_t valueType) const {
    std::vector<char> bytes(indices.size() * size_t(entryBytes(valueType)));
    packTo(bytes.data(), valueType);
    return bytes;
  }
  /// The N entries packed at BYTES into entries AT .. AT+N-1 (which
  /// exist).
  void unpackTo(int64_t at, const char *bytes, int64_t n, int32_t valueType) {
    std::memcpy(indices.data() + at, bytes, size_t(n) * 4);
    const char *in = bytes + n * 4;
    if (valueType == DTRAIN_RT_F32) {
      std::memcpy(values.data() + at, in, size_t(n) * 4);
      return;
    }
    for (int64_t j = 0; j < n; ++j) {
      uint16_t v;
      std::memcpy(&v, in + 2 * j, 2);
      values[size_t(at + j)] =
          valueType == DTRAIN_RT_BF16 ? bf16ToF32(v) : f16ToF32(v);
    }
  }
  static SparseSet unpack(const char *bytes, int64_t n, int32_t valueType) {
    SparseSet s;
    s.resize(n);
    s.unpackTo(0, bytes, n, valueType);
    return s;
  }
};

/// Sets one after another in one SparseSet: set s is its entries
/// OFFSETS[s] .. OFFSETS[s+1]-1 (the form of the kernels' scatter_add).
struct SparseSets {
  SparseSet entries;
  std::vector<int64_t> offsets{0};
};

const char *aggregateName(int64_t aggregate) {
  switch (aggregate) {
  case DTRAIN_RT_SPARSE_ALLGATHER:
    return "allgather";
  case DTRAIN_RT_SPARSE_GTOPK:
    return "gtopk";
  case DTRAIN_RT_SPARSE_DENSE:
    return "dense";
  }
  return "?";
}

/// A, B summed at common indices (the union, ascending).
SparseSet mergeSum(const SparseSet &a, const SparseSet &b) {
  SparseSet sum;
  sum.indices.reserve(a.indices.size() + b.indices.size());
  sum.values.reserve(a.indices.size() + b.indices.size());
  size_t i = 0, j = 0;
  while (i < a.indices.size() || j < b.indices.size()) {
    if (j == b.indices.size() ||
        (i < a.indices.size() && a.indices[i] < b.indices[j])) {
      sum.indices.push_back(a.indices[i]);
      sum.values.push_back(a.values[i++]);
    } else if (i == a.indices.size() || b.indices[j] < a.indices[i]) {
      sum.indices.push_back(b.indices[j]);
      sum.values.push_back(b.values[j++]);
    } else {
      sum.indices.push_back(a.indices[i]);
      sum.values.push_back(a.values[i++] + b.values[j++]);
    }
  }
  return sum;
}

/// A segment of the buffer, selected on its own (dtrain_rt.h).
using Segment = dtrain_rt_sparse_segment_t;

/// SIZES (element counts adding up to COUNT; one segment of COUNT when
/// empty) with their shares of K: min(n_s, max(1, floor(K n_s / COUNT))),
/// or none when K is 0. A segment's capacity: Gaussian-k and DGC may pass
/// 4k/3 and more; past twice k, the largest. Its seed: SEED + its offset.
std::vector<Segment> shareK(int64_t count, int64_t k,
                            const std::vector<int64_t> &sizes, uint64_t seed) {
  auto segment = [&](int64_t offset, int64_t n, int64_t share) {
    return Segment{offset, n, share,
                   std::min(n, std::max<int64_t>(2 * share, 1)),
                   seed + uint64_t(offset)};
  };
  if (sizes.empty())
    return {segment(0, count, std::min(k, count))};
  k = std::min(k, count); // so that k * n_s stays below 2^62
  std::vector<Segment> segments;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    const int64_t share =
        k == 0 ? 0 : std::min(n, std::max<int64_t>(1, k * n / count));
    segments.push_back(segment(offset, n, share));
    offset += n;
  }
  return segments;
}

struct SparseAllReduce final : dtrain_rt_request {
  float *grad, *residual;
  int64_t count, requestedK;
  std::vector<Segment> segments;
  /// The segments' shares of k added up: the most entries a selection
  /// (bar Gaussian-k's and DGC's extra ones) or gTop-k's global set holds.
  int64_t k = 0;
  int32_t method, aggregate, reduction, valueType;
  /// The kernels installed when the exchange started.
  const dtrain_rt_sparse_kernels_t kernels = sparseKernels();

  SparseAllReduce(dtrain_rt_comm_t *comm, float *grad, float *residual,
                  int64_t count, int64_t k, std::vector<int64_t> segmentSizes,
                  int32_t method, int32_t aggregate, int32_t reduction,
                  int32_t valueType, uint64_t seed)
      : dtrain_rt_request(Collective::SparseAllReduce, comm, count * 4),
        grad(grad), residual(residual), count(count), requestedK(k),
        segments(shareK(count, k, segmentSizes, seed)), method(method),
        aggregate(aggregate), reduction(reduction), valueType(valueType) {
    for (const Segment &segment : segments)
      this->k += segment.k;
  }

  void run() override {
    // The segment sizes agree when their count and a hash of them do.
    uint64_t segmentHash = 1469598103934665603ull;
    for (const Segment &segment : segments)
      segmentHash = (segmentHash ^ uint64_t(segment.size)) * 1099511628211ull;
    checkAgreement(comm, "sparse_all_reduce",
                   {{"count", count},
                    {"k", requestedK},
                    {"segments", int64_t(segments.size())},
                    {"segment sizes (hash)", int64_t(segmentHash >> 1)},
                    {"method", method},
                    {"aggregate", aggregate, aggregateName},
                    {"reduction", reduction, reductionName},
                    {"value type", valueType}});
    sparseElements = count;
    if (aggregate == DTRAIN_RT_SPARSE_DENSE) {
      sendEverything();
      if (reduction == DTRAIN_RT_MEAN)
        finishReduction(DTRAIN_RT_F32, DTRAIN_RT_MEAN, grad, count, comm->size);
      return;
    }
    SparseSet local = selectLocal();
    selectedElements = local.size();
    if (aggregate == DTRAIN_RT_SPARSE_GTOPK) {
      SparseSets global;
      global.entries = gatherTopK(local);
      global.offsets.push_back(global.entries.size());
      scatter(global);
    } else {
      scatter(allGather(local));
    }
    if (reduction == DTRAIN_RT_MEAN)
      finishReduction(DTRAIN_RT_F32, DTRAIN_RT_MEAN, grad, count, comm->size);
  }

  /// u = grad + residual into the residual, selected (each segment on its
  /// own), and zeroed where selected; in 16-bit values, what the rounding
  /// drops stays there.
  SparseSet selectLocal() {
    int64_t room = 0;
    for (const Segment &segment : segments)
      room += segment.capacity;
    SparseSet s;
    s.resize(room);
    s.resize(kernels.residual_select(
        kernels.context, grad, residual, count, segments.data(),
        int64_t(segments.size()), method, valueType, s.indices.data(),
        s.values.data()));
    return s;
  }

  /// The dense choice: u = grad + residual, all of it summed by a dense
  /// all-reduce in the value type; the residual keeps only what the
  /// rounding to it drops.
  void sendEverything() {
    selectedElements = count;
    const int P = comm->size;
    kernels.dense_residual(kernels.context, grad, residual, count, valueType);
    if (valueType == DTRAIN_RT_F32) {
      allReduceInPlace(comm, grad, count, DTRAIN_RT_F32, DTRAIN_RT_SUM);
    } else {
      // GRAD holds values of the value type: these conversions are exact.
      std::vector<uint16_t> wire(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        wire[size_t(i)] = valueType == DTRAIN_RT_BF16 ? f32ToBF16(grad[i])
                                                      : f32ToF16(grad[i]);
      allReduceInPlace(comm, wire.data(), count, valueType, DTRAIN_RT_SUM);
      for (int64_t i = 0; i < count; ++i)
        grad[i] = valueType == DTRAIN_RT_BF16 ? bf16ToF32(wire[size_t(i)])
                                              : f16ToF32(wire[size_t(i)]);
    }
    // As a ring all-reduce, like every dense one.
    const int64_t valueBytes = valueType == DTRAIN_RT_F32 ? 4 : 2;
    sentBytes = 2 * int64_t(P - 1) * count * valueBytes / P;
  }

  /// Every rank's set, in rank order.
  SparseSets allGather(const SparseSet &local) {
    const int P = comm->size;
    const int64_t entry = entryBytes(valueType);
    const int64_t bytes = local.size() * entry;
    if (bytes > INT_MAX)
      fatal(comm,
            "sparse_all_reduce: %lld selected entries do not fit one MPI "
            "message (at most %lld)",
            (long long)local.size(), (long long)(INT_MAX / entry));
    std::vector<int64_t> counts(static_cast<size_t>(P));
    if (method == DTRAIN_RT_SELECT_EXACT || method == DTRAIN_RT_SELECT_RANDOM) {
      // Every rank selected exactly k: one all-gather, no counts first.
      std::vector<char> all(static_cast<size_t>(P) * size_t(bytes));
      if (int64_t(all.size()) > INT_MAX)
        fatal(comm,
              "sparse_all_reduce: the ranks selected %lld bytes in all, "
              "more than one MPI all-gather carries",
              (long long)all.size());
      transport().allGather(comm, local.pack(valueType).data(), bytes,
                            all.data());
      sentBytes = (P - 1) * bytes;
      std::fill(counts.begin(), counts.end(), bytes);
      return unpackBlocks(all.data(), counts);
    }
    transport().allGather(comm, &bytes, sizeof bytes, counts.data());
    int64_t total = 0;
    for (int r = 0; r < P; ++r) {
      total += counts[size_t(r)];
      if (total > INT_MAX)
        fatal(comm,
              "sparse_all_reduce: the ranks selected %lld bytes in all, "
              "more than one MPI all-gather carries",
              (long long)total);
    }
    std::vector<char> all(static_cast<size_t>(total));
    transport().allGatherV(comm, local.pack(valueType).data(), all.data(),
                           counts.data());
    // As a ring all-gather: every block but the successor's.
    sentBytes = total - counts[size_t((comm->rank + 1) % P)];
    return unpackBlocks(all.data(), counts);
  }

  /// The packed sets of BYTES[r] bytes each, one after another at ALL.
  SparseSets unpackBlocks(const char *all,
                          const std::vector<int64_t> &bytes) const {
    const int64_t entry = entryBytes(valueType);
    SparseSets sets;
    int64_t total = 0;
    for (int64_t b : bytes)
      total += b;
    sets.entries.resize(total / entry);
    for (int64_t b : bytes) {
      sets.entries.unpackTo(sets.offsets.back(), all, b / entry, valueType);
      sets.offsets.push_back(sets.offsets.back() + b / entry);
      all += b;
    }
    return sets;
  }

  /// The union of A and B (summed at common indices) with, in each
  /// segment, its k_s largest |value|, ascending.
  SparseSet mergeTopK(const SparseSet &a, const SparseSet &b) const {
    SparseSet sum = mergeSum(a, b);
    if (sum.size() <= k && segments.size() == 1)
      return sum;
    SparseSet top;
    std::vector<int32_t> kept;
    size_t first = 0; // of the segment's entries in SUM
    for (const Segment &segment : segments) {
      size_t last = first;
      while (last < sum.indices.size() &&
             sum.indices[last] < segment.offset + segment.size)
        ++last;
      const int64_t n = int64_t(last - first);
      if (n <= segment.k) {
        top.indices.insert(top.indices.end(), sum.indices.begin() + first,
                           sum.indices.begin() + last);
        top.values.insert(top.values.end(), sum.values.begin() + first,
                          sum.values.begin() + last);
      } else {
        kept.resize(size_t(segment.k));
        dtrain_rt_select_f32(sum.values.data() + first, n, segment.k,
                             DTRAIN_RT_SELECT_EXACT, 0, kept.data(), nullptr,
                             segment.k);
        for (int32_t t : kept) {
          top.indices.push_back(sum.indices[first + size_t(t)]);
          top.values.push_back(sum.values[first + size_t(t)]);
        }
      }
      first = last;
    }
    return top;
  }

  /// The bytes of a message of the tree: the set's size (8 bytes), then
  /// the set packed, padded to k entries.
  int64_t treeMessageBytes() const { return 8 + k * entryBytes(valueType); }

  void send(const SparseSet &s, int to) {
    std::vector<char> message(static_cast<size_t>(treeMessageBytes()));
    const int64_t n = s.size();
    std::memcpy(message.data(), &n, 8);
    s.packTo(message.data() + 8, valueType);
    transport().send(comm, message.data(), int64_t(message.size()), to);
    sentBytes += int64_t(message.size());
  }

  SparseSet receive(int from) {
    std::vector<char> message(static_cast<size_t>(treeMessageBytes()));
    transport().recv(comm, message.data(), int64_t(message.size()), from);
    int64_t n = 0;
    std::memcpy(&n, message.data(), 8);
    return SparseSet::unpack(message.data() + 8, n, valueType);
  }

  /// The global top-k set on every rank (see the file comment).
  SparseSet gatherTopK(const SparseSet &local) {
    const int P = comm->size, rank = comm->rank;
    sentBytes = 0;
    if (P > 1 && treeMessageBytes() > INT_MAX)
      fatal(comm,
            "sparse_all_reduce: k = %lld entries do not fit one message of "
            "the gTop-k tree (at most %lld)",
            (long long)k, (long long)((INT_MAX - 8) / entryBytes(valueType)));
    // Gaussian-k's and DGC's extra entries take no part in the tree.
    SparseSet set = mergeTopK(local, SparseSet());
    int m = 1;
    while (2 * m <= P)
      m *= 2;
    bool active = true;
    if (rank >= m) {
      send(set, rank - m);
      active = false;
    } else if (rank + m < P) {
      set = mergeTopK(set, receive(rank + m));
    }
    for (int d = 1; active && d < m; d *= 2) {
      if (rank % (2 * d) == d) {
        send(set, rank - d);
        active = false;
      } else {
        set = mergeTopK(set, receive(rank + d));
      }
    }
    // Rank 0 holds G, at most k indices: one broadcast of its size and
    // indices, padded to k.
    SparseSet global;
    if (P == 1) {
      global.indices = set.indices;
    } else {
      if ((k + 1) * 4 > INT_MAX)
        fatal(comm,
              "sparse_all_reduce: k = %lld entries do not fit one "
              "broadcast (at most %d)",
              (long long)k, INT_MAX / 4 - 1);
      std::vector<int32_t> message(static_cast<size_t>(k) + 1);
      if (rank == 0) {
        message[0] = int32_t(set.size());
        std::copy(set.indices.begin(), set.indices.end(), message.begin() + 1);
      }
      transport().broadcast(comm, message.data(), int64_t(message.size()) * 4,
                            0);
      if (rank == 0)
        sentBytes += int64_t(message.size()) * 4;
      global.indices.assign(message.begin() + 1,
                            message.begin() + 1 + message[0]);
    }
    // This rank's values at G; its other selected entries back to its
    // residual (selectLocal left only their rounding there).
    global.values.assign(global.indices.size(), 0.0f);
    SparseSet back;
    size_t t = 0;
    for (int64_t j = 0; j < local.size(); ++j) {
      const int32_t index = local.indices[size_t(j)];
      while (t < global.indices.size() && global.indices[t] < index)
        ++t;
      if (t < global.indices.size() && global.indices[t] == index) {
        global.values[t] = local.values[size_t(j)];
      } else {
        back.indices.push_back(index);
        back.values.push_back(local.values[size_t(j)]);
      }
    }
    const int64_t backOffsets[] = {0, back.size()};
    kernels.scatter_add(kernels.context, residual, count, 0,
                        back.indices.data(), back.values.data(), backOffsets,
                        1);
    if (P > 1) {
      const int64_t n = int64_t(global.values.size());
      transport().allReduce(comm, global.values.data(), n, DTRAIN_RT_F32,
                            DTRAIN_RT_SUM);
      // As a ring all-reduce, like every dense one.
      sentBytes += 2 * int64_t(P - 1) * 4 * n / P;
    }
    return global;
  }

  /// grad = the sum of SETS, added in order.
  void scatter(const SparseSets &sets) {
    kernels.scatter_add(kernels.context, grad, count, 1,
                        sets.entries.indices.data(), sets.entries.values.data(),
                        sets.offsets.data(), int32_t(sets.offsets.size() - 1));
  }
};

} // namespace

dtrain_rt_request_t *dtrain_rt_sparse_all_reduce_start(
    dtrain_rt_comm_t *comm, float *grad, float *residual, int64_t count,
    int64_t k, const int64_t *segments, int64_t num_segments, int32_t method,
    int32_t aggregate, int32_t reduction, int32_t value_type, uint64_t seed) {
  static constexpr const char *fn = "dtrain_rt_sparse_all_reduce_start";
  ensureInitialized();
  if (!comm)
    fatal(nullptr, "%s: comm is NULL (use dtrain_rt_comm_world())", fn);
  if (count < 0 || count > std::numeric_limits<int32_t>::max() || k < 0)
    fatal(comm,
          "%s: count = %lld, k = %lld (accepted: 0 <= count <= 2^31-1, "
          "k >= 0)",
          fn, (long long)count, (long long)k);
  if (count > 0 && (!grad || !residual))
    fatal(comm, "%s: grad or residual is NULL with count %lld", fn,
          (long long)count);
  if (num_segments < 0 || (num_segments > 0 && !segments))
    fatal(comm, "%s: %lld segments at %p (accepted: 0, or a count and its "
                "sizes)",
          fn, (long long)num_segments, static_cast<const void *>(segments));
  std::vector<int64_t> segmentSizes(segments, segments + num_segments);
  int64_t segmentTotal = 0;
  for (int64_t n : segmentSizes) {
    if (n <= 0)
      fatal(comm, "%s: a segment of %lld elements (segments are positive)",
            fn, (long long)n);
    segmentTotal += n;
  }
  if (num_segments > 0 && segmentTotal != count)
    fatal(comm, "%s: the segments add up to %lld elements, not count = %lld",
          fn, (long long)segmentTotal, (long long)count);
  if (method < DTRAIN_RT_SELECT_EXACT || method > DTRAIN_RT_SELECT_RANDOM)
    fatal(comm,
          "%s: method %d is not valid (accepted: DTRAIN_RT_SELECT_EXACT, "
          "_GAUSSIAN, _DGC, _RANDOM)",
          fn, int(method));
  if (aggregate != DTRAIN_RT_SPARSE_ALLGATHER &&
      aggregate != DTRAIN_RT_SPARSE_GTOPK && aggregate != DTRAIN_RT_SPARSE_DENSE)
    fatal(comm,
          "%s: aggregate %d is not valid (accepted: %d = allgather, "
          "%d = gtopk, %d = dense)",
          fn, int(aggregate), DTRAIN_RT_SPARSE_ALLGATHER,
          DTRAIN_RT_SPARSE_GTOPK, DTRAIN_RT_SPARSE_DENSE);
  if (reduction != DTRAIN_RT_SUM && reduction != DTRAIN_RT_MEAN)
    fatal(comm, "%s: reduction %d is not valid (accepted: %d = sum, %d = mean)",
          fn, int(reduction), DTRAIN_RT_SUM, DTRAIN_RT_MEAN);
  if (value_type != DTRAIN_RT_F32 && value_type != DTRAIN_RT_BF16 &&
      value_type != DTRAIN_RT_F16)
    fatal(comm,
          "%s: value type %d is not valid (accepted: %d = f32, %d = bf16, "
          "%d = f16)",
          fn, int(value_type), DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16);
  // Collectives are issued in the same order on every rank, so the count
  // (and the seed) agrees across ranks.
  static std::atomic<uint64_t> calls{0};
  const uint64_t callSeed = seed + 0x9E3779B97F4A7C15ull * calls++;
  auto *request =
      new SparseAllReduce(comm, grad, residual, count, k,
                          std::move(segmentSizes), method, aggregate,
                          reduction, value_type, callSeed);
  submitCollective(request);
  return request;
}
