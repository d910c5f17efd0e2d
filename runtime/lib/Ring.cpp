//===- - Ring.cpp - ring all-reduce ---------------------------------------===//
//
// Bandwidth-optimal ring all-reduce over the transport's point-to-point
// messages (send_recv to the neighbours), one pass per slice of the buffer
// (kRingChunkBytes in Internal.h says why slices). A slice is split into P
// chunks (sizes differ by at most one element; some are empty when the
// slice holds fewer than P elements). In
// P-1 reduce-scatter steps every rank sends one chunk to its right
// neighbour and reduces the chunk arriving from its left one into place,
// after which rank r holds the full reduction of chunk (r+1) mod P. P-1
// all-gather steps then pass the reduced chunks around the ring. Each rank
// sends and receives 2(P-1)/P of the buffer in total, and every element is
// reduced by exactly one rank, so all ranks end up with bit-identical
// results.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <vector>

using namespace dtrain::rt;

namespace {

struct Chunks {
  int64_t base, remainder;
  int64_t size(int c) const { return base + (c < remainder); }
  int64_t offset(int c) const {
    return c * base + std::min<int64_t>(c, remainder);
  }
};

/// Receive space for one chunk, kept per thread across calls so large
/// all-reduces do not pay for a fresh allocation (and its page faults) each
/// time.
char *scratch(size_t bytes) {
  thread_local std::vector<char> buffer;
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

/// One ring pass over COUNT elements; every chunk fits one transport call.
void ringPass(dtrain_rt_comm_t *comm, char *data, int64_t count, int32_t dtype,
              int32_t reduction) {
  const int P = comm->size, r = comm->rank;
  const int right = (r + 1) % P, left = (r + P - 1) % P;
  const int64_t elem = dtypeSize(dtype);
  const Transport t = transport();
  const Chunks chunks{count / P, count % P};
  char *incoming = scratch(size_t(chunks.size(0) * elem));

  // Reduce-scatter: step s sends chunk r-s, receives and reduces r-s-1.
  for (int s = 0; s < P - 1; ++s) {
    const int send = (r - s + 2 * P) % P, recv = (r - s - 1 + 2 * P) % P;
    t.sendRecv(comm, data + chunks.offset(send) * elem,
               chunks.size(send) * elem, right, incoming,
               chunks.size(recv) * elem, left);
    reduceLocal(dtype, reduction, data + chunks.offset(recv) * elem, incoming,
                chunks.size(recv));
  }
  // All-gather: step s forwards the complete chunk r+1-s, receives r-s.
  for (int s = 0; s < P - 1; ++s) {
    const int send = (r + 1 - s + 2 * P) % P, recv = (r - s + 2 * P) % P;
    t.sendRecv(comm, data + chunks.offset(send) * elem,
               chunks.size(send) * elem, right,
               data + chunks.offset(recv) * elem, chunks.size(recv) * elem,
               left);
  }
}

} // namespace

void dtrain::rt::ringAllReduce(dtrain_rt_comm_t *comm, void *buffer,
                               int64_t count, int32_t dtype,
                               int32_t reduction) {
  const int P = comm->size;
  if (P == 1 || count == 0)
    return;
  // Slices of P chunks, each within the cache and one transport call.
  const int64_t elem = dtypeSize(dtype);
  const int64_t chunkBytes = std::min(kRingChunkBytes, maxMessageCount());
  const int64_t slice = P * std::max<int64_t>(1, chunkBytes / elem);
  char *data = static_cast<char *>(buffer);
  for (int64_t first = 0; first < count; first += slice)
    ringPass(comm, data + first * elem, std::min(slice, count - first), dtype,
             reduction);
}
