//===- CudaNcclTest.cpp - the NCCL transport on the GPUs ------------------===//
//
// dtrain_rt_cuda_nccl_transport alone (one rank) or under mpirun with one
// GPU per rank. Each function of the transport, called directly, on
// managed memory and on host memory (staged), against values computed on
// the host; then the runtime's collectives with the transport installed
// (dense all-reduce, broadcast, sparse all-gather and gTop-k) against the
// same collectives over MPI.
//
// Without a CUDA device it prints one line and exits 77, which ctest
// reports as skipped. When a node runs more ranks than it has devices, the
// transport runs everything over MPI (NCCL wants a device for each rank):
// the checks then test that path, and rank 0 says so first.
//
//===----------------------------------------------------------------------===//

#include "CudaMPITestMain.h"
#include "ElementAccess.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }
int size() { return dtrain_rt_comm_size(dtrain_rt_comm_world()); }

const dtrain_rt_transport_t &nccl() { return *dtrain_rt_cuda_nccl_transport(); }

enum Memory { Managed, Host };

/// BYTES of managed memory, or of host memory that CUDA does not know.
class Bytes {
public:
  Bytes(Memory memory, size_t bytes) : memory(memory), bytes(bytes) {
    if (memory == Managed) {
      data = static_cast<char *>(dtrain_rt_cuda_alloc_managed(bytes));
    } else {
      host.resize(bytes);
      data = host.data();
    }
  }
  Bytes(const Bytes &) = delete;
  Bytes &operator=(const Bytes &) = delete;
  ~Bytes() {
    if (memory == Managed)
      dtrain_rt_cuda_free(data);
  }

  const Memory memory;
  const size_t bytes;
  char *data;

private:
  std::vector<char> host;
};

/// Byte I of rank R's data (SALT tells the tests' data apart).
char byteOf(int salt, int r, int64_t i) {
  return char((i * 31 + r * 7 + salt * 13) % 251);
}

/// Rank R's element I: a small multiple of 1/2, so that sums over a few
/// ranks are exact in every type.
double valueOf(int r, int64_t i) {
  return double((i * 7 + r * 3) % 17 - 8) / 2;
}

class Direct : public ::testing::TestWithParam<Memory> {};

TEST_P(Direct, AllReduceEveryTypeSumAndMax) {
  const int P = size();
  const int64_t count = 100003;
  for (int32_t dtype :
       {DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16, DTRAIN_RT_BF16})
    for (int32_t reduction : {DTRAIN_RT_SUM, DTRAIN_RT_MAX}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " +
                   reductionName(reduction));
      Bytes b(GetParam(), size_t(count * dtypeSize(dtype)));
      for (int64_t i = 0; i < count; ++i)
        storeElement(b.data, dtype, i, valueOf(rank(), i));
      nccl().all_reduce(nccl().context, dtrain_rt_comm_world(), b.data, count,
                        dtype, reduction);
      int64_t bad = 0;
      for (int64_t i = 0; i < count; ++i) {
        double sum = 0, max = -1e300;
        for (int r = 0; r < P; ++r) {
          sum += valueOf(r, i);
          max = std::max(max, valueOf(r, i));
        }
        bad += loadElement(b.data, dtype, i) !=
               (reduction == DTRAIN_RT_MAX ? max : sum);
      }
      EXPECT_EQ(bad, 0);
    }
}

TEST_P(Direct, LargeAllReduce) {
  // 64 MiB: a staging buffer that grows, for host memory.
  const int64_t count = 16 << 20;
  Bytes b(GetParam(), size_t(count) * 4);
  float *x = reinterpret_cast<float *>(b.data);
  std::fill(x, x + count, float(rank() + 1));
  nccl().all_reduce(nccl().context, dtrain_rt_comm_world(), b.data, count,
                    DTRAIN_RT_F32, DTRAIN_RT_SUM);
  const float expected = float(size() * (size() + 1) / 2);
  EXPECT_EQ(std::count(x, x + count, expected), count);
}

TEST_P(Direct, BroadcastFromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    Bytes b(GetParam(), 1001);
    for (int64_t i = 0; i < 1001; ++i)
      b.data[i] = byteOf(1, rank(), i);
    nccl().broadcast(nccl().context, dtrain_rt_comm_world(), b.data, 1001,
                     root);
    for (int64_t i = 0; i < 1001; ++i)
      ASSERT_EQ(b.data[i], byteOf(1, root, i)) << "root " << root;
  }
}

// The blocks in rank order; the receive side in the other kind of memory
// too (one buffer staged, the other not).
TEST_P(Direct, AllGather) {
  const int P = size();
  const int64_t bytes = 1003;
  for (Memory recvMemory : {GetParam(), GetParam() == Host ? Managed : Host}) {
    Bytes send(GetParam(), bytes), recv(recvMemory, size_t(P * bytes));
    for (int64_t i = 0; i < bytes; ++i)
      send.data[i] = byteOf(2, rank(), i);
    nccl().all_gather(nccl().context, dtrain_rt_comm_world(), send.data, bytes,
                      recv.data);
    for (int r = 0; r < P; ++r)
      for (int64_t i = 0; i < bytes; ++i)
        ASSERT_EQ(recv.data[r * bytes + i], byteOf(2, r, i)) << "rank " << r;
  }
}

// Blocks of different sizes, rank 0's empty when there are others.
TEST_P(Direct, AllGatherV) {
  const int P = size();
  std::vector<int64_t> sizes(static_cast<size_t>(P)), offsets;
  int64_t total = 0;
  for (int r = 0; r < P; ++r) {
    sizes[size_t(r)] = P > 1 && r == 0 ? 0 : 100 * r + 7;
    offsets.push_back(total);
    total += sizes[size_t(r)];
  }
  const int64_t mine = sizes[size_t(rank())];
  Bytes send(GetParam(), size_t(std::max<int64_t>(mine, 1))),
      recv(GetParam(), size_t(total));
  for (int64_t i = 0; i < mine; ++i)
    send.data[i] = byteOf(3, rank(), i);
  nccl().all_gather_v(nccl().context, dtrain_rt_comm_world(), send.data,
                      recv.data, sizes.data());
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < sizes[size_t(r)]; ++i)
      ASSERT_EQ(recv.data[offsets[size_t(r)] + i], byteOf(3, r, i))
          << "rank " << r;
}

// A ring step: every rank sends to its right and receives from its left,
// blocks of different sizes.
TEST_P(Direct, SendRecvRing) {
  const int P = size(), r = rank();
  if (P == 1)
    GTEST_SKIP() << "a ring needs two ranks";
  const int right = (r + 1) % P, left = (r + P - 1) % P;
  Bytes send(GetParam(), size_t(500 + r)), recv(GetParam(), size_t(500 + left));
  for (int64_t i = 0; i < 500 + r; ++i)
    send.data[i] = byteOf(4, r, i);
  nccl().send_recv(nccl().context, dtrain_rt_comm_world(), send.data, 500 + r,
                   right, recv.data, 500 + left, left);
  for (int64_t i = 0; i < 500 + left; ++i)
    ASSERT_EQ(recv.data[i], byteOf(4, left, i));
}

// Pairs as in gTop-k's tree: each odd rank sends to the even one below.
TEST_P(Direct, SendAndRecv) {
  const int P = size(), r = rank();
  if (P == 1)
    GTEST_SKIP() << "a message needs two ranks";
  Bytes b(GetParam(), 777);
  if (r % 2 == 1) {
    for (int64_t i = 0; i < 777; ++i)
      b.data[i] = byteOf(5, r, i);
    nccl().send(nccl().context, dtrain_rt_comm_world(), b.data, 777, r - 1);
  } else if (r + 1 < P) {
    nccl().recv(nccl().context, dtrain_rt_comm_world(), b.data, 777, r + 1);
    for (int64_t i = 0; i < 777; ++i)
      ASSERT_EQ(b.data[i], byteOf(5, r + 1, i));
  }
}

INSTANTIATE_TEST_SUITE_P(Memory, Direct, ::testing::Values(Managed, Host),
                         [](const ::testing::TestParamInfo<Memory> &info) {
                           return info.param == Managed ? "Managed" : "Host";
                         });

//===--- The runtime's collectives over NCCL ------------------------------===//

/// Installs the NCCL transport for the test, and MPI again after it.
class Installed : public ::testing::Test {
protected:
  void SetUp() override { dtrain_rt_set_transport(&nccl()); }
  void TearDown() override { dtrain_rt_set_transport(nullptr); }
};

// Above the MPI transport's ring threshold: NCCL's all-reduce, MEAN
// divided by the runtime, on managed memory as in a trainer; started and
// waited for.
TEST_F(Installed, DenseAllReduceMean) {
  const int P = size();
  const int64_t count = 3 << 20;
  Bytes b(Managed, size_t(count) * 4);
  float *x = reinterpret_cast<float *>(b.data);
  for (int64_t i = 0; i < count; ++i)
    x[i] = float(valueOf(rank(), i));
  dtrain_rt_wait(dtrain_rt_all_reduce_start(dtrain_rt_comm_world(), x, count,
                                            DTRAIN_RT_F32, DTRAIN_RT_MEAN));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < P; ++r)
      sum += valueOf(r, i);
    bad += x[i] != float(sum) / float(P);
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(Installed, Broadcast) {
  Bytes b(Managed, 4097);
  for (int64_t i = 0; i < 4097; ++i)
    b.data[i] = byteOf(6, rank(), i);
  dtrain_rt_broadcast(dtrain_rt_comm_world(), b.data, 4097, size() - 1);
  for (int64_t i = 0; i < 4097; ++i)
    ASSERT_EQ(b.data[i], byteOf(6, size() - 1, i));
}

/// Rank R's gradient and residual, in managed memory as a trainer's.
struct SparseRun {
  Bytes grad, residual;
  SparseRun(int64_t n, int r)
      : grad(Managed, size_t(n) * 4), residual(Managed, size_t(n) * 4) {
    for (int64_t i = 0; i < n; ++i) {
      g()[i] = float(valueOf(r, i)) + 0.001f * float(i % 97);
      res()[i] = 0.25f * float(valueOf(r + 1, i * 3));
    }
  }
  float *g() { return reinterpret_cast<float *>(grad.data); }
  float *res() { return reinterpret_cast<float *>(residual.data); }

  void exchange(int64_t n, int64_t k, int32_t method, int32_t aggregate,
                int32_t valueType) {
    dtrain_rt_wait(dtrain_rt_sparse_all_reduce_start(
        dtrain_rt_comm_world(), g(), res(), n, k, nullptr, 0, method, aggregate,
        DTRAIN_RT_SUM, valueType, 11));
  }
};

// The sparse exchange over NCCL gives what it gives over MPI: the same
// selection and residuals, the same scatter in rank order (all-gather);
// NCCL's all-reduces (gTop-k's values, the dense choice's f16 sums) may add
// in another order, or round f16 sums once where MPI's op rounds an f32
// sum.
TEST_F(Installed, SparseExchangesMatchMPI) {
  const int64_t n = 20000, k = 200;
  struct Case {
    int32_t method, aggregate, valueType;
  };
  for (Case c :
       {Case{DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_F32},
        Case{DTRAIN_RT_SELECT_GAUSSIAN, DTRAIN_RT_SPARSE_ALLGATHER,
             DTRAIN_RT_BF16},
        Case{DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_GTOPK, DTRAIN_RT_F32},
        Case{DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_DENSE, DTRAIN_RT_F16}}) {
    SCOPED_TRACE(c.aggregate * 100 + c.method * 10 + c.valueType);
    SparseRun overNccl(n, rank()), overMPI(n, rank());
    overNccl.exchange(n, k, c.method, c.aggregate, c.valueType);
    dtrain_rt_set_transport(nullptr);
    overMPI.exchange(n, k, c.method, c.aggregate, c.valueType);
    dtrain_rt_set_transport(&nccl());
    for (int64_t i = 0; i < n; ++i) {
      const float mpi = overMPI.g()[i];
      if (c.aggregate == DTRAIN_RT_SPARSE_ALLGATHER)
        ASSERT_EQ(overNccl.g()[i], mpi) << "index " << i;
      else // to an ulp of f16 per rank
        ASSERT_NEAR(overNccl.g()[i], mpi, size() * 0x1p-10 * std::fabs(mpi))
            << "index " << i;
      ASSERT_EQ(overNccl.res()[i], overMPI.res()[i]) << "index " << i;
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  return runCudaMPITests(argc, argv, [](int nodeRanks, int devices) {
    if (rank() == 0)
      std::printf("%d ranks, %d on this node of %d CUDA devices: %s\n", size(),
                  nodeRanks, devices,
                  nodeRanks > devices ? "ranks share devices, the transport "
                                        "runs over MPI"
                                      : "the transport runs over NCCL");
    return -1;
  });
}
