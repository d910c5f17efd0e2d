//===- CudaKernelsTest.cpp - CUDA kernels against the CPU runtime ---------===//
//
// Each sparsification kernel of dtrain_rt_cuda.h (the heavy ops are
// CudaDnnTest.cpp's) against its CPU reference, compared bit for bit: the
// selections against dtrain_rt_select_f32 (exact and Gaussian-k on
// Gaussian, Laplace, Student-t, tied and inf/NaN data, n from 1 to 3M, k
// from 1 to n), the fused residual update against the CPU exchange's
// (SparseAllReduce.cpp), the scatter-add against adding in set order, the
// conversions and the inf/NaN check against Float16.h; then the errors of
// invalid calls.
//
// Without a CUDA device it runs nothing: it prints one line saying so and
// exits 77, which ctest reports as skipped.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "Float16.h"
#include "GradientSamples.h"
#include "dtrain_rt.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

/// The bits of floats, so that -0 differs from 0 and NaNs compare equal;
/// a NaN's sign and payload are not compared: the NaN that an operation
/// creates (inf - inf) has other bits on a GPU than on a CPU.
std::vector<uint32_t> bits(const std::vector<float> &values) {
  std::vector<uint32_t> result(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    result[i] = std::isnan(values[i]) ? 0x7fc00000u : floatBits(values[i]);
  return result;
}

struct Selection {
  std::vector<int32_t> indices;
  std::vector<float> values;
};

Selection cpuSelect(const std::vector<float> &x, int64_t k, int32_t method,
                    int64_t capacity) {
  Selection s{std::vector<int32_t>(static_cast<size_t>(capacity)),
              std::vector<float>(static_cast<size_t>(capacity))};
  const int64_t count =
      dtrain_rt_select_f32(x.data(), int64_t(x.size()), k, method, 0,
                           s.indices.data(), s.values.data(), capacity);
  s.indices.resize(size_t(count));
  s.values.resize(size_t(count));
  return s;
}

/// A CUDA workspace for selections over N elements.
DeviceBuffer<char> workspaceFor(int64_t n) {
  return DeviceBuffer<char>(dtrain_rt_cuda_select_workspace_size(n));
}

/// The selection of X on the GPU, in WORKSPACE where given (else its own).
Selection gpuSelect(const std::vector<float> &x, int64_t k, int32_t method,
                    int64_t capacity, DeviceBuffer<char> *workspace = nullptr) {
  const int64_t n = int64_t(x.size());
  DeviceBuffer<float> input(x), values(static_cast<size_t>(capacity));
  DeviceBuffer<int32_t> indices(static_cast<size_t>(capacity));
  DeviceBuffer<char> own = workspaceFor(workspace ? 0 : n);
  if (!workspace)
    workspace = &own;
  int64_t count = -1;
  const int rc = dtrain_rt_cuda_select_f32(
      input.get(), n, k, method, indices.get(), values.get(), capacity, &count,
      workspace->get(), dtrain_rt_cuda_select_workspace_size(n), nullptr);
  EXPECT_EQ(rc, DTRAIN_RT_CUDA_SUCCESS) << dtrain_rt_cuda_error_message();
  if (rc != DTRAIN_RT_CUDA_SUCCESS)
    return {};
  return {indices.read(size_t(count)), values.read(size_t(count))};
}

/// The target counts tried for N elements: 1 to N, and past N.
std::vector<int64_t> targets(int64_t n) {
  std::vector<int64_t> ks = {1, 2, n / 1000, n / 100, n / 2, n - 1, n, n + 5};
  ks.erase(std::remove_if(ks.begin(), ks.end(),
                          [](int64_t k) { return k < 1; }),
           ks.end());
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

const std::vector<size_t> kSizes = {1,    2,      3,       17,      1000,
                                    4095, 4096,   4097,    100003,  1 << 20,
                                    3000000};

// The GPU selects what the CPU selects: the same indices in the same order
// and the same value bits. Gaussian-k with room for 2k and with only
// min(k, n) (more pass than fit: the largest of them). Its sums are added
// in another order than the CPU's, so a threshold could round to another
// float, but with a chance of the order of 1e-6 per case.
TEST(CudaSelect, MatchesCpu) {
  uint32_t seed = 1;
  for (Distribution d :
       {Distribution::Gaussian, Distribution::Laplace, Distribution::StudentT3,
        Distribution::Ties, Distribution::NonFinite})
    for (size_t n : kSizes) {
      const std::vector<float> x = sample(d, n, seed++);
      for (int64_t k : targets(int64_t(n)))
        for (auto [method, tight] :
             {std::pair{DTRAIN_RT_SELECT_EXACT, true},
              std::pair{DTRAIN_RT_SELECT_GAUSSIAN, false},
              std::pair{DTRAIN_RT_SELECT_GAUSSIAN, true}}) {
          const int64_t selectable = std::min<int64_t>(k, int64_t(n));
          const int64_t capacity = tight ? selectable : 2 * selectable;
          const Selection cpu = cpuSelect(x, k, method, capacity);
          const Selection gpu = gpuSelect(x, k, method, capacity);
          ASSERT_EQ(gpu.indices, cpu.indices)
              << name(d) << " n=" << n << " k=" << k << " method=" << method
              << " capacity=" << capacity;
          ASSERT_EQ(bits(gpu.values), bits(cpu.values))
              << name(d) << " n=" << n << " k=" << k << " method=" << method;
        }
    }
}

TEST(CudaSelect, TakesInfinitiesAndNaNFirst) {
  const std::vector<float> x = {1, -INFINITY, 3, NAN, -2, 0};
  for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN})
    EXPECT_EQ(gpuSelect(x, 2, method, 2).indices,
              (std::vector<int32_t>{1, 3}));
}

// As on the CPU: a constant vector passes Gaussian-k's threshold
// everywhere; within capacity, the largest, ties to the lowest indices.
TEST(CudaSelect, GaussianKeepsTheLargestWithinCapacity) {
  std::vector<float> x(1000, 0.5f);
  x[10] = 2;
  x[700] = -3;
  EXPECT_EQ(gpuSelect(x, 4, DTRAIN_RT_SELECT_GAUSSIAN, 4).indices,
            (std::vector<int32_t>{0, 1, 10, 700}));
}

// Gaussian-k's count pass keeps up to 64 entries a tile (Select.cu's
// slots); a run of 100 large entries in one tile is more than it keeps
// there, and the compaction pass selects instead (and with 400, the exact
// selection). Either way, the CPU's selection.
TEST(CudaSelect, GaussianWithTheLargestInOneTile) {
  std::vector<float> x = sample(Distribution::Gaussian, 1 << 20, 7);
  for (int64_t run : {0, 8, 40, 100, 400}) {
    std::vector<float> clustered = x;
    for (int64_t i = 0; i < run; ++i)
      clustered[size_t(3 * 4096 + 100 + 2 * i)] =
          (i % 2 ? -1.0f : 1.0f) * (0.5f + 0.001f * float(i));
    for (int64_t k : {int64_t(1000), int64_t(1200), int64_t(700)}) {
      const Selection cpu =
          cpuSelect(clustered, k, DTRAIN_RT_SELECT_GAUSSIAN, 2 * k);
      const Selection gpu =
          gpuSelect(clustered, k, DTRAIN_RT_SELECT_GAUSSIAN, 2 * k);
      ASSERT_EQ(gpu.indices, cpu.indices) << "run=" << run << " k=" << k;
      ASSERT_EQ(bits(gpu.values), bits(cpu.values))
          << "run=" << run << " k=" << k;
    }
  }
}

// One workspace, its bytes all 0xff at first, serves selections of
// several sizes one after another: nothing a selection keeps there (the
// count pass's tally of finished blocks, the slots, the counts) depends
// on what an earlier one left.
TEST(CudaSelect, GaussianReusesAWorkspaceWhateverItHolds) {
  DeviceBuffer<char> workspace = workspaceFor(3000000);
  workspace.fill(0xff);
  uint32_t seed = 40;
  for (size_t n : {size_t(3000000), size_t(4097), size_t(1) << 20, size_t(17),
                   size_t(3000000)})
    for (Distribution d : {Distribution::Gaussian, Distribution::Laplace}) {
      const std::vector<float> x = sample(d, n, seed++);
      const int64_t k = std::max<int64_t>(int64_t(n) / 1000, 1);
      const Selection cpu = cpuSelect(x, k, DTRAIN_RT_SELECT_GAUSSIAN, 2 * k);
      const Selection gpu =
          gpuSelect(x, k, DTRAIN_RT_SELECT_GAUSSIAN, 2 * k, &workspace);
      ASSERT_EQ(gpu.indices, cpu.indices) << name(d) << " n=" << n;
      ASSERT_EQ(bits(gpu.values), bits(cpu.values)) << name(d) << " n=" << n;
    }
}

TEST(CudaSelect, NothingToSelect) {
  DeviceBuffer<float> x(std::vector<float>{1, 2, 3});
  DeviceBuffer<char> workspace = workspaceFor(3);
  for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN}) {
    int64_t count = -1;
    EXPECT_EQ(dtrain_rt_cuda_select_f32(x.get(), 3, 0, method, nullptr,
                                        nullptr, 0, &count, workspace.get(),
                                        dtrain_rt_cuda_select_workspace_size(3),
                                        nullptr),
              DTRAIN_RT_CUDA_SUCCESS);
    EXPECT_EQ(count, 0);
    count = -1;
    EXPECT_EQ(dtrain_rt_cuda_select_f32(nullptr, 0, 5, method, nullptr,
                                        nullptr, 0, &count, nullptr, 0,
                                        nullptr),
              DTRAIN_RT_CUDA_SUCCESS);
    EXPECT_EQ(count, 0);
  }
}

// u = grad + residual, selected, rounded, and the residual zeroed but for
// the rounding: what the CPU exchange computes (SparseAllReduce.cpp's
// selectLocal), on data with values past f16's range (saturated) and an
// infinity.
TEST(CudaResidualSelect, MatchesTheCpuExchange) {
  uint32_t seed = 100;
  for (size_t n : {size_t(1), size_t(1000), size_t(100003), size_t(1) << 20})
    for (int64_t k : {int64_t(0), int64_t(1), int64_t(n / 1000), int64_t(n)})
      for (int32_t method :
           {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN})
        for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
          std::vector<float> grad = sample(Distribution::Laplace, n, seed++);
          std::vector<float> residual =
              sample(Distribution::StudentT3, n, seed++);
          grad[n / 3] = 1e5f; // past f16's 65504
          if (n > 1000)
            residual[n / 2] = INFINITY;
          const int64_t capacity = std::max<int64_t>(2 * k, 1);
          // The CPU exchange, step by step.
          std::vector<float> u(n), expectedResidual(n);
          for (size_t i = 0; i < n; ++i)
            u[i] = residual[i] + grad[i];
          Selection expected = cpuSelect(u, k, method, capacity);
          expectedResidual = u;
          for (size_t j = 0; j < expected.indices.size(); ++j) {
            const float value = expected.values[j];
            expected.values[j] = roundToValueType(value, valueType);
            // What rounding dropped; nothing where the value went whole
            // (the infinity too, for which value - sent is NaN).
            expectedResidual[size_t(expected.indices[j])] =
                value == expected.values[j] ? 0.0f : value - expected.values[j];
          }

          DeviceBuffer<float> gradOnGpu(grad), residualOnGpu(residual),
              values(static_cast<size_t>(capacity));
          DeviceBuffer<int32_t> indices(static_cast<size_t>(capacity));
          DeviceBuffer<char> workspace = workspaceFor(int64_t(n));
          int64_t count = -1;
          ASSERT_EQ(dtrain_rt_cuda_residual_select_f32(
                        gradOnGpu.get(), residualOnGpu.get(), int64_t(n), k,
                        method, valueType, indices.get(), values.get(),
                        capacity, &count, workspace.get(),
                        dtrain_rt_cuda_select_workspace_size(int64_t(n)),
                        nullptr),
                    DTRAIN_RT_CUDA_SUCCESS)
              << dtrain_rt_cuda_error_message();
          const std::string what = "n=" + std::to_string(n) +
                                   " k=" + std::to_string(k) +
                                   " method=" + std::to_string(method) +
                                   " value type=" + std::to_string(valueType);
          ASSERT_EQ(count, int64_t(expected.indices.size())) << what;
          EXPECT_EQ(indices.read(size_t(count)), expected.indices) << what;
          EXPECT_EQ(bits(values.read(size_t(count))), bits(expected.values))
              << what;
          EXPECT_EQ(bits(residualOnGpu.read()), bits(expectedResidual)) << what;
          EXPECT_EQ(bits(gradOnGpu.read()), bits(grad)) << what << " (grad)";
        }
}

// Sets added in order give the CPU's sums bit for bit; an empty set, a
// set that repeats an index (integers: exact in any order) and indices
// out of range (skipped) are handled.
TEST(CudaScatterAdd, AddsSetsInOrder) {
  const int64_t n = 200003;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<int32_t> indices;
  std::vector<float> values;
  std::vector<int64_t> offsets = {0};
  for (int64_t setSize : {5000, 0, 20000, 1, 7000}) {
    std::vector<int32_t> set;
    std::uniform_int_distribution<int32_t> index(0, int32_t(n / 10));
    while (int64_t(set.size()) < setSize)
      set.push_back(index(rng)); // a small range: many common indices
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    for (int32_t i : set) {
      indices.push_back(i);
      values.push_back(normal(rng));
    }
    offsets.push_back(int64_t(indices.size()));
  }
  std::vector<float> dense(static_cast<size_t>(n));
  for (float &v : dense)
    v = normal(rng);
  std::vector<float> expected = dense;
  for (size_t j = 0; j < indices.size(); ++j)
    expected[size_t(indices[j])] += values[j];

  DeviceBuffer<float> denseOnGpu(dense), valuesOnGpu(values);
  DeviceBuffer<int32_t> indicesOnGpu(indices);
  ASSERT_EQ(dtrain_rt_cuda_scatter_add_f32(
                denseOnGpu.get(), n, indicesOnGpu.get(), valuesOnGpu.get(),
                offsets.data(), int32_t(offsets.size() - 1), nullptr),
            DTRAIN_RT_CUDA_SUCCESS)
      << dtrain_rt_cuda_error_message();
  EXPECT_EQ(bits(denseOnGpu.read()), bits(expected));

  // One set: index 3 three times, index 0 once, and two out of range.
  const std::vector<int32_t> repeated = {3, 0, 3, -1, 3, 5};
  const std::vector<float> ones = {1, 2, 4, 100, 8, 100};
  const int64_t one[] = {0, 6};
  DeviceBuffer<float> small(std::vector<float>(5, 0.0f)), onesOnGpu(ones);
  DeviceBuffer<int32_t> repeatedOnGpu(repeated);
  ASSERT_EQ(dtrain_rt_cuda_scatter_add_f32(small.get(), 5,
                                           repeatedOnGpu.get(),
                                           onesOnGpu.get(), one, 1, nullptr),
            DTRAIN_RT_CUDA_SUCCESS);
  EXPECT_EQ(small.read(), (std::vector<float>{2, 0, 0, 13, 0}));
}

/// Float patterns that exercise rounding to 16 bits: every sign, exponent
/// and high mantissa with low bits at and around the halfway points of
/// bf16 (16 dropped bits) and f16 (13 dropped bits), and random patterns.
std::vector<float> roundingPatterns() {
  std::vector<uint32_t> patterns;
  for (uint32_t high = 0; high < (1u << 16); ++high)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      patterns.push_back(high << 16 | low);
  for (uint32_t high = 0; high < (1u << 19); ++high)
    for (uint32_t low : {0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu})
      patterns.push_back(high << 13 | low);
  std::mt19937 rng(9);
  for (int j = 0; j < (1 << 22); ++j)
    patterns.push_back(uint32_t(rng()));
  std::vector<float> values(patterns.size());
  std::memcpy(values.data(), patterns.data(), patterns.size() * 4);
  return values;
}

TEST(CudaConvert, MatchesFloat16Bits) {
  // f32 -> 16 bits.
  const std::vector<float> x = roundingPatterns();
  DeviceBuffer<float> xOnGpu(x);
  DeviceBuffer<uint16_t> half(x.size());
  for (int32_t type : {DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
    ASSERT_EQ(dtrain_rt_cuda_convert(xOnGpu.get(), DTRAIN_RT_F32, half.get(),
                                     type, int64_t(x.size()), nullptr),
              DTRAIN_RT_CUDA_SUCCESS)
        << dtrain_rt_cuda_error_message();
    const std::vector<uint16_t> got = half.read();
    size_t mismatches = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t expected =
          type == DTRAIN_RT_BF16 ? f32ToBF16(x[i]) : f32ToF16(x[i]);
      if (got[i] != expected && mismatches++ < 5)
        ADD_FAILURE() << "type " << type << ": 0x" << std::hex
                      << floatBits(x[i]) << " gives 0x" << got[i]
                      << ", expected 0x" << expected;
    }
    EXPECT_EQ(mismatches, 0u) << "type " << type;
  }
  // 16 bits -> f32, every pattern; and a 16-bit copy keeps every bit.
  std::vector<uint16_t> all(1 << 16);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = uint16_t(i);
  DeviceBuffer<uint16_t> allOnGpu(all), copy(all.size());
  DeviceBuffer<float> wide(all.size());
  for (int32_t type : {DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
    ASSERT_EQ(dtrain_rt_cuda_convert(allOnGpu.get(), type, wide.get(),
                                     DTRAIN_RT_F32, int64_t(all.size()),
                                     nullptr),
              DTRAIN_RT_CUDA_SUCCESS);
    std::vector<float> expected(all.size());
    for (size_t i = 0; i < all.size(); ++i)
      expected[i] = type == DTRAIN_RT_BF16 ? bf16ToF32(all[i]) : f16ToF32(all[i]);
    EXPECT_EQ(bits(wide.read()), bits(expected)) << "type " << type;
    ASSERT_EQ(dtrain_rt_cuda_convert(allOnGpu.get(), type, copy.get(), type,
                                     int64_t(all.size()), nullptr),
              DTRAIN_RT_CUDA_SUCCESS);
    EXPECT_EQ(copy.read(), all) << "type " << type;
  }
}

TEST(CudaCheckFinite, FlagsInfinitiesAndNaNs) {
  const size_t n = 1000003;
  const std::vector<float> finite = sample(Distribution::StudentT3, n, 3);
  for (int32_t type : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16})
    for (float special : {INFINITY, -INFINITY, NAN})
      for (size_t at : {size_t(0), n / 2, n - 1}) {
        std::vector<float> x = finite;
        x[at] = special;
        DeviceBuffer<float> clean(finite), dirty(x);
        DeviceBuffer<uint16_t> clean16(n), dirty16(n);
        const void *cleanIn = clean.get(), *dirtyIn = dirty.get();
        if (type != DTRAIN_RT_F32) {
          ASSERT_EQ(dtrain_rt_cuda_convert(clean.get(), DTRAIN_RT_F32,
                                           clean16.get(), type, int64_t(n),
                                           nullptr),
                    DTRAIN_RT_CUDA_SUCCESS);
          ASSERT_EQ(dtrain_rt_cuda_convert(dirty.get(), DTRAIN_RT_F32,
                                           dirty16.get(), type, int64_t(n),
                                           nullptr),
                    DTRAIN_RT_CUDA_SUCCESS);
          cleanIn = clean16.get();
          dirtyIn = dirty16.get();
        }
        DeviceBuffer<int32_t> flag(std::vector<int32_t>{0});
        ASSERT_EQ(dtrain_rt_cuda_check_finite(cleanIn, type, int64_t(n),
                                              flag.get(), nullptr),
                  DTRAIN_RT_CUDA_SUCCESS);
        EXPECT_EQ(flag.read()[0], 0) << "type " << type << " clean";
        ASSERT_EQ(dtrain_rt_cuda_check_finite(dirtyIn, type, int64_t(n),
                                              flag.get(), nullptr),
                  DTRAIN_RT_CUDA_SUCCESS);
        EXPECT_EQ(flag.read()[0], 1)
            << "type " << type << " " << special << " at " << at;
        // A clean buffer after a dirty one leaves the flag set.
        ASSERT_EQ(dtrain_rt_cuda_check_finite(cleanIn, type, int64_t(n),
                                              flag.get(), nullptr),
                  DTRAIN_RT_CUDA_SUCCESS);
        EXPECT_EQ(flag.read()[0], 1) << "type " << type;
      }
}

/// Expects the call's return code RC to be CODE and the message to start
/// with FUNCTION and contain TEXT.
void expectError(int rc, int code, const char *function, const char *text) {
  EXPECT_EQ(rc, code) << function;
  const std::string message = dtrain_rt_cuda_error_message();
  EXPECT_EQ(message.rfind(std::string(function) + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(text), std::string::npos) << message;
}

TEST(CudaErrors, InvalidCallsReturnCodesAndMessages) {
  const int64_t n = 100;
  DeviceBuffer<float> x(std::vector<float>(n, 1.0f)), values(n);
  DeviceBuffer<int32_t> indices(n);
  DeviceBuffer<char> workspace = workspaceFor(n);
  const size_t bytes = dtrain_rt_cuda_select_workspace_size(n);
  int64_t count;
  const char *select = "dtrain_rt_cuda_select_f32";
  expectError(dtrain_rt_cuda_select_f32(x.get(), n, 5, 7, indices.get(),
                                        values.get(), n, &count,
                                        workspace.get(), bytes, nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, select, "method 7 is not valid");
  expectError(dtrain_rt_cuda_select_f32(x.get(), n, 5, DTRAIN_RT_SELECT_DGC,
                                        indices.get(), values.get(), n, &count,
                                        workspace.get(), bytes, nullptr),
              DTRAIN_RT_CUDA_UNSUPPORTED, select, "dgc is not implemented");
  expectError(dtrain_rt_cuda_select_f32(x.get(), n, 12,
                                        DTRAIN_RT_SELECT_EXACT, indices.get(),
                                        values.get(), 10, &count,
                                        workspace.get(), bytes, nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, select,
              "capacity 10 is below the 12 entries");
  expectError(dtrain_rt_cuda_select_f32(x.get(), n, 5, DTRAIN_RT_SELECT_EXACT,
                                        indices.get(), values.get(), n, &count,
                                        workspace.get(), bytes - 1, nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, select, "workspace of");
  expectError(dtrain_rt_cuda_residual_select_f32(
                  x.get(), values.get(), n, 5, DTRAIN_RT_SELECT_EXACT,
                  DTRAIN_RT_F64, indices.get(), values.get(), n, &count,
                  workspace.get(), bytes, nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT,
              "dtrain_rt_cuda_residual_select_f32", "value type 1");
  const int64_t decreasing[] = {0, 5, 3};
  expectError(dtrain_rt_cuda_scatter_add_f32(x.get(), n, indices.get(),
                                             values.get(), decreasing, 2,
                                             nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, "dtrain_rt_cuda_scatter_add_f32",
              "offsets decrease from 5 to 3 at set 1");
  expectError(dtrain_rt_cuda_convert(x.get(), DTRAIN_RT_F16, values.get(),
                                     DTRAIN_RT_BF16, n, nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, "dtrain_rt_cuda_convert",
              "cannot convert type 2 to type 3");
  expectError(dtrain_rt_cuda_check_finite(x.get(), DTRAIN_RT_F32, n, nullptr,
                                          nullptr),
              DTRAIN_RT_CUDA_INVALID_ARGUMENT, "dtrain_rt_cuda_check_finite",
              "flag is NULL");
  // A successful call clears the message.
  EXPECT_EQ(dtrain_rt_cuda_select_f32(x.get(), n, 5, DTRAIN_RT_SELECT_EXACT,
                                      indices.get(), values.get(), n, &count,
                                      workspace.get(), bytes, nullptr),
            DTRAIN_RT_CUDA_SUCCESS);
  EXPECT_STREQ(dtrain_rt_cuda_error_message(), "");
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return runCudaTests(false);
}
