//===- all_reduce_bench.cpp - all-reduce timing against MPI and the bound -===//
//
//   mpirun -np P dtrain-rt-allreduce-bench [--sizes=1K,16K,...,256M]
//       [--iters=N] [--warmup=N] [--min-time=S] [--bw-bytes=B]
//
// For each size, times in-place f32 SUM all-reduces of three variants:
//   peer  MPI_Allreduce called directly (the peer everything is compared to)
//   mpi   dtrain_rt_all_reduce_with(..., DTRAIN_RT_ALLREDUCE_MPI)
//   ring  dtrain_rt_all_reduce_with(..., DTRAIN_RT_ALLREDUCE_RING)
// The runtime variants include the cross-rank argument check (one small
// all-reduce), as in real use; DTRAIN_CHECK_COLLECTIVES=0 leaves it out.
//
// Once at start the point-to-point bandwidth B between neighbour ranks is
// measured: every rank MPI_Sendrecv's --bw-bytes (default 64M) to its right
// neighbour while receiving as much from its left one, which is the pattern
// of every step of a ring all-reduce; B is bytes per second per rank. The
// bound for M bytes is then 2(P-1)/P * M / B: the time a bandwidth-optimal
// all-reduce needs just to move its data at that rate (latency and the
// reduction itself are not in it, so small sizes are far from it).
//
// An iteration's time is the slowest rank's; the median over iterations is
// reported. Unless --iters is given, each variant runs until its timed
// iterations add up to --min-time (default 0.2 s) and at least 3 of them
// (at most 1000), after --warmup untimed ones (default 2, 1 from 16M up).
// Every iteration refills the buffer; after the timed loop every element of
// the last result is checked on every rank, and a wrong sum aborts the job.
//
// Rank 0 prints key=value lines, then a table:
//   p2p_bytes=B ranks=P iters=N median_s=T p2p_GBps=G
//   bytes=B algorithm=peer|mpi|ring ranks=P iters=N median_s=T busbw_GBps=G
//       bound_s=T0 efficiency=E over_peer=R
//   bytes=B ranks=P ring_over_mpi=R mpi_over_peer=R ring_over_peer=R
// where busbw = 2(P-1)/P * M / T (the bytes each rank sends per second in a
// bandwidth-optimal all-reduce), efficiency = bound_s / median_s
// (= busbw / B), over_peer = median_s / the peer's median_s (above 1:
// slower than MPI_Allreduce). GBps is 1e9 bytes per second.
//
//===----------------------------------------------------------------------===//

#include "dtrain_rt.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kMinIters = 3, kMaxIters = 1000;

int64_t parseSize(const std::string &s) {
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str())
    return -1;
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

/// 1024 -> "1K", 268435456 -> "256M", 1000 -> "1000".
std::string sizeLabel(int64_t bytes) {
  const char *units[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::string message = std::string(what) + " failed: " + text;
    dtrain_rt_abort(dtrain_rt_comm_world(), message.c_str());
  }
}

struct Timing {
  double median = 0;
  int iters = 0;
};

/// Runs OP (collective) WARMUP times untimed, then timed until ITERS
/// iterations (ITERS > 0) or until MIN_TIME seconds and kMinIters
/// iterations. BEFORE runs untimed ahead of every iteration. Each
/// iteration's time is the slowest rank's, so all ranks take the same
/// decisions.
template <typename Before, typename Op>
Timing timeCollective(int iters, int warmup, double minTime, Before before,
                      Op op) {
  std::vector<double> times;
  double total = 0;
  for (int i = 0;; ++i) {
    const int timed = i - warmup;
    if (iters > 0
            ? timed >= iters
            : timed >= kMaxIters || (timed >= kMinIters && total >= minTime))
      break;
    before();
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double t0 = MPI_Wtime();
    op();
    double t = MPI_Wtime() - t0;
    check(
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce (timing)");
    if (timed >= 0) {
      times.push_back(t);
      total += t;
    }
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  Timing result;
  result.iters = int(n);
  result.median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  return result;
}

/// Rank r's input element i: (r + 1) * (1 + i % 13). The sum over P ranks,
/// P(P+1)/2 * (1 + i % 13), is exact in f32 for any realistic P, and a
/// chunk landing at the wrong offset or a missing contribution changes it.
void fillInput(std::vector<float> &buffer, int rank) {
  const float base = float(rank + 1);
  int j = 0;
  for (float &x : buffer) {
    x = base * float(1 + j);
    if (++j == 13)
      j = 0;
  }
}

void checkResult(const std::vector<float> &buffer, int P, const char *variant) {
  const float base = float(P) * float(P + 1) / 2;
  int64_t wrong = 0, first = -1;
  int j = 0;
  for (size_t i = 0; i < buffer.size(); ++i) {
    if (buffer[i] != base * float(1 + j)) {
      if (first < 0)
        first = int64_t(i);
      ++wrong;
    }
    if (++j == 13)
      j = 0;
  }
  if (wrong) {
    char message[512];
    std::snprintf(message, sizeof message,
                  "WRONG RESULT: %s all-reduce of %lld f32 elements: %lld "
                  "elements differ from the expected sum; first at index "
                  "%lld: got %.9g, expected %.9g",
                  variant, (long long)buffer.size(), (long long)wrong,
                  (long long)first, double(buffer[size_t(first)]),
                  double(base * float(1 + first % 13)));
    dtrain_rt_abort(dtrain_rt_comm_world(), message);
  }
}

struct Row {
  int64_t bytes;
  double bound;
  Timing t[3];
};

const char *const kVariants[3] = {"peer", "mpi", "ring"};

} // namespace

int main(int argc, char **argv) {
  dtrain_rt_init(&argc, &argv);
  dtrain_rt_comm_t *world = dtrain_rt_comm_world();
  const int rank = dtrain_rt_comm_rank(world);
  const int P = dtrain_rt_comm_size(world);

  std::string sizeList = "1K,16K,256K,1M,4M,16M,64M,256M";
  int itersOverride = 0, warmupOverride = -1;
  double minTime = 0.2;
  int64_t bwBytes = 64 << 20;
  bool bad = false;
  for (int i = 1; i < argc && !bad; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--sizes=", 0) == 0)
      sizeList = arg.substr(8);
    else if (arg.rfind("--iters=", 0) == 0)
      bad = (itersOverride = std::atoi(arg.c_str() + 8)) <= 0;
    else if (arg.rfind("--warmup=", 0) == 0)
      bad = (warmupOverride = std::atoi(arg.c_str() + 9)) < 0;
    else if (arg.rfind("--min-time=", 0) == 0)
      bad = !((minTime = std::atof(arg.c_str() + 11)) >= 0);
    else if (arg.rfind("--bw-bytes=", 0) == 0)
      bad = (bwBytes = parseSize(arg.substr(11))) < 1 || bwBytes > INT32_MAX;
    else
      bad = true;
  }
  if (bad) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: %s [--sizes=1K,16K,256K,1M,4M,16M,64M,256M] "
                   "[--iters=N] [--warmup=N] [--min-time=SECONDS] "
                   "[--bw-bytes=64M]\n",
                   argv[0]);
    dtrain_rt_finalize();
    return 2;
  }
  std::vector<int64_t> sizes;
  for (size_t pos = 0; pos <= sizeList.size();) {
    size_t comma = sizeList.find(',', pos);
    if (comma == std::string::npos)
      comma = sizeList.size();
    int64_t bytes = parseSize(sizeList.substr(pos, comma - pos));
    if (bytes < 4 || bytes / 4 > INT32_MAX) {
      if (rank == 0)
        std::fprintf(stderr, "bad size in --sizes=%s\n", sizeList.c_str());
      dtrain_rt_finalize();
      return 2;
    }
    sizes.push_back(bytes);
    pos = comma + 1;
  }

  // Point-to-point bandwidth between neighbours: all ranks send to the right
  // and receive from the left at once, as in each step of the ring.
  double p2pBandwidth = 0; // bytes per second per rank; 0 when P == 1
  if (P > 1) {
    const size_t n = size_t(bwBytes);
    std::vector<char> out(n, char(rank)), in(n);
    const int right = (rank + 1) % P, left = (rank + P - 1) % P;
    Timing t = timeCollective(
        itersOverride, warmupOverride >= 0 ? warmupOverride : 1, minTime, [] {},
        [&] {
          check(MPI_Sendrecv(out.data(), int(bwBytes), MPI_BYTE, right, 7,
                             in.data(), int(bwBytes), MPI_BYTE, left, 7,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Sendrecv");
        });
    if (in[0] != char(left) || in[n - 1] != char(left))
      dtrain_rt_abort(world, "WRONG RESULT: bandwidth exchange received "
                             "data from the wrong rank");
    p2pBandwidth = double(bwBytes) / t.median;
    if (rank == 0)
      std::printf("p2p_bytes=%lld ranks=%d iters=%d median_s=%.6g "
                  "p2p_GBps=%.4f\n",
                  (long long)bwBytes, P, t.iters, t.median, p2pBandwidth / 1e9);
  }

  const double busFactor = 2.0 * (P - 1) / P;
  std::vector<Row> rows;
  for (int64_t requested : sizes) {
    const int64_t count = requested / 4;
    Row row;
    row.bytes = count * 4;
    row.bound = P > 1 ? busFactor * double(row.bytes) / p2pBandwidth : 0;
    const int warmup = warmupOverride >= 0 ? warmupOverride
                                           : (row.bytes >= (16 << 20) ? 1 : 2);
    std::vector<float> buffer(static_cast<size_t>(count));
    auto refill = [&] { fillInput(buffer, rank); };
    for (int v = 0; v < 3; ++v) {
      if (v == 0)
        row.t[v] = timeCollective(itersOverride, warmup, minTime, refill, [&] {
          check(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(count),
                              MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                "MPI_Allreduce");
        });
      else {
        const int32_t algorithm =
            v == 1 ? DTRAIN_RT_ALLREDUCE_MPI : DTRAIN_RT_ALLREDUCE_RING;
        row.t[v] = timeCollective(itersOverride, warmup, minTime, refill, [&] {
          dtrain_rt_all_reduce_with(world, buffer.data(), count, DTRAIN_RT_F32,
                                    DTRAIN_RT_SUM, algorithm);
        });
      }
      checkResult(buffer, P, kVariants[v]);
      if (rank == 0) {
        const double T = row.t[v].median;
        std::printf("bytes=%lld algorithm=%s ranks=%d iters=%d median_s=%.6g "
                    "busbw_GBps=%.4f bound_s=%.6g efficiency=%.3f "
                    "over_peer=%.3f\n",
                    (long long)row.bytes, kVariants[v], P, row.t[v].iters, T,
                    busFactor * double(row.bytes) / T / 1e9, row.bound,
                    row.bound / T, T / row.t[0].median);
      }
    }
    if (rank == 0) {
      std::printf("bytes=%lld ranks=%d ring_over_mpi=%.3f mpi_over_peer=%.3f "
                  "ring_over_peer=%.3f\n",
                  (long long)row.bytes, P, row.t[2].median / row.t[1].median,
                  row.t[1].median / row.t[0].median,
                  row.t[2].median / row.t[0].median);
      std::fflush(stdout);
    }
    rows.push_back(row);
  }

  if (rank == 0) {
    std::printf("\nf32 SUM all-reduce, %d ranks; neighbour p2p bandwidth "
                "B = %.4f GB/s (%.3f Gbit/s) per rank\n",
                P, p2pBandwidth / 1e9, p2pBandwidth * 8 / 1e9);
    std::printf("bound = 2(P-1)/P*M/B; busbw in GB/s; eff = bound/time; "
                "xpeer = time/peer time; peer = MPI_Allreduce, mpi and ring "
                "= dtrain_rt_all_reduce_with\n");
    std::printf("%6s %10s | %10s %7s %5s | %10s %7s %5s %5s | %10s %7s %5s "
                "%5s\n",
                "size", "bound_ms", "peer_ms", "busbw", "eff", "mpi_ms",
                "busbw", "eff", "xpeer", "ring_ms", "busbw", "eff", "xpeer");
    for (const Row &row : rows) {
      std::printf("%6s %10.3f", sizeLabel(row.bytes).c_str(), row.bound * 1e3);
      for (int v = 0; v < 3; ++v) {
        const double T = row.t[v].median;
        std::printf(" | %10.3f %7.3f %5.2f", T * 1e3,
                    busFactor * double(row.bytes) / T / 1e9, row.bound / T);
        if (v > 0)
          std::printf(" %5.2f", T / row.t[0].median);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  dtrain_rt_finalize();
  return 0;
}
