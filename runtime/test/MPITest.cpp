//===- MPITest.cpp - all-reduce under MPI ---------------------------------===//
//
// Run under mpirun with any number of ranks. Rank r contributes
// value(r, i), a small multiple of 1/2, so sums over a handful of ranks are
// exact in every element type (bf16 included); the reference is computed in
// double from the same formula and rounded once to the element type.
//
//===----------------------------------------------------------------------===//

#include "ElementAccess.h"
#include "Float16.h"
#include "Internal.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }
int size() { return dtrain_rt_comm_size(dtrain_rt_comm_world()); }

double value(int r, int64_t i) { return double((i * 7 + r * 3) % 17 - 8) / 2; }

/// A buffer of COUNT elements of DTYPE followed by guard elements that no
/// all-reduce may touch.
class Buffer {
public:
  static constexpr int64_t kGuard = 8;
  static constexpr double kGuardValue = -99.0; // exact in every type

  Buffer(int32_t dtype, int64_t count)
      : dtype(dtype), count(count),
        bytes(size_t((count + kGuard) * dtypeSize(dtype))) {
    for (int64_t i = 0; i < kGuard; ++i)
      set(count + i, kGuardValue);
  }

  void *data() { return count ? bytes.data() : nullptr; }

  /// Stores V rounded to the element type.
  void set(int64_t i, double v) { storeElement(bytes.data(), dtype, i, v); }

  double get(int64_t i) const { return loadElement(bytes.data(), dtype, i); }

  /// Rounds V to the element type.
  double round(double v) const {
    switch (dtype) {
    case DTRAIN_RT_F32:
      return float(v);
    case DTRAIN_RT_F64:
      return v;
    case DTRAIN_RT_F16:
      return f16ToF32(f32ToF16(float(v)));
    default:
      return bf16ToF32(f32ToBF16(float(v)));
    }
  }

  const int32_t dtype;
  const int64_t count;

private:
  std::vector<char> bytes;
};

/// Fills rank R's contribution.
Buffer makeInput(int32_t dtype, int64_t count, int r) {
  Buffer b(dtype, count);
  for (int64_t i = 0; i < count; ++i)
    b.set(i, value(r, i));
  return b;
}

/// The expected result at element I: exact sum / max over ranks, rounded
/// once; MEAN divides the (exact, representable) sum in the compute type.
double expected(int32_t dtype, int32_t reduction, int64_t i, int P,
                const Buffer &like) {
  double sum = 0, max = -1e300;
  for (int r = 0; r < P; ++r) {
    sum += value(r, i);
    max = std::max(max, value(r, i));
  }
  if (reduction == DTRAIN_RT_MAX)
    return like.round(max);
  if (reduction == DTRAIN_RT_SUM)
    return like.round(sum);
  if (dtype == DTRAIN_RT_F64)
    return sum / P;
  return like.round(float(sum) / float(P)); // f32 quotient, rounded again
}

/// Checks every element and the guard; reports the first mismatch only.
void expectReduced(const Buffer &b, int32_t reduction) {
  const int P = size();
  int64_t bad = 0, firstBad = -1;
  for (int64_t i = 0; i < b.count; ++i)
    if (b.get(i) != expected(b.dtype, reduction, i, P, b) && bad++ == 0)
      firstBad = i;
  EXPECT_EQ(bad, 0) << "first mismatch at element " << firstBad << ": got "
                    << b.get(firstBad) << ", expected "
                    << expected(b.dtype, reduction, firstBad, P, b);
  for (int64_t i = 0; i < Buffer::kGuard; ++i)
    ASSERT_EQ(b.get(b.count + i), Buffer::kGuardValue)
        << "guard element " << i << " past the buffer was overwritten";
}

enum CountKind { Zero, One, RanksMinus1, RanksPlus1, Large };

int64_t resolveCount(CountKind kind) {
  switch (kind) {
  case Zero:
    return 0;
  case One:
    return 1;
  case RanksMinus1:
    return size() - 1;
  case RanksPlus1:
    return size() + 1;
  default:
    return 1000003;
  }
}

const char *countName(CountKind kind) {
  static const char *const names[] = {"Count0", "Count1", "CountPminus1",
                                      "CountPplus1", "Count1000003"};
  return names[kind];
}

//===--- Communicator -----------------------------------------------------===//

TEST(Comm, RankAndSizeMatchMPI) {
  int mpiRank = -1, mpiSize = -1, initialized = 0;
  MPI_Initialized(&initialized);
  ASSERT_TRUE(initialized);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpiSize);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world, dtrain_rt_comm_world());
  EXPECT_EQ(dtrain_rt_comm_rank(world), mpiRank);
  EXPECT_EQ(dtrain_rt_comm_size(world), mpiSize);
  EXPECT_GE(mpiSize, 1);
  EXPECT_GE(mpiRank, 0);
  EXPECT_LT(mpiRank, mpiSize);
}

//===--- One origin for every rank's times --------------------------------===//

/// The steady clock's reading (seconds since boot, one clock for every
/// process on a machine, as the ranks of this test are) at this rank's
/// clockSeconds() SECONDS.
double machineClockAt(double seconds) {
  const double machineNow =
      std::chrono::duration<double>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count();
  return machineNow - (clockSeconds() - seconds);
}

TEST(AlignedOrigin, IsOneMomentOnTheMachineClock) {
  // The processes started at different moments, so their clockSeconds()
  // differ; a rank that sleeps before the call makes the others wait in it.
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * rank()));
  const double origin = alignedOrigin(dtrain_rt_comm_world());
  double moments[2] = {machineClockAt(origin), -machineClockAt(origin)};
  MPI_Allreduce(MPI_IN_PLACE, moments, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Within half the fastest round trip with rank 0 (microseconds on one
  // machine; a millisecond allows for oversubscribed cores).
  EXPECT_LT(moments[0] + moments[1], 1e-3)
      << "the ranks' origins lie " << (moments[0] + moments[1]) * 1e3
      << " ms apart on the machine's clock";
}

//===--- Synchronous all-reduce over every combination --------------------===//

using Case = std::tuple<int32_t, int32_t, int32_t, CountKind>;

class AllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(AllReduce, MatchesReference) {
  const auto [dtype, reduction, algorithm, kind] = GetParam();
  Buffer b = makeInput(dtype, resolveCount(kind), rank());
  dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), b.data(), b.count, dtype,
                            reduction, algorithm);
  expectReduced(b, reduction);
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  const auto [dtype, reduction, algorithm, kind] = info.param;
  std::string alg = algorithmName(algorithm);
  alg[0] = char(std::toupper(alg[0]));
  return std::string(dtypeName(dtype)) + "_" + reductionName(reduction) + "_" +
         alg + "_" + countName(kind);
}

INSTANTIATE_TEST_SUITE_P(
    All, AllReduce,
    ::testing::Combine(
        ::testing::Values(DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16,
                          DTRAIN_RT_BF16),
        ::testing::Values(DTRAIN_RT_SUM, DTRAIN_RT_MEAN, DTRAIN_RT_MAX),
        ::testing::Values(DTRAIN_RT_ALLREDUCE_DEFAULT, DTRAIN_RT_ALLREDUCE_MPI,
                          DTRAIN_RT_ALLREDUCE_RING),
        ::testing::Values(Zero, One, RanksMinus1, RanksPlus1, Large)),
    caseName);

TEST(AllReduceDefault, UsesDefaultAlgorithm) {
  Buffer b = makeInput(DTRAIN_RT_F32, 1001, rank());
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), b.data(), b.count, DTRAIN_RT_F32,
                       DTRAIN_RT_MEAN);
  expectReduced(b, DTRAIN_RT_MEAN);
}

TEST(AllReduceDefault, NullBufferWithZeroCount) {
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), nullptr, 0, DTRAIN_RT_BF16,
                       DTRAIN_RT_SUM);
  dtrain_rt_wait(dtrain_rt_all_reduce_start(dtrain_rt_comm_world(), nullptr, 0,
                                            DTRAIN_RT_F16, DTRAIN_RT_MEAN));
}

//===--- Special values ---------------------------------------------------===//

class AllReduceAlgorithm : public ::testing::TestWithParam<int32_t> {};

TEST_P(AllReduceAlgorithm, F16SumOfEveryPatternMatchesScalarRounding) {
  // Element i holds a = pattern i from rank i mod P and b (a hash) from
  // rank (i + 1) mod P, +0 from the others: a sum of two in any order, so
  // the reference is f16(f32(a) + f32(b)) (a alone on one rank). Every f16
  // pattern (subnormals, infinities, NaNs) meets the vector and scalar
  // paths of the reduction alike.
  const int P = size(), r = rank();
  const int64_t n = 65536 + 5; // a tail past the vector width
  auto patternA = [](int64_t i) { return uint16_t(i); };
  auto patternB = [](int64_t i) {
    uint64_t x = uint64_t(i) * 0x9E3779B97F4A7C15ull;
    uint16_t b = uint16_t(x >> 48);
    // No NaN + NaN: which payload survives depends on operand order.
    return (b & 0x7c00) == 0x7c00 && (b & 0x3ff) ? uint16_t(b & 0xfc00) : b;
  };
  std::vector<uint16_t> buffer(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (i % P == r)
      buffer[size_t(i)] = patternA(i);
    else if (P > 1 && (i + 1) % P == r)
      buffer[size_t(i)] = patternB(i);
    if (P > 1 && (i % P == r || (i + 1) % P == r) &&
        (patternA(i) & 0x7c00) == 0x7c00 && (patternA(i) & 0x3ff))
      buffer[size_t(i)] = (i % P == r) ? patternA(i) : uint16_t(0);
  }
  dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), buffer.data(), n,
                            DTRAIN_RT_F16, DTRAIN_RT_SUM, GetParam());
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t a = patternA(i);
    const bool aIsNaN = (a & 0x7c00) == 0x7c00 && (a & 0x3ff);
    const uint16_t b = P == 1 || aIsNaN ? uint16_t(0) : patternB(i);
    const uint16_t expected = P == 1 ? a : f32ToF16(f16ToF32(a) + f16ToF32(b));
    mismatches += buffer[size_t(i)] != expected;
  }
  EXPECT_EQ(0, mismatches);
}

TEST_P(AllReduceAlgorithm, F16SumOverflowsToInfinity) {
  const int P = size();
  Buffer b(DTRAIN_RT_F16, 3);
  for (int i = 0; i < 3; ++i)
    b.set(i, 65504.0);
  dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), b.data(), 3, DTRAIN_RT_F16,
                            DTRAIN_RT_SUM, GetParam());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(b.get(i), P == 1 ? 65504.0 : HUGE_VAL);
}

TEST_P(AllReduceAlgorithm, BF16MaxOfNegativeAndSubnormal) {
  // Rank r contributes -(r+1) and r * smallest subnormal.
  const int P = size(), r = rank();
  const float tiny = std::ldexp(1.0f, -133); // bf16 smallest subnormal
  Buffer b(DTRAIN_RT_BF16, 2);
  b.set(0, -(r + 1.0));
  b.set(1, r * double(tiny));
  dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), b.data(), 2, DTRAIN_RT_BF16,
                            DTRAIN_RT_MAX, GetParam());
  EXPECT_EQ(b.get(0), -1.0);
  EXPECT_EQ(b.get(1), (P - 1) * double(tiny));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllReduceAlgorithm,
                         ::testing::Values(DTRAIN_RT_ALLREDUCE_MPI,
                                           DTRAIN_RT_ALLREDUCE_RING),
                         [](const ::testing::TestParamInfo<int32_t> &info) {
                           return std::string(algorithmName(info.param));
                         });

//===--- Asynchronous all-reduce ------------------------------------------===//

TEST(Async, StartWaitEveryTypeAndReduction) {
  for (int32_t dtype :
       {DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16, DTRAIN_RT_BF16})
    for (int32_t reduction : {DTRAIN_RT_SUM, DTRAIN_RT_MEAN, DTRAIN_RT_MAX}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " +
                   reductionName(reduction));
      Buffer b = makeInput(dtype, 100003, rank());
      dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
          dtrain_rt_comm_world(), b.data(), b.count, dtype, reduction);
      ASSERT_NE(request, nullptr);
      dtrain_rt_wait(request);
      expectReduced(b, reduction);
    }
}

TEST_P(AllReduceAlgorithm, AsyncStartWithExplicitAlgorithm) {
  for (int32_t reduction : {DTRAIN_RT_SUM, DTRAIN_RT_MEAN, DTRAIN_RT_MAX}) {
    SCOPED_TRACE(reductionName(reduction));
    Buffer b = makeInput(DTRAIN_RT_BF16, 4099, rank());
    dtrain_rt_request_t *request = dtrain_rt_all_reduce_start_with(
        dtrain_rt_comm_world(), b.data(), b.count, DTRAIN_RT_BF16, reduction,
        GetParam());
    ASSERT_NE(request, nullptr);
    dtrain_rt_wait(request);
    expectReduced(b, reduction);
  }
}

TEST(Async, SeveralInFlightWaitedOutOfOrder) {
  const int r = rank();
  Buffer a = makeInput(DTRAIN_RT_F32, 5000, r);
  Buffer b = makeInput(DTRAIN_RT_BF16, 77, r);
  Buffer c = makeInput(DTRAIN_RT_F64, size() + 1, r);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  dtrain_rt_request_t *ra = dtrain_rt_all_reduce_start(
      world, a.data(), a.count, DTRAIN_RT_F32, DTRAIN_RT_MEAN);
  dtrain_rt_request_t *rb = dtrain_rt_all_reduce_start(
      world, b.data(), b.count, DTRAIN_RT_BF16, DTRAIN_RT_SUM);
  // A blocking all-reduce while others are in flight.
  Buffer d = makeInput(DTRAIN_RT_F16, 33, r);
  dtrain_rt_all_reduce(world, d.data(), d.count, DTRAIN_RT_F16, DTRAIN_RT_MAX);
  dtrain_rt_request_t *rc = dtrain_rt_all_reduce_start(
      world, c.data(), c.count, DTRAIN_RT_F64, DTRAIN_RT_MAX);
  dtrain_rt_wait(rc);
  dtrain_rt_wait(ra);
  dtrain_rt_wait(rb);
  expectReduced(a, DTRAIN_RT_MEAN);
  expectReduced(b, DTRAIN_RT_SUM);
  expectReduced(c, DTRAIN_RT_MAX);
  expectReduced(d, DTRAIN_RT_MAX);
}

// The communication thread progresses a started all-reduce while the
// caller makes no MPI call at all: dtrain_rt_test only reads a flag.
TEST(Async, CompletesWithoutTheCallerCallingMPI) {
  Buffer b = makeInput(DTRAIN_RT_F32, 1 << 20, rank());
  dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
      dtrain_rt_comm_world(), b.data(), b.count, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool done = false;
  while (!(done = dtrain_rt_test(request)) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done) << "the all-reduce did not complete within 60 s "
                       "without a wait";
  dtrain_rt_wait(request);
  expectReduced(b, DTRAIN_RT_SUM);
}

// Statistics: payload and the bandwidth-optimal bytes each rank sends.
TEST(Async, StatisticsCountPayloadAndSentBytes) {
  takeCommStats();
  Buffer b = makeInput(DTRAIN_RT_F64, 1000, rank());
  dtrain_rt_all_reduce(dtrain_rt_comm_world(), b.data(), b.count, DTRAIN_RT_F64,
                       DTRAIN_RT_SUM);
  const CommStats stats = takeCommStats();
  const int P = size();
  EXPECT_EQ(stats.collectives, 1);
  EXPECT_EQ(stats.payloadBytes, 8000);
  EXPECT_EQ(stats.sentBytes, 2 * (P - 1) * 8000 / P);
  EXPECT_GE(stats.busySeconds, 0.0);
  EXPECT_EQ(takeCommStats().collectives, 0);
}

//===--- Broadcast --------------------------------------------------------===//

TEST(Broadcast, CopiesTheRootsBytesInOrderWithStartedAllReduces) {
  const int r = rank(), P = size();
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  for (int root = 0; root < P; ++root) {
    Buffer a = makeInput(DTRAIN_RT_F32, 999, r);
    dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
        world, a.data(), a.count, DTRAIN_RT_F32, DTRAIN_RT_SUM);
    std::vector<uint8_t> bytes(1001);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = uint8_t(i * 7 + r);
    dtrain_rt_broadcast(world, bytes.data(), int64_t(bytes.size()), root);
    for (size_t i = 0; i < bytes.size(); ++i)
      ASSERT_EQ(bytes[i], uint8_t(i * 7 + root)) << "byte " << i;
    dtrain_rt_wait(request);
    expectReduced(a, DTRAIN_RT_SUM);
  }
  dtrain_rt_broadcast(world, nullptr, 0, 0);
}

//===--- The ring's slices ------------------------------------------------===//

TEST(RingSlices, EveryBoundaryAndShortTails) {
  // Around whole slices of P chunks of kRingChunkBytes: one element short,
  // exact, a tail of one and of P - 1 elements (chunks left empty), and
  // three slices; f32 and f16 (a different element count per slice).
  const int P = size();
  for (int32_t dtype : {DTRAIN_RT_F32, DTRAIN_RT_F16}) {
    const int64_t slice = P * (kRingChunkBytes / dtypeSize(dtype));
    for (int64_t count : {slice - 1, slice, slice + 1, 2 * slice + P - 1,
                          3 * slice}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " count " +
                   std::to_string(count));
      Buffer b = makeInput(dtype, count, rank());
      dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), b.data(), b.count,
                                dtype, DTRAIN_RT_SUM, DTRAIN_RT_ALLREDUCE_RING);
      expectReduced(b, DTRAIN_RT_SUM);
    }
  }
}

//===--- Messages split at the MPI count limit ----------------------------===//

class SplitMessages : public ::testing::Test {
protected:
  void SetUp() override { setMaxMessageCountForTesting(1000); }
  void TearDown() override { setMaxMessageCountForTesting(0); }
};

TEST_F(SplitMessages, BlockingBothAlgorithms) {
  for (int32_t algorithm : {DTRAIN_RT_ALLREDUCE_MPI, DTRAIN_RT_ALLREDUCE_RING})
    for (int32_t dtype : {DTRAIN_RT_F32, DTRAIN_RT_F16}) {
      SCOPED_TRACE(std::string(algorithmName(algorithm)) + " " +
                   dtypeName(dtype));
      Buffer b = makeInput(dtype, 1000003, rank());
      dtrain_rt_all_reduce_with(dtrain_rt_comm_world(), b.data(), b.count,
                                dtype, DTRAIN_RT_MEAN, algorithm);
      expectReduced(b, DTRAIN_RT_MEAN);
    }
}

TEST_F(SplitMessages, Broadcast) {
  std::vector<uint8_t> bytes(4321);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(rank() == 0 ? i * 13 : 0);
  dtrain_rt_broadcast(dtrain_rt_comm_world(), bytes.data(),
                      int64_t(bytes.size()), 0);
  for (size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], uint8_t(i * 13)) << "byte " << i;
}

TEST_F(SplitMessages, Async) {
  Buffer b = makeInput(DTRAIN_RT_BF16, 12345, rank());
  dtrain_rt_wait(dtrain_rt_all_reduce_start(dtrain_rt_comm_world(), b.data(),
                                            b.count, DTRAIN_RT_BF16,
                                            DTRAIN_RT_SUM));
  expectReduced(b, DTRAIN_RT_SUM);
}

} // namespace
