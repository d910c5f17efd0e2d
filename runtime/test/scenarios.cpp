//===- scenarios.cpp - whole-job scenarios for ctest ----------------------===//
//
// dtrain-rt-scenarios MODE, run under mpirun. host-mpi must succeed; every
// other mode must take the whole job down with a clear message on stderr
// (checked by expect_failure.sh).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

/// The host program owns MPI: the runtime must use it and leave it alone.
int hostMPI(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  int failures = dtrain_rt_comm_rank(world) != rank;
  failures += dtrain_rt_comm_size(world) != size;
  std::vector<float> v(10, 1.0f);
  dtrain_rt_all_reduce(world, v.data(), 10, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  for (float x : v)
    failures += x != float(size);
  dtrain_rt_finalize(); // must not finalize the host's MPI
  int finalized = 1;
  MPI_Finalized(&finalized);
  failures += finalized != 0;
  // The runtime stays usable until the host finalizes MPI.
  dtrain_rt_all_reduce(world, v.data(), 10, DTRAIN_RT_F32, DTRAIN_RT_MEAN);
  failures += v[0] != float(size);
  MPI_Finalize();
  if (failures)
    std::fprintf(stderr, "host-mpi: %d checks failed on rank %d\n", failures,
                 rank);
  return failures != 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: dtrain-rt-scenarios host-mpi | count-mismatch | "
               "abort-while-waiting | bad-dtype | int-dtype | negative-count | "
               "bad-env | null-request | mpi-error | stalled-rank | "
               "transport-in-flight | transport-null-function | "
               "sparse-kernels-in-flight | sparse-kernels-null-function | "
               "fence-in-flight | fence-null-function\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return usage();
  const char *mode = argv[1];
  if (!std::strcmp(mode, "host-mpi"))
    return hostMPI(argc, argv);

  if (!std::strcmp(mode, "bad-env"))
    setenv("DTRAIN_ALLREDUCE", "tree", 1);
  dtrain_rt_init(&argc, &argv);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  const int rank = dtrain_rt_comm_rank(world);
  std::vector<float> data(64, 1.0f);

  if (!std::strcmp(mode, "count-mismatch")) {
    dtrain_rt_all_reduce(world, data.data(), 10 + rank, DTRAIN_RT_F32,
                         DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "abort-while-waiting")) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      dtrain_rt_abort(world, "deliberate abort while the other ranks wait");
    }
    dtrain_rt_all_reduce(world, data.data(), 64, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "bad-dtype")) {
    dtrain_rt_all_reduce(world, data.data(), 64, 99, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "int-dtype")) {
    dtrain_rt_all_reduce(world, data.data(), 16, DTRAIN_RT_I64, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "negative-count")) {
    dtrain_rt_all_reduce(world, data.data(), -5, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "bad-env")) {
    dtrain_rt_all_reduce(world, data.data(), 64, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "stalled-rank")) {
    // Rank 1 stops answering (as a hung process would); the others'
    // all-reduce must end with DTRAIN_COLLECTIVE_TIMEOUT's message.
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::seconds(60));
    std::vector<float> v(8, 1.0f);
    dtrain_rt_all_reduce(world, v.data(), 8, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  } else if (!std::strcmp(mode, "null-request")) {
    dtrain_rt_wait(nullptr);
  } else if (!std::strcmp(mode, "mpi-error")) {
    // An invalid destination rank: the runtime's error handler returns the
    // error and checkMPI must report it by name and abort.
    const int size = dtrain_rt_comm_size(world);
    DTRAIN_MPI_CALL(world, MPI_Send, data.data(), 1, MPI_FLOAT, size + 5, 0,
                    MPI_COMM_WORLD);
  } else if (!std::strcmp(mode, "transport-in-flight")) {
    // Rank 0's all-reduce waits for rank 1's, which comes late: a
    // transport installed meanwhile would change it halfway.
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
        world, data.data(), 64, DTRAIN_RT_F32, DTRAIN_RT_SUM);
    dtrain_rt_set_transport(dtrain_rt_mpi_transport());
    dtrain_rt_wait(request);
  } else if (!std::strcmp(mode, "transport-null-function")) {
    dtrain_rt_transport_t transport = *dtrain_rt_mpi_transport();
    transport.send_recv = nullptr;
    dtrain_rt_set_transport(&transport);
  } else if (!std::strcmp(mode, "sparse-kernels-in-flight")) {
    // As transport-in-flight: kernels swapped halfway through an exchange.
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<float> residual(64, 0.0f);
    dtrain_rt_request_t *request = dtrain_rt_sparse_all_reduce_start(
        world, data.data(), residual.data(), 64, 8, nullptr, 0,
        DTRAIN_RT_SELECT_EXACT, DTRAIN_RT_SPARSE_ALLGATHER, DTRAIN_RT_SUM,
        DTRAIN_RT_F32, 0);
    dtrain_rt_set_sparse_kernels(dtrain_rt_cpu_sparse_kernels());
    dtrain_rt_wait(request);
  } else if (!std::strcmp(mode, "sparse-kernels-null-function")) {
    dtrain_rt_sparse_kernels_t kernels = *dtrain_rt_cpu_sparse_kernels();
    kernels.dense_residual = nullptr;
    dtrain_rt_set_sparse_kernels(&kernels);
  } else if (!std::strcmp(mode, "fence-in-flight")) {
    // As transport-in-flight: a fence installed after a submission could
    // not be the one its collective waits with.
    if (rank == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    dtrain_rt_request_t *request = dtrain_rt_all_reduce_start(
        world, data.data(), 64, DTRAIN_RT_F32, DTRAIN_RT_SUM);
    dtrain_rt_set_buffer_fence(nullptr);
    dtrain_rt_wait(request);
  } else if (!std::strcmp(mode, "fence-null-function")) {
    const dtrain_rt_buffer_fence_t fence = {
        nullptr, [](void *) -> void * { return nullptr; }, nullptr};
    dtrain_rt_set_buffer_fence(&fence);
  } else {
    return usage();
  }
  std::fprintf(stderr, "scenario %s: rank %d was not aborted\n", mode, rank);
  dtrain_rt_finalize();
  return 0; // expect_failure.sh fails the test on status 0
}
