//===- CudaMPITestMain.h - the main of GPU tests under mpirun ---*- C++ -*-===//
//
// What the GPU tests that run under mpirun share: without a CUDA device,
// one line and exit 77 (ctest's skip); else the runtime initialized, the
// node's rank and device counts for the test to decide on, the tests run,
// and every rank exiting with the same status.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_CUDAMPITESTMAIN_H
#define DTRAIN_RUNTIME_TEST_CUDAMPITESTMAIN_H

#include "dtrain_rt.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

/// Runs the tests unless there is no device, or BEFORE(nodeRanks,
/// devices), called on every rank with the same counts, returns an exit
/// status (77: skipped) rather than -1.
template <class Before>
int runCudaMPITests(int argc, char **argv, Before before) {
  ::testing::InitGoogleTest(&argc, argv);
  const int checks = ::testing::UnitTest::GetInstance()->total_test_count();
  if (dtrain_rt_cuda_driver_status() != DTRAIN_RT_CUDA_SUCCESS) {
    std::printf("no CUDA device (%s): skipped (%d checks need a GPU)\n",
                dtrain_rt_cuda_error_message(), checks);
    return 77;
  }
  dtrain_rt_init(&argc, &argv);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  int nodeRanks = 0, devices = 0;
  MPI_Comm_size(node, &nodeRanks);
  MPI_Comm_free(&node);
  cudaGetDeviceCount(&devices);
  int status = before(nodeRanks, devices);
  if (status < 0) {
    status = RUN_ALL_TESTS() != 0;
    // Every rank exits with the same status: failed anywhere, failed here.
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  dtrain_rt_finalize();
  return status;
}

#endif // DTRAIN_RUNTIME_TEST_CUDAMPITESTMAIN_H
