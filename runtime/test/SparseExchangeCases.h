//===- SparseExchangeCases.h - sparse exchanges to compare ------*- C++ -*-===//
//
// The sparse exchanges that the tests of the sparse-exchange kernels run
// through two tables and compare (SparseKernelsTest: a recording table
// against the CPU's; CudaSparseKernelsTest: the CUDA table against the
// CPU's): every aggregate, with and without segments, f32 and bf16 values,
// exact and Gaussian-k, on gradient-like data different on each rank.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_SPARSEEXCHANGECASES_H
#define DTRAIN_RUNTIME_TEST_SPARSEEXCHANGECASES_H

#include "GradientSamples.h"

#include "dtrain_rt.h"

#include <ostream>
#include <string>
#include <vector>

namespace dtrain::rt::test {

struct ExchangeCase {
  int32_t aggregate, method, valueType;
  bool segmented;
};

/// The exchanged buffer: COUNT elements, K of them selected, in segments
/// of SEGMENTS when the case is segmented.
constexpr int64_t kExchangeCount = 1000, kExchangeK = 25;
inline const std::vector<int64_t> &exchangeSegments() {
  static const std::vector<int64_t> sizes = {300, 500, 200};
  return sizes;
}

inline std::vector<ExchangeCase> exchangeCases() {
  std::vector<ExchangeCase> cases;
  for (int32_t aggregate : {DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SPARSE_GTOPK,
                            DTRAIN_RT_SPARSE_DENSE})
    for (int32_t method : {DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SELECT_GAUSSIAN})
      for (int32_t valueType : {DTRAIN_RT_F32, DTRAIN_RT_BF16})
        for (bool segmented : {false, true})
          cases.push_back({aggregate, method, valueType, segmented});
  return cases;
}

inline std::string exchangeCaseName(const ExchangeCase &c) {
  const char *aggregates[] = {"allgather", "gtopk", "dense"};
  return std::string(aggregates[c.aggregate]) + "_" +
         (c.method == DTRAIN_RT_SELECT_EXACT ? "exact" : "gaussian") + "_" +
         (c.valueType == DTRAIN_RT_F32 ? "f32" : "bf16") +
         (c.segmented ? "_segments" : "");
}

/// How GoogleTest prints a case (its name, not its bytes).
inline void PrintTo(const ExchangeCase &c, std::ostream *os) {
  *os << exchangeCaseName(c);
}

/// Rank R's gradient, then its residual (2 * kExchangeCount values).
inline std::vector<float> exchangeInput(int r) {
  std::vector<float> data =
      sample(Distribution::Gaussian, 2 * kExchangeCount, uint32_t(17 + r));
  // A residual smaller than the gradient, as error feedback leaves it.
  for (int64_t i = kExchangeCount; i < 2 * kExchangeCount; ++i)
    data[size_t(i)] *= 0.25f;
  return data;
}

/// Runs the exchange of C (MEAN) on DATA: the gradient, then the residual.
inline void runExchange(const ExchangeCase &c, float *data) {
  const std::vector<int64_t> &segments = exchangeSegments();
  dtrain_rt_wait(dtrain_rt_sparse_all_reduce_start(
      dtrain_rt_comm_world(), data, data + kExchangeCount, kExchangeCount,
      kExchangeK, c.segmented ? segments.data() : nullptr,
      c.segmented ? int64_t(segments.size()) : 0, c.method, c.aggregate,
      DTRAIN_RT_MEAN, c.valueType, 7));
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_SPARSEEXCHANGECASES_H
