//===- all_reduce_bench.cpp - MPI vs RING all-reduce timing ---------------===//
//
//   mpirun -np P dtrain-rt-allreduce-bench [--sizes=1K,1M,16M,100M]
//                                          [--iters=N] [--warmup=N]
//
// Times in-place f32 SUM all-reduces through dtrain_rt_all_reduce_with (so
// the cross-rank argument check is included, as in real use; set
// DTRAIN_CHECK_COLLECTIVES=0 to leave it out). An iteration's time is the
// slowest rank's; the median over iterations is reported. Rank 0 prints
// key=value lines:
//   bytes=B algorithm=A ranks=P iters=N median_s=T busbw_GBps=G
//   bytes=B ranks=P ring_over_mpi=R      (R = ring median / mpi median)
// Bus bandwidth is 2(P-1)/P * B / T (the bytes each rank sends per second
// in a bandwidth-optimal all-reduce).
//
//===----------------------------------------------------------------------===//

#include "dtrain_rt.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int64_t parseSize(const std::string &s) {
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end ? end : "";
  if (unit == "K" || unit == "KB")
    v *= 1024;
  else if (unit == "M" || unit == "MB")
    v *= 1024 * 1024;
  else if (unit == "G" || unit == "GB")
    v *= 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B")
    return -1;
  return int64_t(v);
}

double medianSeconds(dtrain_rt_comm_t *comm, std::vector<float> &buffer,
                     int32_t algorithm, int iters, int warmup, float fill) {
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    std::fill(buffer.begin(), buffer.end(), fill);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    dtrain_rt_all_reduce_with(comm, buffer.data(), int64_t(buffer.size()),
                              DTRAIN_RT_F32, DTRAIN_RT_SUM, algorithm);
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= warmup)
      times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
  dtrain_rt_init(&argc, &argv);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  const int rank = dtrain_rt_comm_rank(world);
  const int P = dtrain_rt_comm_size(world);

  std::vector<int64_t> sizes;
  std::string sizeList = "1K,1M,16M,100M";
  int itersOverride = 0, warmup = 2;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--sizes=", 0) == 0)
      sizeList = arg.substr(8);
    else if (arg.rfind("--iters=", 0) == 0)
      itersOverride = std::atoi(arg.c_str() + 8);
    else if (arg.rfind("--warmup=", 0) == 0)
      warmup = std::atoi(arg.c_str() + 9);
    else {
      if (rank == 0)
        std::fprintf(stderr,
                     "usage: %s [--sizes=1K,1M,16M,100M] [--iters=N] "
                     "[--warmup=N]\n",
                     argv[0]);
      dtrain_rt_finalize();
      return 2;
    }
  }
  for (size_t pos = 0; pos <= sizeList.size();) {
    size_t comma = sizeList.find(',', pos);
    if (comma == std::string::npos)
      comma = sizeList.size();
    int64_t bytes = parseSize(sizeList.substr(pos, comma - pos));
    if (bytes < 4) {
      if (rank == 0)
        std::fprintf(stderr, "bad size in --sizes=%s\n", sizeList.c_str());
      dtrain_rt_finalize();
      return 2;
    }
    sizes.push_back(bytes);
    pos = comma + 1;
  }

  for (int64_t bytes : sizes) {
    const int64_t count = bytes / 4;
    const int64_t actualBytes = count * 4;
    // About 256 MB of traffic per algorithm and size, 5..200 iterations.
    const int iters =
        itersOverride > 0
            ? itersOverride
            : int(std::clamp<int64_t>((256 << 20) / actualBytes, 5, 200));
    std::vector<float> buffer(static_cast<size_t>(count));
    double median[2];
    const int32_t algorithms[2] = {DTRAIN_RT_ALLREDUCE_MPI,
                                   DTRAIN_RT_ALLREDUCE_RING};
    for (int a = 0; a < 2; ++a) {
      median[a] = medianSeconds(world, buffer, algorithms[a], iters, warmup,
                                float(rank + 1));
      const double busbw =
          2.0 * (P - 1) / P * double(actualBytes) / median[a] / 1e9;
      if (rank == 0)
        std::printf("bytes=%lld algorithm=%s ranks=%d iters=%d median_s=%.6g "
                    "busbw_GBps=%.3f\n",
                    (long long)actualBytes, a == 0 ? "mpi" : "ring", P, iters,
                    median[a], busbw);
    }
    if (rank == 0) {
      std::printf("bytes=%lld ranks=%d ring_over_mpi=%.3f\n",
                  (long long)actualBytes, P, median[1] / median[0]);
      std::fflush(stdout);
    }
  }
  dtrain_rt_finalize();
  return 0;
}
