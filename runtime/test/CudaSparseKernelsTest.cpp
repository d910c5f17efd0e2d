//===- CudaSparseKernelsTest.cpp - the CUDA sparse-exchange kernels ------===//
//
// dtrain_rt_cuda_sparse_kernels against the CPU's table
// (dtrain_rt_cpu_sparse_kernels) on managed memory, as a --target=cuda
// trainer runs them: each function called directly (segments, value types,
// infinities, the CPU fall-back of DGC), and whole exchanges
// (SparseExchangeCases.h) run once with each table, whose gradients and
// residuals must be the same bits. Under mpirun on 1 rank, or on as many
// ranks as the node has devices. Without a CUDA device (or a device for
// each rank) it prints one line and exits 77, which ctest reports as
// skipped.
//
//===----------------------------------------------------------------------===//

#include "CudaMPITestMain.h"
#include "SparseExchangeCases.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

using namespace dtrain::rt::test;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }

const dtrain_rt_sparse_kernels_t &cpu() {
  return *dtrain_rt_cpu_sparse_kernels();
}
const dtrain_rt_sparse_kernels_t &gpu() {
  return *dtrain_rt_cuda_sparse_kernels();
}

/// VALUES in managed memory, as a --target=cuda trainer's buffers are.
struct Managed {
  explicit Managed(const std::vector<float> &values)
      : data(static_cast<float *>(
            dtrain_rt_cuda_alloc_managed(values.size() * sizeof(float)))),
        count(values.size()) {
    std::copy(values.begin(), values.end(), data);
  }
  Managed(const Managed &) = delete;
  Managed &operator=(const Managed &) = delete;
  ~Managed() { dtrain_rt_cuda_free(data); }
  bool sameBits(const Managed &other) const {
    return count == other.count &&
           std::memcmp(data, other.data, count * sizeof(float)) == 0;
  }

  float *data;
  size_t count;
};

//===--- Each function ----------------------------------------------------===//

/// The segments of a buffer of 1000 elements cut as the exchange cuts
/// {300, 500, 200} for k = 25.
const std::vector<dtrain_rt_sparse_segment_t> &segments() {
  static const std::vector<dtrain_rt_sparse_segment_t> s = {
      {0, 300, 7, 14, 11}, {300, 500, 12, 24, 311}, {800, 200, 5, 10, 811}};
  return s;
}

struct Selection {
  std::vector<int32_t> indices;
  std::vector<float> values;
};

/// TABLE's residual_select on managed copies of GRAD and RESIDUAL (the
/// latter left in RESIDUALOUT).
Selection residualSelect(const dtrain_rt_sparse_kernels_t &table,
                         const std::vector<float> &grad,
                         const std::vector<float> &residual, int32_t method,
                         int32_t valueType, std::vector<float> &residualOut) {
  Managed g(grad), r(residual);
  Selection s;
  s.indices.resize(48);
  s.values.resize(48);
  const int64_t n = table.residual_select(
      table.context, g.data, r.data, int64_t(grad.size()), segments().data(),
      int64_t(segments().size()), method, valueType, s.indices.data(),
      s.values.data());
  s.indices.resize(size_t(n));
  s.values.resize(size_t(n));
  residualOut.assign(r.data, r.data + r.count);
  EXPECT_EQ(std::memcmp(g.data, grad.data(), grad.size() * 4), 0)
      << "the gradient was written";
  return s;
}

TEST(CudaSparseKernels, ResidualSelectAsTheCPU) {
  std::vector<float> grad = sample(Distribution::Gaussian, 1000, 3),
                     residual = sample(Distribution::Laplace, 1000, 4);
  grad[500] = std::numeric_limits<float>::infinity(); // exact in its segment
  // DGC has no CUDA kernel: the CPU's, with the same seeds.
  for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN,
                         DTRAIN_RT_SELECT_DGC})
    for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
      SCOPED_TRACE(std::to_string(method) + " " + std::to_string(valueType));
      std::vector<float> onCPU, onGPU;
      const Selection a =
          residualSelect(cpu(), grad, residual, method, valueType, onCPU);
      const Selection b =
          residualSelect(gpu(), grad, residual, method, valueType, onGPU);
      EXPECT_EQ(a.indices, b.indices);
      EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(),
                            std::min(a.values.size(), b.values.size()) * 4),
                0);
      EXPECT_EQ(std::memcmp(onCPU.data(), onGPU.data(), onCPU.size() * 4), 0)
          << "the residuals differ";
    }
}

TEST(CudaSparseKernels, ScatterAddAsTheCPU) {
  const std::vector<float> dense = sample(Distribution::Gaussian, 1000, 5);
  // Three sets with common indices, and an empty one.
  std::vector<int32_t> indices;
  std::vector<float> values = sample(Distribution::Uniform, 300, 6);
  for (int s = 0; s < 3; ++s)
    for (int32_t j = 0; j < 100; ++j)
      indices.push_back(j * (7 + s) % 1000);
  const int64_t offsets[] = {0, 100, 200, 200, 300};
  for (int32_t zero : {0, 1}) {
    Managed onCPU(dense), onGPU(dense);
    cpu().scatter_add(cpu().context, onCPU.data, 1000, zero, indices.data(),
                      values.data(), offsets, 4);
    gpu().scatter_add(gpu().context, onGPU.data, 1000, zero, indices.data(),
                      values.data(), offsets, 4);
    EXPECT_TRUE(onCPU.sameBits(onGPU)) << "zero " << zero;
  }
  // Nothing to add and no zeroing leaves the buffer alone.
  Managed untouched(dense);
  const int64_t none[] = {0, 0};
  gpu().scatter_add(gpu().context, untouched.data, 1000, 0, nullptr, nullptr,
                    none, 1);
  EXPECT_EQ(std::memcmp(untouched.data, dense.data(), 4000), 0);
}

TEST(CudaSparseKernels, DenseResidualAsTheCPU) {
  std::vector<float> grad = sample(Distribution::Gaussian, 1000, 7),
                     residual = sample(Distribution::Gaussian, 1000, 8);
  grad[3] = std::numeric_limits<float>::infinity(); // f32: residual 0
  grad[4] = 1e6f;                                   // f16: saturates
  for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
    Managed cpuGrad(grad), cpuResidual(residual), gpuGrad(grad),
        gpuResidual(residual);
    cpu().dense_residual(cpu().context, cpuGrad.data, cpuResidual.data, 1000,
                         valueType);
    gpu().dense_residual(gpu().context, gpuGrad.data, gpuResidual.data, 1000,
                         valueType);
    EXPECT_TRUE(cpuGrad.sameBits(gpuGrad)) << valueType;
    EXPECT_TRUE(cpuResidual.sameBits(gpuResidual)) << valueType;
  }
}

//===--- Whole exchanges --------------------------------------------------===//

class CudaExchange : public ::testing::TestWithParam<ExchangeCase> {
protected:
  void TearDown() override { dtrain_rt_set_sparse_kernels(nullptr); }
};

// Gaussian-k's threshold is the CPU's unless its double sums, added in
// another order, round it differently; on this data they do not, so every
// case must give the same bits.
TEST_P(CudaExchange, SameBitsAsTheCPU) {
  const std::vector<float> input = exchangeInput(rank());
  Managed onCPU(input), onGPU(input);
  dtrain_rt_set_sparse_kernels(nullptr);
  runExchange(GetParam(), onCPU.data);
  dtrain_rt_set_sparse_kernels(dtrain_rt_cuda_sparse_kernels());
  runExchange(GetParam(), onGPU.data);
  EXPECT_TRUE(onCPU.sameBits(onGPU))
      << "the gradient or the residual differs from the CPU's";
}

INSTANTIATE_TEST_SUITE_P(
    Exchanges, CudaExchange, ::testing::ValuesIn(exchangeCases()),
    [](const ::testing::TestParamInfo<ExchangeCase> &info) {
      return exchangeCaseName(info.param);
    });

} // namespace

int main(int argc, char **argv) {
  return runCudaMPITests(argc, argv, [](int nodeRanks, int devices) {
    if (nodeRanks <= devices)
      return -1;
    // Every rank decides alike: the same counts on the node.
    if (rank() == 0)
      std::printf("%d ranks on a node of %d CUDA devices: skipped (a device "
                  "for each rank needed)\n",
                  nodeRanks, devices);
    return 77;
  });
}
