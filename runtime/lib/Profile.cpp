//===- Profile.cpp - a trainer's measured cost model (--profile) ----------===//
//
// What --dtrain-merge-gradients needs to plan buckets for this machine and
// network (its profile= option): the computation before each exchange of a
// step and after the last one (the updates, less the waits for the
// exchanges), averaged over the profiled steps from the times the exchanges
// were queued (where the computing threads fill a machine's cores, which the
// communication threads then share, a gap counts the CPU time used in it
// times the ranks per core), and the all-reduce cost T(M) = startup +
// perByte * M fitted by least squares: to the steps' own exchanges when
// their sizes span a range (an exchange there also waits for the slowest
// rank and shares the cores with the computation, which isolated all-reduces
// do not show; where the ranks outnumber the cores and take turns on them,
// an exchange counts from when the last rank began it, the turns before that
// being the computation's), else to all-reduces of several sizes (from 4
// bytes) timed on the job's ranks after training, each the fastest of its
// repeats; the same fit to the steps' exchanges that ended before the
// backward pass ended and to those that began after it, where their sizes
// span a range (what an exchange costs beside the computation, and with
// nothing computing beside it), with those exchanges (the slowest rank's
// mean of each), to which the planners' refit-profiles= refits the lines
// together with a merged trainer's; and the CPU time an exchange takes on
// the thread that runs it,
// fitted by least squares to the steps' exchanges (the mean rank's), which
// is taken from the computation where its threads fill the cores, and the
// CPU time the computing thread takes to submit an exchange and wait for
// it (the mean rank's mean), which the computation's CPU time leaves out
// since merged plans pay it once per bucket. For the
// sparsified exchanges that --dtrain-simulate-step predicts: the speed of a
// residual update and a Gaussian-k selection over the whole payload, timed
// on all ranks at once (so that ranks sharing cores slow each other as they
// do in a step).
//
//===----------------------------------------------------------------------===//

#include "ArrayFile.h"
#include "Internal.h"
#include "dtrain_rt_line_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include <sched.h>
#include <unistd.h>

using namespace dtrain::rt;

void StepProfile::addStep(const std::vector<TraceEvent> &events,
                          double stepBegin, double stepBeginCpu, double stepEnd,
                          double stepEndCpu) {
  std::vector<const TraceEvent *> exchanges;
  for (const TraceEvent &e : events)
    if (e.thread == TraceEvent::CommThread && e.queued >= 0)
      exchanges.push_back(&e);
  std::sort(exchanges.begin(), exchanges.end(),
            [](const TraceEvent *a, const TraceEvent *b) {
              return a->queued < b->queued;
            });
  if (steps > 0 && exchanges.size() != computeSums.size())
    fail("--profile: a step issued %zu exchanges, an earlier one %zu",
         exchanges.size(), computeSums.size());
  computeSums.resize(exchanges.size());
  computeCpuSums.resize(exchanges.size());
  bytes.resize(exchanges.size());
  double previous = stepBegin, previousCpu = stepBeginCpu;
  for (size_t i = 0; i < exchanges.size(); ++i) {
    computeSums[i] += exchanges[i]->queued - previous;
    computeCpuSums[i] += exchanges[i]->queuedCpu - previousCpu;
    previousCpu = exchanges[i]->queuedCpu;
    bytes[i] = exchanges[i]->bytes;
    previous = exchanges[i]->queued;
    stepSizes.push_back(double(exchanges[i]->bytes));
    stepBegins.push_back(exchanges[i]->begin - origin);
    stepEnds.push_back(exchanges[i]->end - origin);
    stepCpus.push_back(std::max(exchanges[i]->cpu, 0.0));
    stepBackwardEnds.push_back(exchanges.back()->queued - origin);
  }
  double waits = 0;
  for (const TraceEvent &e : events) {
    if (e.thread != TraceEvent::MainThread ||
        e.name.rfind(kWaitSpanPrefix, 0) != 0)
      continue;
    waits +=
        std::max(std::min(e.end, stepEnd) - std::max(e.begin, previous), 0.0);
    if (e.cpu >= 0) {
      callerCpuSum += e.cpu;
      callerCount += 1;
    }
  }
  tailSum += stepEnd - previous - waits;
  tailCpuSum += stepEndCpu - previousCpu;
  ++steps;
}

namespace {

/// SIZES and TIMES as samples of one exchange each.
std::vector<LineSample> samplesOf(const std::vector<double> &sizes,
                                  const std::vector<double> &times) {
  std::vector<LineSample> samples;
  for (size_t i = 0; i < sizes.size(); ++i)
    samples.push_back({sizes[i], times[i]});
  return samples;
}

/// Appends "KEY": [[bytes, seconds, count], ...] to JSON.
void appendSamples(std::string &json, const char *key,
                   const std::vector<LineSample> &samples) {
  json += ",\n  \"" + std::string(key) + "\": [";
  char number[96];
  for (size_t i = 0; i < samples.size(); ++i) {
    std::snprintf(number, sizeof number, "%s[%.9g, %.9g, %.9g]", i ? ", " : "",
                  samples[i].bytes, samples[i].seconds, samples[i].count);
    json += number;
  }
  json += "]";
}

/// The fastest of REPEATS all-reduces of COUNT floats, each the slowest
/// rank's time. The planners never cost a bucket below these, so they must
/// be a floor: a shared machine's noise only adds time, and a median of 3
/// with two slow repeats raised every bucket between its neighbours (4 MB
/// on the emulated cluster: 106 ms, against 53-67 ms in five other
/// profiles).
double timeAllReduce(dtrain_rt_comm_t *comm, std::vector<float> &buffer,
                     int64_t count, int repeats) {
  double fastest = 0;
  for (int r = 0; r < repeats + 1; ++r) {
    double start = clockSeconds();
    dtrain_rt_all_reduce(comm, buffer.data(), count, DTRAIN_RT_F32,
                         DTRAIN_RT_MEAN);
    double seconds = clockSeconds() - start;
    dtrain_rt_all_reduce(comm, &seconds, 1, DTRAIN_RT_F64, DTRAIN_RT_MAX);
    if (r > 0) // the first is a warm-up
      fastest = r == 1 ? seconds : std::min(fastest, seconds);
  }
  return fastest;
}

/// Elements per second of what a sparsified exchange computes before it
/// sends (u = grad + residual, then Gaussian-k at density 0.001) over
/// COUNT elements: the slowest rank's median of 3, timed on all ranks at
/// once.
double timeSelection(dtrain_rt_comm_t *comm, int64_t count) {
  // Laplace-distributed values: heavier-tailed than Gaussian, as gradients.
  std::vector<float> grad(static_cast<size_t>(count)),
      residual(static_cast<size_t>(count), 0.0f);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (float &g : grad) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = (double(state >> 11) + 0.5) / double(1ull << 53);
    g = float(u < 0.5 ? std::log(2 * u) : -std::log(2 * (1 - u))) * 1e-3f;
  }
  const int64_t k = std::max<int64_t>(1, count / 1000);
  std::vector<int32_t> indices(size_t(2 * k));
  std::vector<double> times;
  for (int r = 0; r < 4; ++r) {
    dtrain_rt_all_reduce(comm, nullptr, 0, DTRAIN_RT_F32, DTRAIN_RT_SUM);
    const double start = clockSeconds();
    for (int64_t i = 0; i < count; ++i)
      residual[size_t(i)] += grad[size_t(i)];
    dtrain_rt_select_f32(residual.data(), count, k, DTRAIN_RT_SELECT_GAUSSIAN,
                         0, indices.data(), nullptr, int64_t(indices.size()));
    double seconds = clockSeconds() - start;
    dtrain_rt_all_reduce(comm, &seconds, 1, DTRAIN_RT_F64, DTRAIN_RT_MAX);
    if (r > 0) // the first is a warm-up
      times.push_back(seconds);
  }
  std::sort(times.begin(), times.end());
  return double(count) / std::max(times[times.size() / 2], 1e-9);
}

/// This rank's machine as the ranks of COMM share it (same host name).
/// Collective.
HostShare hostShare(dtrain_rt_comm_t *comm) {
  // Each rank fills its slot (a host name hash, its computing threads,
  // then its mask in 32-bit words), exact in f64; a sum of the slots
  // gathers them all.
  constexpr int words = CPU_SETSIZE / 32, slotSize = 2 + words;
  std::vector<double> slots(size_t(comm->size) * slotSize, 0);
  double *mine = &slots[size_t(comm->rank) * slotSize];
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a
  for (const char *c = host; *c; ++c)
    hash = (hash ^ uint8_t(*c)) * 0x100000001b3ull;
  mine[0] = double(hash >> 11);
  mine[1] = deviceComputes() ? 0 : double(computeThreads());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0)
    for (int cpu = 0; cpu < int(std::thread::hardware_concurrency()); ++cpu)
      CPU_SET(cpu, &mask);
  for (int w = 0; w < words; ++w) {
    uint32_t word = 0;
    for (int bit = 0; bit < 32; ++bit)
      if (CPU_ISSET(32 * w + bit, &mask))
        word |= uint32_t(1) << bit;
    mine[2 + w] = double(word);
  }
  dtrain_rt_all_reduce(comm, slots.data(), int64_t(slots.size()),
                       DTRAIN_RT_F64, DTRAIN_RT_SUM);
  HostShare share{0, 0, 0};
  std::vector<uint32_t> cores(words, 0);
  for (int r = 0; r < comm->size; ++r) {
    const double *slot = &slots[size_t(r) * slotSize];
    if (slot[0] != mine[0])
      continue;
    ++share.ranks;
    share.threads += int64_t(slot[1]);
    for (int w = 0; w < words; ++w)
      cores[size_t(w)] |= uint32_t(slot[2 + w]);
  }
  for (uint32_t word : cores)
    share.cores += __builtin_popcount(word);
  share.cores = std::max<int64_t>(share.cores, 1);
  return share;
}

} // namespace

double dtrain::rt::computationSeconds(const HostShare &host, double wall,
                                      double cpuSeconds) {
  if (!host.computationFillsCores())
    return wall;
  // The CPU time can come out a little below 0 for exchanges queued back
  // to back: it is the process's less the communication thread's.
  return std::max(cpuSeconds, 0.0) * double(host.ranks) / double(host.cores);
}

void StepProfile::write(dtrain_rt_comm_t *comm,
                        const std::string &path) const {
  if (steps == 0)
    fail("--profile: no step was profiled (steps after the first count)");
  // Sizes from 4 bytes by factors of 4 until one holds the step's whole
  // payload (at least 1 MiB, at most 256 MiB): where the model's buckets
  // lie. The planner never costs a bucket below these, so the largest
  // bucket must be covered: on shared memory the cost per byte grows
  // once a message leaves the caches.
  int64_t payload = 0;
  for (int64_t b : bytes)
    payload += b;
  const int64_t wanted =
      std::clamp<int64_t>(payload, 1 << 20, int64_t(256) << 20) / 4;
  int64_t largest = 1024;
  while (largest < wanted)
    largest *= 4;
  std::vector<float> buffer(size_t(largest), 1.0f);
  std::vector<double> sizes, times;
  for (int64_t count = 1; count <= largest; count *= 4) {
    sizes.push_back(double(count) * 4);
    times.push_back(timeAllReduce(comm, buffer, count,
                                  count <= (int64_t(1) << 18) ? 9 : 3));
  }
  const HostShare host = hostShare(comm);
  // The steps' exchanges. Where the ranks take turns on the cores, each
  // runs from when the last rank began it: the wait for the others' turns
  // before it is the computation's, which counts it already (times ranks
  // per core). It runs until the last rank ended it where another
  // exchange follows in the step, which waits for that; the step's last
  // one until the first rank ended it, since what follows it is the next
  // step's computation. Ranks that share a core fall into turns: while
  // one computes the next step, the other's end of the last exchange
  // waits for the core (3 ms of a 6 ms step at 2 ranks per core, for an
  // all-reduce that took 0.4).
  // (Every rank takes part in the collectives, whatever its machine.)
  // MAX over [n, -n] gives every rank the most and the fewest.
  double counts[2] = {double(stepBegins.size()), -double(stepBegins.size())};
  dtrain_rt_all_reduce(comm, counts, 2, DTRAIN_RT_F64, DTRAIN_RT_MAX);
  if (counts[0] != -counts[1])
    fail("--profile: the ranks profiled %g to %g exchanges", -counts[1],
         counts[0]);
  // Over every rank, in one MAX: each exchange's last begin, last end and
  // first end (negated), and the backward pass's last end.
  const size_t n = stepBegins.size();
  std::vector<double> extremes(stepBegins);
  extremes.insert(extremes.end(), stepEnds.begin(), stepEnds.end());
  for (double end : stepEnds)
    extremes.push_back(-end);
  extremes.insert(extremes.end(), stepBackwardEnds.begin(),
                  stepBackwardEnds.end());
  dtrain_rt_all_reduce(comm, extremes.data(), int64_t(extremes.size()),
                       DTRAIN_RT_F64, DTRAIN_RT_MAX);
  const double *lastBegins = extremes.data(), *lastEnds = lastBegins + n,
               *negatedFirstEnds = lastEnds + n,
               *backwardEnds = negatedFirstEnds + n;
  const size_t perStep = bytes.size();
  const bool turns = host.ranks > host.cores;
  std::vector<double> stepTimes(n);
  for (size_t i = 0; i < n; ++i) {
    const double end = (i + 1) % perStep ? lastEnds[i] : -negatedFirstEnds[i];
    stepTimes[i] = std::max(
        turns ? end - lastBegins[i] : stepEnds[i] - stepBegins[i], 0.0);
  }
  // The cost inside the steps (an exchange there also waits for the
  // slowest rank, and shares the cores with the computation) when their
  // sizes span a range, else the timed one. Every rank takes the slowest
  // rank's fit.
  const std::optional<CostLine> inSteps =
      fitSpannedLine(samplesOf(stepSizes, stepTimes));
  const CostLine cost = inSteps ? *inSteps : fitLine(samplesOf(sizes, times));
  // The same fit to the exchanges that every rank ended before every
  // rank's backward pass had ended, and to those that every rank began
  // after it, where their sizes span a range: beside the computation, and
  // alone (a backlog, or the last ones), as a step's last bucket. Beside a
  // computation that fills the cores, an exchange waits for its threads'
  // turns on them at every message (4-20 ms each on 2 ranks per core,
  // against 0.1 ms alone). The all-reduces timed after training ran
  // alone too, but each is the fastest of its repeats, back to back,
  // where these are the steps' own. Each exchange of the step is one
  // sample, its mean over the steps where it ran so, which the profile
  // also writes: the planners refit these lines to the samples of several
  // profiles (of merged trainers, whose buckets are larger).
  // Per exchange of the step: its mean seconds within the backward pass
  // (the first PERSTEP), and after it (the next PERSTEP), and over how many
  // steps. Every rank counts the same steps, from the same maxima, and
  // takes the slowest rank's means.
  std::vector<double> meanSeconds(2 * perStep, 0), stepCounts(2 * perStep, 0);
  for (size_t i = 0; i < stepTimes.size(); ++i) {
    const bool within = lastEnds[i] <= backwardEnds[i];
    if (!within && lastBegins[i] < backwardEnds[i])
      continue; // straddles the backward pass's end
    const size_t slot = (within ? 0 : perStep) + i % perStep;
    meanSeconds[slot] += stepTimes[i];
    stepCounts[slot] += 1;
  }
  for (size_t slot = 0; slot < meanSeconds.size(); ++slot)
    meanSeconds[slot] /= std::max(stepCounts[slot], 1.0);
  dtrain_rt_all_reduce(comm, meanSeconds.data(), int64_t(meanSeconds.size()),
                       DTRAIN_RT_F64, DTRAIN_RT_MAX);
  auto samplesFrom = [&](size_t first) {
    std::vector<LineSample> samples;
    for (size_t i = 0; i < perStep; ++i)
      if (stepCounts[first + i] > 0)
        samples.push_back(
            {double(bytes[i]), meanSeconds[first + i], stepCounts[first + i]});
    return samples;
  };
  const std::vector<LineSample> withinSamples = samplesFrom(0),
                                aloneSamples = samplesFrom(perStep);
  const std::optional<CostLine> withinLine = fitSpannedLine(withinSamples),
                                aloneLine = fitSpannedLine(aloneSamples);
  double mainLine[2] = {cost.startup, cost.perByte};
  dtrain_rt_all_reduce(comm, mainLine, 2, DTRAIN_RT_F64, DTRAIN_RT_MAX);
  const double startup = mainLine[0], perByte = mainLine[1];
  // The CPU time an exchange takes on its thread, the mean rank's: where
  // the computing threads fill the cores, it is taken from the computation.
  const CostLine cpuFit = fitLine(samplesOf(stepSizes, stepCpus));
  // And the computing thread's, to submit it and wait for it.
  double cpu[3] = {cpuFit.startup / comm->size, cpuFit.perByte / comm->size,
                   callerCpuSum / std::max(callerCount, 1.0) / comm->size};
  dtrain_rt_all_reduce(comm, cpu, 3, DTRAIN_RT_F64, DTRAIN_RT_SUM);
  const double selectSpeed =
      timeSelection(comm, std::max<int64_t>(payload / 4, 1024));
  if (comm->rank != 0)
    return;

  std::string json = "{\n  \"ranks\": " + std::to_string(comm->size) +
                     ",\n  \"steps\": " + std::to_string(steps) +
                     ",\n  \"cost_from\": \"" +
                     (inSteps ? "exchanges in the steps" : "timed all-reduces") +
                     "\"";
  char number[64];
  // Appends "KEY": VALUE to the object.
  auto field = [&](const char *key, double value) {
    std::snprintf(number, sizeof number, "%.9g", value);
    json += ",\n  \"" + std::string(key) + "\": " + number;
  };
  field("startup_s", startup);
  field("per_byte_s", perByte);
  if (withinLine) {
    field("backward_startup_s", withinLine->startup);
    field("backward_per_byte_s", withinLine->perByte);
  }
  if (aloneLine) {
    field("alone_startup_s", aloneLine->startup);
    field("alone_per_byte_s", aloneLine->perByte);
  }
  appendSamples(json, "backward_exchanges", withinSamples);
  appendSamples(json, "alone_exchanges", aloneSamples);
  field("exchange_cpu_startup_s", cpu[0]);
  field("exchange_cpu_per_byte_s", cpu[1]);
  field("exchange_caller_cpu_s", cpu[2]);
  // Where the computing threads fill the cores (computationSeconds), the
  // CPU time times ranks per core, not the wall time even where it is the
  // longer: that also holds the communication threads' time, which the
  // unmerged exchanges take from the computation (a third of a core each
  // on the emulated cluster) and merged ones, after it, do not. Wall time
  // made merged plans' predictions up to 1.5x too long at 2 ranks per
  // core, and up to 2x at one rank per core.
  auto computation = [&](double wall, double cpuSeconds) {
    return computationSeconds(host, wall, cpuSeconds) / double(steps);
  };
  json += ",\n  \"compute_s\": [";
  for (size_t i = 0; i < computeSums.size(); ++i) {
    std::snprintf(number, sizeof number, "%s%.9g", i ? ", " : "",
                  computation(computeSums[i], computeCpuSums[i]));
    json += number;
  }
  json += "]";
  field("tail_s", computation(tailSum, tailCpuSum));
  json += ",\n  \"exchange_bytes\": [";
  for (size_t i = 0; i < bytes.size(); ++i)
    json += (i ? ", " : "") + std::to_string(bytes[i]);
  json += "],\n  \"allreduce_bytes\": [";
  for (size_t i = 0; i < sizes.size(); ++i)
    json += (i ? ", " : "") + std::to_string(int64_t(sizes[i]));
  json += "],\n  \"allreduce_s\": [";
  for (size_t i = 0; i < times.size(); ++i) {
    std::snprintf(number, sizeof number, "%s%.9g", i ? ", " : "", times[i]);
    json += number;
  }
  json += "]";
  field("select_elements_per_s", selectSpeed);
  json += ",\n  \"host_ranks\": " + std::to_string(host.ranks) +
          ",\n  \"host_threads\": " + std::to_string(host.threads) +
          ",\n  \"host_cores\": " + std::to_string(host.cores) + "\n}\n";

  writeFileAtomically(path, json, "--profile");
}
