//===- SparseKernelsTest.cpp - sparse exchanges through installed kernels
//--===//
//
// Under mpirun with any number of ranks. A recording table of
// sparse-exchange kernels forwards every call to the CPU's
// (dtrain_rt_cpu_sparse_kernels) and writes it down; each exchange runs
// once with the CPU's table and once through the recording one, and the
// gradient and residual must be the same bits, and the calls written down
// exactly those of its aggregate. Work on the gradient or the residual
// that bypassed the table would miss from the record (and would not run on
// the GPU of a --target=cuda trainer).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "SelectMethods.h"
#include "SparseExchangeCases.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

int rank() { return dtrain_rt_comm_rank(dtrain_rt_comm_world()); }
int size() { return dtrain_rt_comm_size(dtrain_rt_comm_world()); }

//===--- The recording table ----------------------------------------------===//

struct Record {
  std::vector<std::string> calls;
  /// What residual_select returned and how many entries scatter_add got,
  /// call by call.
  std::vector<int64_t> selected, scattered;
  /// The exchange's buffers, which the calls name.
  const float *grad = nullptr, *residual = nullptr;

  std::string name(const float *buffer) const {
    return buffer == grad       ? "grad"
           : buffer == residual ? "residual"
                                : "another buffer";
  }
};

Record &recordOf(void *context) { return *static_cast<Record *>(context); }

const dtrain_rt_sparse_kernels_t &cpu() {
  return *dtrain_rt_cpu_sparse_kernels();
}

int64_t recordResidualSelect(void *context, const float *grad, float *residual,
                             int64_t count,
                             const dtrain_rt_sparse_segment_t *segments,
                             int64_t numSegments, int32_t method,
                             int32_t valueType, int32_t *indices,
                             float *values) {
  Record &record = recordOf(context);
  std::string call = "residual_select " + record.name(grad) + " " +
                     record.name(residual) + " " + std::to_string(count) + " " +
                     selectMethodName(method) + " " + dtypeName(valueType);
  for (int64_t s = 0; s < numSegments; ++s) {
    const dtrain_rt_sparse_segment_t &segment = segments[s];
    call += " (" + std::to_string(segment.offset) + " " +
            std::to_string(segment.size) + " " + std::to_string(segment.k) +
            " " + std::to_string(segment.capacity) + ")";
    // One seed for the exchange, offset by each segment's first element.
    EXPECT_EQ(segment.seed - uint64_t(segment.offset),
              segments[0].seed - uint64_t(segments[0].offset));
  }
  record.calls.push_back(call);
  const int64_t n =
      cpu().residual_select(cpu().context, grad, residual, count, segments,
                            numSegments, method, valueType, indices, values);
  record.selected.push_back(n);
  return n;
}

void recordScatterAdd(void *context, float *dense, int64_t count, int32_t zero,
                      const int32_t *indices, const float *values,
                      const int64_t *offsets, int32_t sets) {
  Record &record = recordOf(context);
  record.calls.push_back("scatter_add " + record.name(dense) + " " +
                         std::to_string(count) + (zero ? " zeroed, " : ", ") +
                         std::to_string(sets) + " sets");
  record.scattered.push_back(offsets[sets]);
  cpu().scatter_add(cpu().context, dense, count, zero, indices, values, offsets,
                    sets);
}

void recordDenseResidual(void *context, float *grad, float *residual,
                         int64_t count, int32_t valueType) {
  Record &record = recordOf(context);
  record.calls.push_back("dense_residual " + record.name(grad) + " " +
                         record.name(residual) + " " + std::to_string(count) +
                         " " + dtypeName(valueType));
  cpu().dense_residual(cpu().context, grad, residual, count, valueType);
}

class Recorded : public ::testing::Test {
protected:
  void TearDown() override { dtrain_rt_set_sparse_kernels(nullptr); }

  /// Installs the recording table for exchanges on DATA.
  void install(const float *data) {
    record = Record();
    record.grad = data;
    record.residual = data + kExchangeCount;
    const dtrain_rt_sparse_kernels_t recording = {
        &record, recordResidualSelect, recordScatterAdd, recordDenseResidual};
    dtrain_rt_set_sparse_kernels(&recording);
  }

  Record record;
};

/// Sum of N over the ranks.
int64_t sumOverRanks(int64_t n) {
  int64_t sum = 0;
  MPI_Allreduce(&n, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

//===--- The exchanges ----------------------------------------------------===//

class RecordedExchange : public Recorded,
                         public ::testing::WithParamInterface<ExchangeCase> {};

TEST_P(RecordedExchange, SameBitsAndCallsAsTheCPU) {
  const ExchangeCase c = GetParam();
  std::vector<float> alone = exchangeInput(rank()), data = alone;
  runExchange(c, alone.data());
  install(data.data());
  runExchange(c, data.data());
  EXPECT_EQ(std::memcmp(alone.data(), data.data(), data.size() * 4), 0)
      << "the gradient or the residual differs from the CPU table's";

  const std::string vt = dtypeName(c.valueType);
  if (c.aggregate == DTRAIN_RT_SPARSE_DENSE) {
    EXPECT_EQ(record.calls, std::vector<std::string>{
                                "dense_residual grad residual 1000 " + vt});
    return;
  }
  // The segments' shares of k = 25 (min(n, max(1, floor(25 n / 1000))))
  // and capacities (twice them).
  const std::string select =
      std::string("residual_select grad residual 1000 ") +
      selectMethodName(c.method) + " " + vt +
      (c.segmented ? " (0 300 7 14) (300 500 12 24) (800 200 5 10)"
                   : " (0 1000 25 50)");
  const int64_t k = c.segmented ? 24 : 25;
  ASSERT_EQ(record.selected.size(), 1u);
  const int64_t selected = record.selected[0];
  if (c.method == DTRAIN_RT_SELECT_EXACT) {
    EXPECT_EQ(selected, k);
  }
  if (c.aggregate == DTRAIN_RT_SPARSE_ALLGATHER) {
    EXPECT_EQ(record.calls, (std::vector<std::string>{
                                select, "scatter_add grad 1000 zeroed, " +
                                            std::to_string(size()) + " sets"}));
    ASSERT_EQ(record.scattered.size(), 1u);
    EXPECT_EQ(record.scattered[0], sumOverRanks(selected));
    return;
  }
  // gTop-k: the entries outside the global set back to the residual, then
  // the global set's sums into the gradient.
  EXPECT_EQ(record.calls, (std::vector<std::string>{
                              select, "scatter_add residual 1000, 1 sets",
                              "scatter_add grad 1000 zeroed, 1 sets"}));
  ASSERT_EQ(record.scattered.size(), 2u);
  EXPECT_LE(record.scattered[0], selected);
  EXPECT_LE(record.scattered[1], k);
  if (size() == 1 && c.method == DTRAIN_RT_SELECT_EXACT) {
    EXPECT_EQ(record.scattered[0], 0); // the global set is the local one
    EXPECT_EQ(record.scattered[1], k);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Exchanges, RecordedExchange, ::testing::ValuesIn(exchangeCases()),
    [](const ::testing::TestParamInfo<ExchangeCase> &info) {
      return exchangeCaseName(info.param);
    });

//===--- Installing -------------------------------------------------------===//

TEST_F(Recorded, NullRestoresTheCPU) {
  const ExchangeCase c = {DTRAIN_RT_SPARSE_GTOPK, DTRAIN_RT_SELECT_EXACT,
                          DTRAIN_RT_F32, true};
  std::vector<float> data = exchangeInput(rank()), alone = data;
  install(data.data());
  runExchange(c, data.data());
  EXPECT_EQ(record.calls.size(), 3u);
  record.calls.clear();
  dtrain_rt_set_sparse_kernels(nullptr);
  data = alone;
  runExchange(c, data.data());
  EXPECT_TRUE(record.calls.empty());
  dtrain_rt_set_sparse_kernels(nullptr);
  runExchange(c, alone.data()); // twice NULL is still the CPU's
  EXPECT_EQ(std::memcmp(alone.data(), data.data(), data.size() * 4), 0);
}

TEST(CPUSparseKernels, AreTheDefault) {
  const dtrain_rt_sparse_kernels_t *t = dtrain_rt_cpu_sparse_kernels();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, dtrain_rt_cpu_sparse_kernels());
  // They work when called directly, as a table that forwards to them
  // calls them: u = grad + residual = {1, -4, 2.5, 3}, the 2 largest.
  float grad[4] = {1, -4, 2, 3}, residual[4] = {0, 0, 0.5f, 0};
  const dtrain_rt_sparse_segment_t segment = {0, 4, 2, 4, 0};
  int32_t indices[4];
  float values[4];
  ASSERT_EQ(t->residual_select(t->context, grad, residual, 4, &segment, 1,
                               DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_F32, indices,
                               values),
            2);
  EXPECT_EQ(indices[0], 1);
  EXPECT_EQ(indices[1], 3);
  EXPECT_EQ(values[0], -4.0f);
  EXPECT_EQ(values[1], 3.0f);
  EXPECT_EQ(residual[2], 2.5f);
  EXPECT_EQ(residual[1], 0.0f);
  const int64_t offsets[] = {0, 2, 4};
  const int32_t twice[] = {1, 3, 1, 0};
  const float added[] = {1, 2, 3, 4};
  t->scatter_add(t->context, grad, 4, 1, twice, added, offsets, 2);
  EXPECT_EQ(grad[0], 4.0f);
  EXPECT_EQ(grad[1], 4.0f);
  EXPECT_EQ(grad[2], 0.0f);
  EXPECT_EQ(grad[3], 2.0f);
}

} // namespace
