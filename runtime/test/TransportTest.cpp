//===- TransportTest.cpp - collectives through an installed transport -----===//
//
// Under mpirun with any number of ranks. A recording transport forwards
// every call to the MPI one (dtrain_rt_mpi_transport) and writes it down;
// each collective runs once through it and once through MPI alone, and the
// results must be the same bits, and the calls written down exactly the
// ones the collective's algorithm makes. A transfer that bypassed the
// transport would miss from the record (and would not run over NCCL).
// Also the buffer fence: collectives wait for the work recorded when they
// were submitted (a --target=cuda step's kernels) before they touch their
// buffers.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace dtrain::rt;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }
int size() { return dtrain_rt_comm_size(dtrain_rt_comm_world()); }

//===--- The recording transport ------------------------------------------===//

/// The calls of the recording transport, one line each.
struct Record {
  std::vector<std::string> calls;
  dtrain_rt_comm_t *comm = nullptr; // the communicator of every call
};

Record &recordOf(void *context) { return *static_cast<Record *>(context); }

const dtrain_rt_transport_t &mpi() { return *dtrain_rt_mpi_transport(); }

void note(void *context, dtrain_rt_comm_t *comm, std::string call) {
  Record &record = recordOf(context);
  EXPECT_EQ(comm, dtrain_rt_comm_world()) << call;
  record.calls.push_back(std::move(call));
}

void recordAllReduce(void *context, dtrain_rt_comm_t *comm, void *buffer,
                     int64_t count, int32_t dtype, int32_t reduction) {
  note(context, comm,
       "all_reduce " + std::to_string(count) + " " + dtypeName(dtype) + " " +
           reductionName(reduction));
  mpi().all_reduce(mpi().context, comm, buffer, count, dtype, reduction);
}

void recordBroadcast(void *context, dtrain_rt_comm_t *comm, void *buffer,
                     int64_t bytes, int32_t root) {
  note(context, comm,
       "broadcast " + std::to_string(bytes) + " from " + std::to_string(root));
  mpi().broadcast(mpi().context, comm, buffer, bytes, root);
}

void recordAllGather(void *context, dtrain_rt_comm_t *comm, const void *send,
                     int64_t bytes, void *recv) {
  note(context, comm, "all_gather " + std::to_string(bytes));
  mpi().all_gather(mpi().context, comm, send, bytes, recv);
}

void recordAllGatherV(void *context, dtrain_rt_comm_t *comm, const void *send,
                      void *recv, const int64_t *bytes) {
  std::string call = "all_gather_v";
  for (int r = 0; r < size(); ++r)
    call += " " + std::to_string(bytes[r]);
  note(context, comm, call);
  mpi().all_gather_v(mpi().context, comm, send, recv, bytes);
}

void recordSend(void *context, dtrain_rt_comm_t *comm, const void *buffer,
                int64_t bytes, int32_t peer) {
  note(context, comm,
       "send " + std::to_string(bytes) + " to " + std::to_string(peer));
  mpi().send(mpi().context, comm, buffer, bytes, peer);
}

void recordRecv(void *context, dtrain_rt_comm_t *comm, void *buffer,
                int64_t bytes, int32_t peer) {
  note(context, comm,
       "recv " + std::to_string(bytes) + " from " + std::to_string(peer));
  mpi().recv(mpi().context, comm, buffer, bytes, peer);
}

void recordSendRecv(void *context, dtrain_rt_comm_t *comm, const void *send,
                    int64_t sendBytes, int32_t dest, void *recv,
                    int64_t recvBytes, int32_t source) {
  note(context, comm,
       "send_recv " + std::to_string(sendBytes) + " to " +
           std::to_string(dest) + ", " + std::to_string(recvBytes) + " from " +
           std::to_string(source));
  mpi().send_recv(mpi().context, comm, send, sendBytes, dest, recv, recvBytes,
                  source);
}

/// Installs the recording transport (with the MPI transport's ring
/// threshold, or RINGFROMBYTES) for the test, and MPI again after it.
class Recorded : public ::testing::Test {
protected:
  void SetUp() override { install(mpi().ring_from_bytes); }
  void TearDown() override {
    dtrain_rt_set_transport(nullptr);
    setMaxMessageCountForTesting(0);
  }

  void install(int64_t ringFromBytes, int32_t reducesMean = 0) {
    const dtrain_rt_transport_t recording = {
        &record,         ringFromBytes,   recordAllReduce,
        recordBroadcast, recordAllGather, recordAllGatherV,
        recordSend,      recordRecv,      recordSendRecv,
        reducesMean,
    };
    dtrain_rt_set_transport(&recording);
  }

  /// The calls since the last take.
  std::vector<std::string> take() {
    std::vector<std::string> calls;
    calls.swap(record.calls);
    return calls;
  }

  /// Runs FN (a collective on DATA) through MPI alone, then through the
  /// recording transport on a copy of the same input; expects the same
  /// bytes, and returns the calls recorded.
  template <class Fn>
  std::vector<std::string> sameAsMPI(std::vector<char> data, Fn &&fn) {
    std::vector<char> alone = data;
    dtrain_rt_set_transport(nullptr);
    fn(alone.data());
    install(mpi().ring_from_bytes);
    fn(data.data());
    EXPECT_TRUE(alone == data) << "the results differ from MPI's";
    return take();
  }

  Record record;
};

//===--- Data -------------------------------------------------------------===//

/// A value in (-1, 1) from a hash of (R, I): sums of them round, so a
/// different order of additions would show.
float hashValue(int r, int64_t i) {
  uint64_t x = uint64_t(r + 1) * 0x9E3779B97F4A7C15ull +
               uint64_t(i) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return float(double(x >> 11) / double(1ull << 53) * 2 - 1);
}

/// COUNT elements of DTYPE (f32 or bf16) of rank R, as bytes.
std::vector<char> elements(int32_t dtype, int64_t count, int r) {
  std::vector<char> bytes(static_cast<size_t>(count * dtypeSize(dtype)));
  for (int64_t i = 0; i < count; ++i) {
    const float v = hashValue(r, i);
    if (dtype == DTRAIN_RT_F32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const uint16_t top = uint16_t(bits >> 16); // truncated: any bf16 will do
      std::memcpy(bytes.data() + 2 * i, &top, 2);
    }
  }
  return bytes;
}

/// The calls of the ring (Ring.cpp) over COUNT elements of ELEMBYTES on
/// this rank, in one pass: P-1 reduce-scatter steps, P-1 all-gather steps.
std::vector<std::string> ringCalls(int64_t count, int64_t elemBytes) {
  const int P = size(), r = rank();
  std::vector<std::string> calls;
  if (P == 1)
    return calls;
  const std::string right = std::to_string((r + 1) % P),
                    left = std::to_string((r + P - 1) % P);
  // One pass per slice of P chunks of kRingChunkBytes.
  const int64_t slice = P * (kRingChunkBytes / elemBytes);
  for (int64_t first = 0; first < count; first += slice) {
    const int64_t n = std::min(slice, count - first);
    auto chunk = [&](int c) {
      return std::to_string((n / P + (c < n % P)) * elemBytes);
    };
    for (int s = 0; s < P - 1; ++s)
      calls.push_back("send_recv " + chunk((r - s + 2 * P) % P) + " to " +
                      right + ", " + chunk((r - s - 1 + 2 * P) % P) +
                      " from " + left);
    for (int s = 0; s < P - 1; ++s)
      calls.push_back("send_recv " + chunk((r + 1 - s + 2 * P) % P) + " to " +
                      right + ", " + chunk((r - s + 2 * P) % P) + " from " +
                      left);
  }
  return calls;
}

/// CALLS, a dense collective's transport calls where there is more than one
/// rank: across one rank an all-reduce or a broadcast leaves its buffer as
/// it is, and calls nothing.
std::vector<std::string> dense(std::vector<std::string> calls) {
  return size() > 1 ? calls : std::vector<std::string>{};
}

//===--- Dense all-reduce -------------------------------------------------===//

struct DenseCase {
  int32_t dtype, reduction;
  int64_t bytes;
};

class RecordedAllReduce : public Recorded,
                          public ::testing::WithParamInterface<DenseCase> {};

// Below the ring threshold one all-reduce call (MEAN sums; the runtime
// divides); from it, the ring's steps and no all-reduce.
TEST_P(RecordedAllReduce, SameBitsAndCallsAsMPI) {
  const int32_t dtype = GetParam().dtype, reduction = GetParam().reduction;
  const int64_t bytes = GetParam().bytes;
  const int64_t count = bytes / dtypeSize(dtype);
  const std::vector<std::string> calls =
      sameAsMPI(elements(dtype, count, rank()), [&](char *data) {
        dtrain_rt_all_reduce(dtrain_rt_comm_world(), data, count, dtype,
                             reduction);
      });
  const bool ring = bytes >= mpi().ring_from_bytes;
  const std::string reduced =
      reductionName(reduction == DTRAIN_RT_MAX ? DTRAIN_RT_MAX : DTRAIN_RT_SUM);
  EXPECT_EQ(calls, ring ? ringCalls(count, dtypeSize(dtype))
                        : dense({"all_reduce " + std::to_string(count) + " " +
                                 dtypeName(dtype) + " " + reduced}));
}

std::vector<DenseCase> denseCases() {
  std::vector<DenseCase> cases;
  for (int32_t dtype : {DTRAIN_RT_F32, DTRAIN_RT_BF16})
    for (int32_t reduction : {DTRAIN_RT_SUM, DTRAIN_RT_MEAN, DTRAIN_RT_MAX})
      for (int64_t bytes : {int64_t(4000), int64_t(5 << 19)}) // 2.5 MiB
        cases.push_back({dtype, reduction, bytes});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Dense, RecordedAllReduce,
                         ::testing::ValuesIn(denseCases()),
                         [](const ::testing::TestParamInfo<DenseCase> &info) {
                           return std::string(dtypeName(info.param.dtype)) +
                                  "_" + reductionName(info.param.reduction) +
                                  "_" + std::to_string(info.param.bytes) +
                                  "bytes";
                         });

TEST_F(Recorded, ExplicitAlgorithmsAndStartedAllReduces) {
  const int64_t count = 5 << 17; // 2.5 MiB of f32
  EXPECT_EQ(sameAsMPI(elements(DTRAIN_RT_F32, count, rank()),
                      [&](char *data) {
                        dtrain_rt_wait(dtrain_rt_all_reduce_start_with(
                            dtrain_rt_comm_world(), data, count, DTRAIN_RT_F32,
                            DTRAIN_RT_SUM, DTRAIN_RT_ALLREDUCE_MPI));
                      }),
            dense({"all_reduce 655360 f32 sum"}));
  EXPECT_EQ(sameAsMPI(elements(DTRAIN_RT_BF16, 1001, rank()),
                      [&](char *data) {
                        dtrain_rt_wait(dtrain_rt_all_reduce_start_with(
                            dtrain_rt_comm_world(), data, 1001, DTRAIN_RT_BF16,
                            DTRAIN_RT_MEAN, DTRAIN_RT_ALLREDUCE_RING));
                      }),
            ringCalls(1001, 2));
}

// A transport's ring_from_bytes is DEFAULT's threshold: 0 never rings.
TEST_F(Recorded, RingFromBytesOfTheTransport) {
  std::vector<float> data(1 << 20, 1.0f); // 4 MiB
  install(0);
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), data.data(), 1 << 20,
                       DTRAIN_RT_F32, DTRAIN_RT_SUM);
  EXPECT_EQ(take(), dense({"all_reduce 1048576 f32 sum"}));
  install(400);
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), data.data(), 100, DTRAIN_RT_F32,
                       DTRAIN_RT_SUM);
  EXPECT_EQ(take(), ringCalls(100, 4));
  EXPECT_EQ(data[0], float(size() * size()));
}

// A transport that averages (reduces_mean) gets MEAN itself and the runtime
// does not divide again: the same bits as MPI's sum and division (the MPI
// transport, forwarded to, takes MEAN too). The ring still sums and
// divides on the host.
TEST_F(Recorded, MeanOfATransportThatAverages) {
  for (int32_t dtype : {DTRAIN_RT_F32, DTRAIN_RT_BF16}) {
    const std::vector<char> input = elements(dtype, 1000, rank());
    std::vector<char> alone = input, averaged = input;
    dtrain_rt_set_transport(nullptr);
    dtrain_rt_all_reduce(dtrain_rt_comm_world(), alone.data(), 1000, dtype,
                         DTRAIN_RT_MEAN);
    install(mpi().ring_from_bytes, /*reducesMean=*/1);
    dtrain_rt_all_reduce(dtrain_rt_comm_world(), averaged.data(), 1000, dtype,
                         DTRAIN_RT_MEAN);
    EXPECT_TRUE(alone == averaged) << dtypeName(dtype);
    EXPECT_EQ(take(), dense({std::string("all_reduce 1000 ") +
                             dtypeName(dtype) + " mean"}));
    dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), averaged.data(), 1000,
                              dtype, DTRAIN_RT_MEAN, DTRAIN_RT_ALLREDUCE_RING);
    EXPECT_EQ(take(), ringCalls(1000, dtypeSize(dtype)));
  }
}

// Longer than maxMessageCount(): several transport calls.
TEST_F(Recorded, LongCollectivesSplit) {
  setMaxMessageCountForTesting(1000);
  EXPECT_EQ(sameAsMPI(elements(DTRAIN_RT_F32, 2500, rank()),
                      [&](char *data) {
                        dtrain_rt_all_reduce_with(
                            dtrain_rt_comm_world(), data, 2500, DTRAIN_RT_F32,
                            DTRAIN_RT_MAX, DTRAIN_RT_ALLREDUCE_MPI);
                      }),
            dense({"all_reduce 1000 f32 max", "all_reduce 1000 f32 max",
                   "all_reduce 500 f32 max"}));
  EXPECT_EQ(sameAsMPI(std::vector<char>(2500, char(rank())),
                      [&](char *data) {
                        dtrain_rt_broadcast(dtrain_rt_comm_world(), data, 2500,
                                            size() - 1);
                      }),
            dense({"broadcast 1000 from " + std::to_string(size() - 1),
                   "broadcast 1000 from " + std::to_string(size() - 1),
                   "broadcast 500 from " + std::to_string(size() - 1)}));
  // The ring's steps stay within 1000 bytes.
  const int64_t count = 100003;
  const std::vector<std::string> ring =
      sameAsMPI(elements(DTRAIN_RT_F32, count, rank()), [&](char *data) {
        dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), data, count,
                                  DTRAIN_RT_F32, DTRAIN_RT_SUM,
                                  DTRAIN_RT_ALLREDUCE_RING);
      });
  const int P = size();
  const int64_t slice = 250 * P, passes = (count + slice - 1) / slice;
  EXPECT_EQ(int64_t(ring.size()), P == 1 ? 0 : passes * 2 * (P - 1));
  for (const std::string &call : ring)
    EXPECT_LE(std::stoll(call.substr(std::strlen("send_recv "))), 1000) << call;
}

//===--- Broadcast --------------------------------------------------------===//

TEST_F(Recorded, BroadcastFromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    std::vector<char> bytes(1001);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = char(i * 7 + rank());
    EXPECT_EQ(sameAsMPI(bytes,
                        [&](char *data) {
                          dtrain_rt_broadcast(dtrain_rt_comm_world(), data,
                                              1001, root);
                        }),
              dense({"broadcast 1001 from " + std::to_string(root)}));
  }
}

//===--- Sparse all-reduce ------------------------------------------------===//

/// Rank R's gradient and residual for a sparse exchange, one after the
/// other.
std::vector<char> sparseInput(int64_t n, int r) {
  return elements(DTRAIN_RT_F32, 2 * n, r);
}

/// Runs the sparse exchange on DATA (the gradient, then the residual).
void sparse(char *data, int64_t n, int64_t k, int32_t method, int32_t aggregate,
            int32_t valueType = DTRAIN_RT_F32) {
  float *grad = reinterpret_cast<float *>(data);
  dtrain_rt_wait(dtrain_rt_sparse_all_reduce_start(
      dtrain_rt_comm_world(), grad, grad + n, n, k, nullptr, 0, method,
      aggregate, DTRAIN_RT_MEAN, valueType, 7));
}

// Exactly k each: one all-gather of k entries (8 bytes in f32, 6 in bf16).
TEST_F(Recorded, SparseAllGatherOfExactlyK) {
  for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16}) {
    EXPECT_EQ(sameAsMPI(sparseInput(1000, rank()),
                        [&](char *data) {
                          sparse(data, 1000, 25, DTRAIN_RT_SELECT_EXACT,
                                 DTRAIN_RT_SPARSE_ALLGATHER, valueType);
                        }),
              std::vector<std::string>{
                  "all_gather " +
                  std::to_string(25 * (valueType == DTRAIN_RT_F32 ? 8 : 6))});
  }
}

// About k each: the sizes first (8 bytes), then the blocks; the sizes are
// the same on every rank, this rank's its selection's.
TEST_F(Recorded, SparseAllGatherOfVariableSizes) {
  takeCommStats();
  const std::vector<std::string> calls =
      sameAsMPI(sparseInput(5000, rank()), [&](char *data) {
        sparse(data, 5000, 50, DTRAIN_RT_SELECT_GAUSSIAN,
               DTRAIN_RT_SPARSE_ALLGATHER);
      });
  // Two runs, the same selection in each.
  const int64_t selected = takeCommStats().selectedElements / 2;
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], "all_gather 8");
  std::vector<int64_t> sizes;
  const char *p = calls[1].c_str() + std::strlen("all_gather_v");
  for (char *end; *p; p = end)
    sizes.push_back(std::strtoll(p, &end, 10));
  ASSERT_EQ(int64_t(sizes.size()), size()) << calls[1];
  EXPECT_EQ(sizes[size_t(rank())], 8 * selected);
  std::vector<int64_t> first = sizes;
  MPI_Bcast(first.data(), size(), MPI_INT64_T, 0, MPI_COMM_WORLD);
  EXPECT_EQ(first, sizes);
}

// gTop-k: the tree's messages (a count and k entries), rank 0's global
// indices (a count and k of them), one all-reduce of their k values.
TEST_F(Recorded, SparseGTopKTree) {
  const int64_t n = 2000, k = 40;
  const int P = size(), r = rank();
  const std::string message = std::to_string(8 + k * 8);
  std::vector<std::string> expected;
  int m = 1;
  while (2 * m <= P)
    m *= 2;
  if (r >= m)
    expected.push_back("send " + message + " to " + std::to_string(r - m));
  else if (r + m < P)
    expected.push_back("recv " + message + " from " + std::to_string(r + m));
  for (int d = 1; r < m && d < m; d *= 2) {
    if (r % (2 * d) == d) {
      expected.push_back("send " + message + " to " + std::to_string(r - d));
      break;
    }
    expected.push_back("recv " + message + " from " + std::to_string(r + d));
  }
  if (P > 1) {
    expected.push_back("broadcast " + std::to_string(4 * (k + 1)) + " from 0");
    expected.push_back("all_reduce " + std::to_string(k) + " f32 sum");
  }
  EXPECT_EQ(sameAsMPI(sparseInput(n, r),
                      [&](char *data) {
                        sparse(data, n, k, DTRAIN_RT_SELECT_EXACT,
                               DTRAIN_RT_SPARSE_GTOPK);
                      }),
            expected);
}

// The dense choice: one all-reduce of everything, in the value type.
TEST_F(Recorded, SparseDenseAggregate) {
  for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16})
    EXPECT_EQ(sameAsMPI(sparseInput(1000, rank()),
                        [&](char *data) {
                          sparse(data, 1000, 10, DTRAIN_RT_SELECT_EXACT,
                                 DTRAIN_RT_SPARSE_DENSE, valueType);
                        }),
              std::vector<std::string>{std::string("all_reduce 1000 ") +
                                       dtypeName(valueType) + " sum"});
}

//===--- Installing -------------------------------------------------------===//

TEST_F(Recorded, NullRestoresMPI) {
  std::vector<float> data(10, 1.0f);
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), data.data(), 10, DTRAIN_RT_F32,
                       DTRAIN_RT_SUM);
  EXPECT_EQ(take().size(), dense({"all_reduce"}).size());
  dtrain_rt_set_transport(nullptr);
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), data.data(), 10, DTRAIN_RT_F32,
                       DTRAIN_RT_SUM);
  dtrain_rt_broadcast(dtrain_rt_comm_world(), data.data(), 40, 0);
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(data[9], float(size() * size()));
}

TEST(MPITransport, IsTheDefault) {
  const dtrain_rt_transport_t *t = dtrain_rt_mpi_transport();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, dtrain_rt_mpi_transport());
  EXPECT_EQ(t->ring_from_bytes, 2 << 20);
  // Its functions work when called directly, as a transport that
  // bootstraps over MPI calls them.
  int64_t value = rank() == 0 ? 42 : 0;
  t->broadcast(t->context, dtrain_rt_comm_world(), &value, sizeof value, 0);
  EXPECT_EQ(value, 42);
}

//===--- The buffer fence -------------------------------------------------===//

/// A fence that stands for a device still writing a buffer: each record
/// takes the writes queued so far (LATE: each element's final value), and
/// its wait makes them, after a delay, on the thread that runs the
/// collective. A collective that did not wait would reduce the stale
/// values.
struct LateWrites {
  std::mutex mutex;
  std::vector<std::pair<float *, std::vector<float>>> queued;
  int records = 0, waits = 0;
  std::thread::id recordThread, waitThread;
};

struct Fence {
  std::vector<std::pair<float *, std::vector<float>>> writes;
};

void *recordLate(void *context) {
  auto &late = *static_cast<LateWrites *>(context);
  std::lock_guard<std::mutex> lock(late.mutex);
  late.records += 1;
  late.recordThread = std::this_thread::get_id();
  auto *fence = new Fence{std::move(late.queued)};
  late.queued.clear();
  return fence;
}

void waitLate(void *context, void *fence) {
  auto &late = *static_cast<LateWrites *>(context);
  std::unique_ptr<Fence> writes(static_cast<Fence *>(fence));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (auto &[buffer, values] : writes->writes)
    std::copy(values.begin(), values.end(), buffer);
  std::lock_guard<std::mutex> lock(late.mutex);
  late.waits += 1;
  late.waitThread = std::this_thread::get_id();
}

TEST(BufferFence, CollectivesWaitForTheWorkBeforeThem) {
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  LateWrites late;
  const dtrain_rt_buffer_fence_t fence = {&late, recordLate, waitLate};
  dtrain_rt_set_buffer_fence(&fence);
  // Across one rank the dense collectives leave their buffers alone: they
  // take no fence, and the late values stay queued for the next fence.
  const bool alone = size() == 1;

  // A started all-reduce of values that are still being written: 0 now,
  // rank + 1 once the fence's work is done.
  const int64_t n = 1000;
  std::vector<float> dense(n, 0.0f);
  late.queued.push_back({dense.data(), std::vector<float>(n, rank() + 1.0f)});
  dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
      world, dense.data(), n, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  dtrain_rt_wait(request);
  const float ranksSum = float(size() * (size() + 1) / 2);
  EXPECT_EQ(dense, std::vector<float>(n, alone ? 0.0f : ranksSum));

  // A sparse exchange (all of it sent: k = n) of a late gradient, and a
  // blocking all-reduce.
  std::vector<float> grad(n, 0.0f), residual(n, 0.0f);
  late.queued.push_back({grad.data(), std::vector<float>(n, rank() + 1.0f)});
  request = dtrain_rt_sparse_all_reduce_start(
      world, grad.data(), residual.data(), n, n, nullptr, 0,
      DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SUM,
      DTRAIN_RT_F32, 0);
  dtrain_rt_wait(request);
  EXPECT_EQ(grad, std::vector<float>(n, ranksSum));
  EXPECT_EQ(dense, std::vector<float>(n, ranksSum));
  std::vector<float> scalar(1, 0.0f);
  late.queued.push_back({scalar.data(), {2.0f}});
  dtrain_rt_all_reduce(world, scalar.data(), 1, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  EXPECT_EQ(scalar[0], alone ? 0.0f : 2.0f * float(size()));

  // One record per collective that took a fence, on the caller's thread,
  // and one wait each, on the communication thread when there is one
  // (more than one rank).
  EXPECT_EQ(late.records, alone ? 1 : 3);
  EXPECT_EQ(late.waits, alone ? 1 : 3);
  EXPECT_EQ(late.recordThread, std::this_thread::get_id());
  if (!alone)
    EXPECT_NE(late.waitThread, std::this_thread::get_id());

  // Uninstalled: buffers are ready when submitted.
  dtrain_rt_set_buffer_fence(nullptr);
  dtrain_rt_all_reduce(world, scalar.data(), 1, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  EXPECT_EQ(late.records, alone ? 1 : 3);
  EXPECT_EQ(scalar[0], alone ? 0.0f : 2.0f * float(size() * size()));
}

} // namespace
