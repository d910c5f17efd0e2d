//===- CommThread.cpp - the communication thread --------------------------===//
//
// Every collective of the runtime runs on one communication thread, in the
// order it was submitted, so that a started all-reduce makes progress while
// the caller computes (MPI progresses a nonblocking collective only inside
// MPI calls, which compiled code does not make between start and wait).
// One FIFO also keeps the order of collectives the same on every rank,
// whatever mix of blocking and started ones a program issues.
//
// When MPI does not provide MPI_THREAD_MULTIPLE (a host program that
// initialized MPI itself with a lower level) or DTRAIN_COMM_THREAD=0,
// collectives run inline in the submitting call instead.
//
// The thread also keeps the statistics and timeline events that trainers
// report (commStats, takeTrace). A collective whose buffers a device
// writes asynchronously waits for the buffer fence recorded when it was
// submitted (dtrain_rt_set_buffer_fence) before it runs. An all-reduce or
// a broadcast across one rank leaves its buffer as it is: it is counted,
// and neither waits nor runs.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <mutex>
#include <pthread.h>
#include <thread>

using namespace dtrain::rt;

namespace {

/// How long a wait may block before the job is stopped: a rank that died
/// or stopped without its launcher noticing must not hang the others.
double readTimeoutEnv() {
  const char *value = std::getenv("DTRAIN_COLLECTIVE_TIMEOUT");
  if (!value || !*value)
    return 600;
  char *end = nullptr;
  const double seconds = std::strtod(value, &end);
  if (*end || !(seconds >= 0))
    fatal(nullptr,
          "DTRAIN_COLLECTIVE_TIMEOUT='%s' is not valid (accepted: seconds "
          ">= 0, 0 for no limit; unset means 600)",
          value);
  return seconds;
}

const auto clockStart = std::chrono::steady_clock::now();

/// Queue, statistics and trace; one mutex guards them all (collectives are
/// few per step, so it is never contended for long).
struct State {
  std::mutex mutex;
  std::condition_variable submitted, completed;
  std::deque<Collective *> queue;
  std::thread thread;
  bool running = false, stopping = false;
  /// Collectives submitted and not yet run.
  int64_t inFlight = 0;
  CommStats stats;
  bool tracing = false;
  std::vector<TraceEvent> trace;
  /// The CPU seconds of the collectives run inline, on the threads that
  /// compute, and those threads' in the calls that submit collectives and
  /// wait for them (while tracing): not the computation's.
  double inlineCpuSeconds = 0, callerCpuSeconds = 0;
  int64_t sequence = 0;
  /// dtrain_rt_set_buffer_fence's; installed only while no collective is
  /// in flight, so a queued collective's fence is this one's.
  dtrain_rt_buffer_fence_t fence = {};
};

State &state() {
  // Never destroyed: a host program may exit while the thread sleeps.
  static State *s = new State;
  return *s;
}

/// Seconds on CLOCK.
double cpuClockSeconds(clockid_t clock) {
  timespec now;
  if (clock_gettime(clock, &now) != 0)
    return 0;
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

/// Adds the calling thread's CPU seconds since BEGIN, less EXCLUDED, to C's
/// and to the callers' total (while tracing: BEGIN >= 0); S's mutex held.
void addCallerCpu(State &s, Collective *c, double begin, double excluded = 0) {
  if (begin < 0)
    return;
  const double seconds =
      cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) - begin - excluded;
  c->callerCpu += seconds;
  s.callerCpuSeconds += seconds;
}

/// Runs C and records it; called on the communication thread (or inline).
void execute(State &s, Collective *c) {
  if (c->fence)
    s.fence.wait(s.fence.context, c->fence);
  c->started = clockSeconds();
  const double cpuBegin = cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  if (!c->leavesBufferAlone())
    c->run();
  c->cpuSeconds = cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) - cpuBegin;
  c->finished = clockSeconds();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (std::this_thread::get_id() != s.thread.get_id())
    s.inlineCpuSeconds += c->cpuSeconds;
  s.inFlight -= 1;
  s.stats.collectives += 1;
  s.stats.payloadBytes += c->payloadBytes;
  s.stats.sentBytes += c->sentBytes;
  if (c->kind == Collective::SparseAllReduce) {
    s.stats.sparseElements += c->sparseElements;
    s.stats.selectedElements += c->selectedElements;
    s.stats.sparseSentBytes += c->sentBytes;
  }
  s.stats.busySeconds += c->finished - c->started;
  if (s.tracing)
    s.trace.push_back({c->label(), TraceEvent::CommThread, c->started,
                       c->finished, c->payloadBytes, c->queued, c->queuedCpu,
                       c->cpuSeconds});
  c->done = true;
}

void loop(State &s) {
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.submitted.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
    if (s.queue.empty())
      return; // stopping, and nothing left
    Collective *c = s.queue.front();
    s.queue.pop_front();
    lock.unlock();
    execute(s, c);
    s.completed.notify_all();
    lock.lock();
  }
}

} // namespace

double dtrain::rt::clockSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       clockStart)
      .count();
}

double dtrain::rt::computeCpuSeconds() {
  State &s = state();
  double comm = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    clockid_t clock;
    if (s.running &&
        pthread_getcpuclockid(s.thread.native_handle(), &clock) == 0)
      comm = cpuClockSeconds(clock);
    comm += s.inlineCpuSeconds + s.callerCpuSeconds;
  }
  return cpuClockSeconds(CLOCK_PROCESS_CPUTIME_ID) - comm;
}

void dtrain::rt::submitCollective(Collective *c) {
  static const bool useThread = readSwitchEnv(
      "DTRAIN_COMM_THREAD", "run collectives inline in the calling thread",
      "use the communication thread");
  State &s = state();
  c->queued = clockSeconds();
  const int P = c->comm->size;
  // What each rank sends in a bandwidth-optimal all-reduce (ring: P-1
  // reduce-scatter and P-1 all-gather steps of M/P bytes); a broadcast's
  // root sends the payload once per other rank in a flat tree, once in a
  // pipelined one: count it once.
  if (c->kind == Collective::AllReduce)
    c->sentBytes = 2 * (P - 1) * c->payloadBytes / P;
  else if (c->kind == Collective::Broadcast)
    c->sentBytes = P > 1 ? c->payloadBytes : 0;
  bool tracing;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    c->sequence = s.sequence++;
    s.inFlight += 1;
    tracing = s.tracing;
  }
  // What this call and the wait for C spend (the submitting thread's side
  // of an exchange, which merged exchanges pay once per bucket), and what
  // the computation spent until now. That reading holds a little of this
  // call, which the next one leaves out again.
  const double callerBegin =
      tracing ? cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) : -1;
  if (tracing) // computeCpuSeconds takes the mutex
    c->queuedCpu = computeCpuSeconds();
  // A collective that leaves its buffer alone need not wait for its
  // writers: a --target=cuda trainer on one GPU would otherwise wait for
  // the GPU at each.
  if (s.fence.record && !c->leavesBufferAlone())
    c->fence = s.fence.record(s.fence.context);
  if (!useThread || !mpiThreadMultiple() || P == 1) {
    execute(s, c);
    // Less run()'s CPU time, which inlineCpuSeconds counts.
    std::lock_guard<std::mutex> lock(s.mutex);
    addCallerCpu(s, c, callerBegin, c->cpuSeconds);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.running) {
      s.running = true;
      s.thread = std::thread(loop, std::ref(s));
    }
    s.queue.push_back(c);
  }
  s.submitted.notify_one();
  std::lock_guard<std::mutex> lock(s.mutex);
  addCallerCpu(s, c, callerBegin);
}

void dtrain::rt::waitCollective(Collective *c) {
  State &s = state();
  const double begin = clockSeconds();
  const double callerBegin =
      c->queuedCpu >= 0 ? cpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) : -1;
  static const double timeout = readTimeoutEnv();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (timeout == 0) {
    s.completed.wait(lock, [&] { return c->done; });
  } else if (!s.completed.wait_for(lock,
                                   std::chrono::duration<double>(timeout),
                                   [&] { return c->done; })) {
    lock.unlock();
    fatal(c->comm,
          "%s of %lld bytes did not complete within %g s "
          "(DTRAIN_COLLECTIVE_TIMEOUT): another rank stopped or died; "
          "stopping the job",
          c->label().c_str(), (long long)c->payloadBytes, timeout);
  }
  const double end = clockSeconds();
  s.stats.blockedSeconds += end - begin;
  if (s.tracing)
    s.trace.push_back({kWaitSpanPrefix + c->label(), TraceEvent::MainThread,
                       begin, end, c->payloadBytes, -1});
  addCallerCpu(s, c, callerBegin);
  if (s.tracing && callerBegin >= 0)
    s.trace.back().cpu = c->callerCpu;
}

bool dtrain::rt::collectiveDone(Collective *c) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return c->done;
}

bool dtrain::rt::collectivesInFlight() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.inFlight > 0;
}

void dtrain::rt::checkNoCollectiveInFlight(const char *fn,
                                           const char *installing) {
  if (collectivesInFlight())
    fatal(nullptr,
          "%s: a collective is in flight (install %s before the first "
          "collective, or once every started one has been waited for)",
          fn, installing);
}

void dtrain::rt::checkEveryFunctionSet(
    const char *fn, const char *owner,
    std::initializer_list<std::pair<const char *, bool>> functions) {
  for (const auto &[name, set] : functions)
    if (!set)
      fatal(nullptr, "%s: %s %s is NULL (set every function)", fn, owner,
            name);
}

void dtrain::rt::stopCommThread() {
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.running)
      return;
    s.stopping = true;
  }
  s.submitted.notify_one();
  s.thread.join();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.running = s.stopping = false;
}

CommStats dtrain::rt::takeCommStats() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CommStats stats = s.stats;
  s.stats = CommStats{};
  return stats;
}

void dtrain::rt::setTracing(bool enabled) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tracing = enabled;
}

void dtrain::rt::traceSpan(std::string name, double begin, double end) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.tracing)
    s.trace.push_back(
        {std::move(name), TraceEvent::MainThread, begin, end, -1, -1});
}

void dtrain::rt::resetCollectiveSequence() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sequence = 0;
}

std::vector<TraceEvent> dtrain::rt::takeTrace() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<TraceEvent> trace;
  trace.swap(s.trace);
  return trace;
}

std::string Collective::label() const {
  const char *name = kind == AllReduce   ? "all_reduce"
                     : kind == Broadcast ? "broadcast"
                                         : "sparse_all_reduce";
  return std::string(name) + " #" + std::to_string(sequence);
}

void dtrain_rt_set_buffer_fence(const dtrain_rt_buffer_fence_t *fence) {
  static constexpr const char *fn = "dtrain_rt_set_buffer_fence";
  checkNoCollectiveInFlight(fn, "a buffer fence");
  if (fence)
    checkEveryFunctionSet(fn, "the fence's",
                          {{"record", fence->record}, {"wait", fence->wait}});
  state().fence = fence ? *fence : dtrain_rt_buffer_fence_t{};
}

bool dtrain::rt::deviceComputes() { return state().fence.record != nullptr; }
