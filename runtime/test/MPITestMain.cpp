//===- MPITestMain.cpp - main of the runtime's tests under mpirun ---------===//
//
// GoogleTest under MPI: every rank runs every test; ranks other than 0
// print only their failures, and all ranks exit with the same status.
//
//===----------------------------------------------------------------------===//

#include "dtrain_rt.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

/// On ranks other than 0, print only failures (prefixed with the rank)
/// instead of GoogleTest's full report.
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::printf("[rank %d] %s:%d: failure\n%s\n", rank,
                  result.file_name() ? result.file_name() : "?",
                  result.line_number(), result.message());
  }
  void OnTestEnd(const ::testing::TestInfo &info) override {
    if (info.result()->Failed())
      std::printf("[rank %d] FAILED %s.%s\n", rank, info.test_suite_name(),
                  info.name());
    std::fflush(stdout);
  }

private:
  int rank;
};

} // namespace

int main(int argc, char **argv) {
  dtrain_rt_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int r = dtrain_rt_comm_rank(dtrain_rt_comm_world());
  if (r != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(r));
  }
  int failed = RUN_ALL_TESTS() != 0;
  // Every rank exits with the same status: failed anywhere, failed here.
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (r == 0 && failed)
    std::printf("%s: tests failed on at least one of %d ranks\n", argv[0],
                dtrain_rt_comm_size(dtrain_rt_comm_world()));
  dtrain_rt_finalize();
  return failed;
}
