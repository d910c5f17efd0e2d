//===- ProfileTest.cpp - a trainer's --profile from given steps -----------===//
//
// Under mpirun with 2 ranks. StepProfile gets the same hand-made step on
// both ranks (exchanges with their queue times, CPU times and durations,
// rank 1 beginning each exchange later, rank 0 ending it later) and writes
// the profile; the computation before each exchange and the all-reduce
// cost fitted to the steps' exchanges must be the ones computed by hand,
// both where the ranks take turns on one core (their CPU time counts
// twice, and an exchange counts from the last rank's start to the last
// rank's end, the step's last one to the first rank's end) and where each
// has its own core, which its communication thread shares (CPU time, and
// an exchange from this rank's start to its end). Also where the wall time
// counts instead (computationSeconds), and the computing threads a rank
// counts.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dtrain::rt;

namespace {

dtrain_rt_comm_t *world() { return dtrain_rt_comm_world(); }

/// Runs this thread on one CPU until destroyed: CPU on rank 0, OTHERCPU on
/// the others (mpirun may have bound each rank to a core of its own).
/// pinned() says whether every rank could.
class PinnedTo {
public:
  PinnedTo(int cpu, int otherCpu) {
    sched_getaffinity(0, sizeof saved, &saved);
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(world()->rank == 0 ? cpu : otherCpu, &mask);
    double failed = sched_setaffinity(0, sizeof mask, &mask) != 0;
    dtrain_rt_all_reduce(world(), &failed, 1, DTRAIN_RT_F64, DTRAIN_RT_SUM);
    everyRank = failed == 0;
  }
  ~PinnedTo() { sched_setaffinity(0, sizeof saved, &saved); }
  bool pinned() const { return everyRank; }

private:
  cpu_set_t saved;
  bool everyRank;
};

/// The number after "KEY": in JSON (the first element of an array).
double number(const std::string &json, const std::string &key) {
  const size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos)
    return -1;
  size_t from = json.find_first_of("-0123456789", at + key.size() + 3);
  return std::stod(json.substr(from));
}

/// The numbers of the array "KEY": [...], those of arrays in it too, in
/// order ([[bytes, seconds, count], ...] flat).
std::vector<double> numbers(const std::string &json, const std::string &key) {
  const size_t at = json.find("\"" + key + "\": [");
  EXPECT_NE(at, std::string::npos) << key;
  std::vector<double> values;
  if (at == std::string::npos)
    return values;
  const size_t open = at + key.size() + 4; // the '['
  size_t end = open;
  for (int depth = 0; end < json.size(); ++end) {
    depth += json[end] == '[' ? 1 : json[end] == ']' ? -1 : 0;
    if (depth == 0)
      break;
  }
  std::string text = json.substr(open, end - open);
  for (char &c : text)
    if (c == '[' || c == ']' || c == ',')
      c = ' ';
  std::istringstream in(text);
  for (double value; in >> value;)
    values.push_back(value);
  return values;
}

/// Rank 1 begins each exchange this much later than rank 0, and rank 0
/// ends it this much later than rank 1 (where they take turns on a core,
/// rank 0's end waits for rank 1's turn to pass).
constexpr double kSkew = 5e-5, kLateEnd = 3e-5;
constexpr double kStepEnd = 4e-3, kStepEndCpu = 2e-3;
/// What the first exchange takes more than the others' line.
constexpr double kShared = 1.29024e-5;

/// An exchange of BYTES queued at QUEUED, with the computation's CPU time
/// at QUEUEDCPU, taking SECONDS once rank 1 has begun it too, 10 us + kSkew
/// after it was queued (rank 0 kSkew earlier; rank 0 ending it kLateEnd
/// later), and 2e-5 s + 5e-10 s per
/// byte of CPU time on rank 0 (twice that on rank 1).
TraceEvent exchange(int64_t bytes, double queued, double queuedCpu,
                    double seconds) {
  const double last = queued + 1e-5 + kSkew;
  return TraceEvent{"all_reduce",
                    TraceEvent::CommThread,
                    last - (world()->rank == 0 ? kSkew : 0),
                    last + seconds + (world()->rank == 0 ? kLateEnd : 0),
                    bytes,
                    queued,
                    queuedCpu,
                    (world()->rank + 1) * (2e-5 + 5e-10 * double(bytes))};
}

/// The hand-made steps' exchanges alone: 1e-4 s + 1e-9 s per byte.
double aloneSeconds(int64_t bytes) { return 1e-4 + 1e-9 * double(bytes); }

/// The step that ends at 4 ms (kStepEnd) with the computation's CPU time
/// at 2 ms (kStepEndCpu).
TraceEvent stepSpan() {
  return {"step", TraceEvent::MainThread, 0, kStepEnd, -1, -1};
}

/// Two exchanges of 1 KiB and 64 KiB, queued 1 ms and 3 ms into the step
/// after 0.8 ms of CPU time each, and a third of 1 KiB 10 us after the
/// second, with the computation's CPU time read 1 us lower (the process's
/// less the communication thread's, read one after the other), each taking
/// aloneSeconds() (the first, which shares the cores with the computation
/// and ends within the backward pass, kShared more). The last two begin
/// after the backward pass has ended (the third was queued). Then the
/// updates, with a wait of 0.3 ms among them (its thread's calls for that
/// exchange taking 10 us of CPU time on rank 0, 20 us on rank 1), until
/// stepSpan() ends.
std::vector<TraceEvent> handMadeStep() {
  return {exchange(1024, 1e-3, 0.8e-3, aloneSeconds(1024) + kShared),
          exchange(65536, 3e-3, 1.6e-3, aloneSeconds(65536)),
          exchange(1024, 3.01e-3, 1.599e-3, aloneSeconds(1024)),
          {kWaitSpanPrefix + std::string("all_reduce #1"),
           TraceEvent::MainThread, 3.2e-3, 3.5e-3, 65536, -1, -1,
           (world()->rank + 1) * 1e-5},
          stepSpan()};
}

/// Exchanges of 1 KiB and 16 KiB queued 1 ms and 1.5 ms into the step,
/// each taking 3e-4 s + 2e-9 s per byte and ending within the backward
/// pass, then the last two of handMadeStep().
std::vector<TraceEvent> stepWithExchangesWithinTheBackwardPass() {
  auto within = [](int64_t bytes) { return 3e-4 + 2e-9 * double(bytes); };
  return {exchange(1024, 1e-3, 0.8e-3, within(1024)),
          exchange(16384, 1.5e-3, 1.2e-3, within(16384)),
          exchange(65536, 3e-3, 1.6e-3, aloneSeconds(65536)),
          exchange(1024, 3.01e-3, 1.599e-3, aloneSeconds(1024)), stepSpan()};
}

/// Rank 0's profile of 3 steps of STEP's events (the text, on rank 0
/// only), each rank computing on one thread.
std::string
profileOfHandMadeSteps(std::vector<TraceEvent> (*step)() = handMadeStep) {
  setenv("OMP_NUM_THREADS", "1", 1);
  StepProfile profile(0);
  for (int i = 0; i < 3; ++i)
    profile.addStep(step(), 0, 0, kStepEnd, kStepEndCpu);
  double pid = world()->rank == 0 ? double(getpid()) : 0;
  dtrain_rt_all_reduce(world(), &pid, 1, DTRAIN_RT_F64, DTRAIN_RT_SUM);
  const std::string path = ::testing::TempDir() + "dtrain-profile-test-" +
                           std::to_string(int64_t(pid)) + ".json";
  profile.write(world(), path);
  if (world()->rank != 0)
    return "";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

/// Rank 0: what the profile says of the machine, the computation and the
/// all-reduce cost: every exchange STARTUP more than its time alone, and
/// all but the step's last LATE more again.
void expectProfile(const std::string &json, int hostCores,
                   std::vector<double> compute, double tail, double startup,
                   double late = 0) {
  EXPECT_EQ(number(json, "host_ranks"), 2);
  EXPECT_EQ(number(json, "host_threads"), 2);
  EXPECT_EQ(number(json, "host_cores"), hostCores);
  const std::vector<double> written = numbers(json, "compute_s");
  ASSERT_EQ(written.size(), compute.size());
  for (size_t i = 0; i < compute.size(); ++i)
    EXPECT_NEAR(written[i], compute[i], 1e-12) << "exchange " << i;
  EXPECT_NEAR(number(json, "tail_s"), tail, 1e-12);
  // Fitted to the exchanges (least squares over 1 KiB, 64 KiB, 1 KiB: the
  // first one's kShared moves the line by -kShared / 129024 per byte and
  // 32/63 kShared at 0, LATE on the first two by LATE / 129024 and 31/63
  // LATE); the line alone fitted to the last two exactly (64 KiB LATE
  // more than 1 KiB); all-reduces timed from 4 bytes.
  EXPECT_NE(json.find("\"cost_from\": \"exchanges in the steps\""),
            std::string::npos)
      << json;
  EXPECT_NEAR(number(json, "startup_s"),
              startup + kShared * 32 / 63 + late * 31 / 63, 1e-10);
  EXPECT_NEAR(number(json, "per_byte_s"), 1e-9 + (late - kShared) / 129024,
              1e-15);
  EXPECT_NEAR(number(json, "alone_startup_s"), startup - late / 63, 1e-10);
  EXPECT_NEAR(number(json, "alone_per_byte_s"), 1e-9 + late / 64512, 1e-15);
  // One exchange ended within the backward pass: no line of its own.
  EXPECT_EQ(json.find("backward_startup_s"), std::string::npos) << json;
  // The mean rank's CPU time per exchange.
  EXPECT_NEAR(number(json, "exchange_cpu_startup_s"), 3e-5, 1e-11);
  EXPECT_NEAR(number(json, "exchange_cpu_per_byte_s"), 7.5e-10, 1e-16);
  EXPECT_NEAR(number(json, "exchange_caller_cpu_s"), 1.5e-5, 1e-12);
  EXPECT_EQ(numbers(json, "allreduce_bytes").front(), 4);
}

TEST(StepProfile, RanksTakingTurnsOnOneCore) {
  ASSERT_EQ(world()->size, 2) << "run with 2 ranks";
  const PinnedTo pinned(0, 0);
  ASSERT_TRUE(pinned.pinned()) << "cannot run on CPU 0";
  const std::string json = profileOfHandMadeSteps();
  if (world()->rank != 0)
    return;
  // Each rank gets half the core: 2 x CPU = 1.6 ms for the first two
  // gaps, though the second took 2 ms of wall time (the rest went to other
  // threads), and none for the third. Rank 0's wait for rank 1's turn is
  // the computation's: the exchanges count from rank 1's start. To rank
  // 0's end where another exchange follows, which waits for it; the last
  // one to rank 1's end, since rank 0's wait for its turn after it is the
  // next step's computation. The updates: 2 x 0.401 ms of CPU time.
  expectProfile(json, 1, {1.6e-3, 1.6e-3, 0}, 0.802e-3, 1e-4, kLateEnd);
}

// The exchanges that ended within the backward pass, and those that began
// after it, each get a line of their own, fitted exactly (two sizes each).
TEST(StepProfile, ExchangesWithinAndAfterTheBackwardPass) {
  ASSERT_EQ(world()->size, 2) << "run with 2 ranks";
  const PinnedTo pinned(0, 0);
  ASSERT_TRUE(pinned.pinned()) << "cannot run on CPU 0";
  const std::string json =
      profileOfHandMadeSteps(stepWithExchangesWithinTheBackwardPass);
  if (world()->rank != 0)
    return;
  // (Each to rank 0's end, kLateEnd later, but the step's last.)
  EXPECT_NEAR(number(json, "backward_startup_s"), 3e-4 + kLateEnd, 1e-10)
      << json;
  EXPECT_NEAR(number(json, "backward_per_byte_s"), 2e-9, 1e-15);
  EXPECT_NEAR(number(json, "alone_startup_s"), 1e-4 - kLateEnd / 63, 1e-10);
  EXPECT_NEAR(number(json, "alone_per_byte_s"), 1e-9 + kLateEnd / 64512, 1e-15);
  // And the exchanges the lines were fitted to, in the step's order: each
  // its bytes, seconds and the 3 steps.
  const std::vector<double> within = numbers(json, "backward_exchanges"),
                            alone = numbers(json, "alone_exchanges");
  const std::vector<double> withinExpected = {
      1024,  3e-4 + 2e-9 * 1024 + kLateEnd,  3,
      16384, 3e-4 + 2e-9 * 16384 + kLateEnd, 3};
  const std::vector<double> aloneExpected = {
      65536, aloneSeconds(65536) + kLateEnd, 3, 1024, aloneSeconds(1024), 3};
  ASSERT_EQ(within.size(), withinExpected.size()) << json;
  ASSERT_EQ(alone.size(), aloneExpected.size()) << json;
  for (size_t i = 0; i < within.size(); ++i) {
    EXPECT_NEAR(within[i], withinExpected[i], 1e-12) << i;
    EXPECT_NEAR(alone[i], aloneExpected[i], 1e-12) << i;
  }
}

TEST(StepProfile, RanksOnTheirOwnCores) {
  ASSERT_EQ(world()->size, 2) << "run with 2 ranks";
  const PinnedTo pinned(0, 1);
  if (!pinned.pinned())
    GTEST_SKIP() << "needs CPUs 0 and 1";
  const std::string json = profileOfHandMadeSteps();
  if (world()->rank != 0)
    return;
  // Each rank's computing thread fills its core, which its communication
  // thread shares: the CPU time, 0.8 ms for the first two gaps (not the
  // 2 ms of wall time of the second), none for the third, 0.401 ms for the
  // updates. The ranks do not take turns: rank 0 waits for rank 1 in each
  // exchange, and the slowest rank's fit counts the wait and its later end.
  expectProfile(json, 2, {0.8e-3, 0.8e-3, 0}, 0.401e-3,
                1e-4 + kSkew + kLateEnd);
}

TEST(ComputationSeconds, CpuTimeWhereTheComputingThreadsFillTheCores) {
  const double wall = 2e-3, cpu = 0.8e-3;
  // 2 ranks of 1 thread on 4 cores: the communication threads have cores
  // of their own.
  EXPECT_EQ(computationSeconds({2, 2, 4}, wall, cpu), wall);
  // 2 ranks of 2 threads on 8 cores: the wall time too.
  EXPECT_EQ(computationSeconds({2, 4, 8}, wall, cpu), wall);
  // Filled: the CPU time times ranks per core, however long the wall time.
  EXPECT_EQ(computationSeconds({2, 2, 2}, wall, cpu), cpu);
  EXPECT_EQ(computationSeconds({4, 4, 2}, wall, cpu), 2 * cpu);
  EXPECT_EQ(computationSeconds({1, 16, 16}, wall, cpu), cpu / 16);
  EXPECT_EQ(computationSeconds({2, 2, 2}, wall, -1e-6), 0);
}

TEST(ComputeThreads, OmpNumThreadsElseTheAffinityMaskShared) {
  const char *saved = std::getenv("OMP_NUM_THREADS");
  const std::string savedValue = saved ? saved : "";
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(computeThreads(), 3);
  // Whatever the node's ranks.
  const int jobNodeRanks = setNodeRanks(64);
  EXPECT_EQ(computeThreads(), 3);
  unsetenv("OMP_NUM_THREADS");
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  const int node = int(std::thread::hardware_concurrency());
  setNodeRanks(1);
  EXPECT_EQ(computeThreads(), CPU_COUNT(&mask));
  // The ranks of a node share its CPUs, each no more than its mask.
  setNodeRanks(2);
  EXPECT_EQ(computeThreads(),
            std::max(1, std::min(CPU_COUNT(&mask), node / 2)));
  setNodeRanks(node + 1);
  EXPECT_EQ(computeThreads(), 1);
  setNodeRanks(1);
  {
    const PinnedTo pinned(0, 0);
    if (pinned.pinned())
      EXPECT_EQ(computeThreads(), 1);
  }
  setNodeRanks(jobNodeRanks);
  if (saved)
    setenv("OMP_NUM_THREADS", savedValue.c_str(), 1);
}

/// Seconds on CLOCK (a CPU-time clock).
double cpuSeconds(clockid_t clock) {
  timespec now;
  clock_gettime(clock, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

// The computation's CPU time leaves out the collectives' wherever they run:
// on the communication thread, or inline on the calling thread
// (DTRAIN_COMM_THREAD=0, runtime-profile-inline-np2). The profile's
// exchange CPU fit counts them, so counting them here too would count them
// twice.
TEST(ComputeCpuSeconds, LeavesOutTheCollectives) {
  ASSERT_EQ(world()->size, 2) << "run with 2 ranks";
  // 16 MB per all-reduce: milliseconds of copies and sums on each rank.
  std::vector<float> buffer(size_t(4) << 20, 1.0f);
  const double processBegin = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const double computeBegin = computeCpuSeconds();
  for (int i = 0; i < 4; ++i)
    dtrain_rt_all_reduce(world(), buffer.data(), int64_t(buffer.size()),
                         DTRAIN_RT_F32, DTRAIN_RT_SUM);
  const double process = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - processBegin;
  const double compute = computeCpuSeconds() - computeBegin;
  EXPECT_GT(process, 1e-3);
  EXPECT_LT(compute, 0.2 * process)
      << "the process used " << process << " s of CPU time";
}

// While tracing, it also leaves out the calling thread's CPU time in the
// calls that submit a collective and wait for it, which each wait span
// records: between tiny all-reduces, 20 us of computation each.
TEST(ComputeCpuSeconds, LeavesOutTheCallsWhileTracing) {
  ASSERT_EQ(world()->size, 2) << "run with 2 ranks";
  constexpr int kCalls = 2000;
  constexpr double kSpin = 2e-5;
  float value = 1;
  setTracing(true);
  const double computeBegin = computeCpuSeconds();
  for (int i = 0; i < kCalls; ++i) {
    const double spinEnd = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) + kSpin;
    while (cpuSeconds(CLOCK_THREAD_CPUTIME_ID) < spinEnd) {
    }
    dtrain_rt_all_reduce(world(), &value, 1, DTRAIN_RT_F32, DTRAIN_RT_SUM);
  }
  const double compute = computeCpuSeconds() - computeBegin;
  setTracing(false);
  double calls = 0;
  int waits = 0;
  for (const TraceEvent &e : takeTrace()) {
    if (e.thread != TraceEvent::MainThread)
      continue;
    EXPECT_GE(e.cpu, 0) << e.name;
    calls += e.cpu;
    ++waits;
  }
  EXPECT_EQ(waits, kCalls);
  EXPECT_GT(calls, 0);
  // Counting the calls would put them over the spins; what remains is the
  // all-reduces' argument checks and request objects.
  EXPECT_GE(compute, kCalls * kSpin);
  EXPECT_LT(compute - kCalls * kSpin, calls)
      << "the computation took " << compute << " s of CPU time, the calls "
      << calls << " s";
}

} // namespace
