//===- Comm.cpp - MPI setup, communicators and fatal errors ---------------===//
//
// Lazy initialization (every C ABI entry point calls ensureInitialized), the
// world communicator, finalization, the cross-rank argument check of every
// collective, and the one way the runtime reports an error: print
// "dtrain-rt: rank R: ..." and MPI_Abort the whole job.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

using namespace dtrain::rt;

namespace {

std::once_flag initOnce;
std::atomic<bool> initialized{false};
std::atomic<bool> finalized{false};
/// True when the runtime called MPI_Init_thread (and so must finalize).
bool ownsMPI = false;
/// MPI provides MPI_THREAD_MULTIPLE (the communication thread needs it).
std::atomic<bool> threadMultiple{false};
dtrain_rt_comm worldComm{MPI_COMM_NULL, -1, 0};

/// Rank to print in messages: COMM's, else the world's, else -1 (unknown).
int messageRank(dtrain_rt_comm_t *comm) {
  if (comm && comm->rank >= 0)
    return comm->rank;
  return worldComm.rank;
}

void printError(int rank, const char *message) {
  size_t len = std::strlen(message);
  while (len > 0 && message[len - 1] == '\n')
    --len;
  if (rank >= 0)
    std::fprintf(stderr, "dtrain-rt: rank %d: %.*s\n", rank, int(len), message);
  else
    std::fprintf(stderr, "dtrain-rt: rank ?: %.*s\n", int(len), message);
  std::fflush(stderr);
}

/// Failure before MPI can abort the job (or after it is finalized): only
/// this process can be stopped.
[[noreturn]] void dieLocally(const char *message) {
  printError(worldComm.rank, message);
  std::abort();
}

std::atomic<bool> checksWanted{true};

/// The environment is read once per process.
bool collectiveChecksEnabled() {
  static const bool enabled = readSwitchEnv(
      "DTRAIN_CHECK_COLLECTIVES", "disable the cross-rank argument check",
      "enable it");
  return enabled && checksWanted.load(std::memory_order_relaxed);
}

/// Renders V, the value of FIELD, for a message: "4 (i64)".
std::string describe(const AgreedValue &field, int64_t v) {
  std::string s = std::to_string(v);
  return field.describe ? s + " (" + field.describe(v) + ")" : s;
}

void finalizeAtExit() { dtrain_rt_finalize(); }

void initialize(int *argc, char ***argv) {
  int mpiFinalized = 0;
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized)
    dieLocally("MPI was finalized before the dtrain runtime was initialized");

  int mpiInitialized = 0;
  MPI_Initialized(&mpiInitialized);
  int provided = MPI_THREAD_SINGLE;
  if (!mpiInitialized) {
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
      dieLocally("MPI_Init_thread failed");
    ownsMPI = true;
  } else {
    MPI_Query_thread(&provided);
  }
  threadMultiple.store(provided == MPI_THREAD_MULTIPLE);

  // From here on MPI errors on the world communicator come back as codes
  // and go through checkMPI, which names the call before aborting.
  worldComm.mpi = MPI_COMM_WORLD;
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_set_errhandler, MPI_COMM_WORLD,
                  MPI_ERRORS_RETURN);
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_rank, MPI_COMM_WORLD, &worldComm.rank);
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_size, MPI_COMM_WORLD, &worldComm.size);
  createReductionOps(&worldComm);
  // The ranks on this node share its CPUs (computeThreads).
  MPI_Comm node;
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_split_type, MPI_COMM_WORLD,
                  MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nodeRanks = 1;
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_size, node, &nodeRanks);
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_free, &node);
  setNodeRanks(nodeRanks);
  if (ownsMPI)
    std::atexit(finalizeAtExit);
  initialized.store(true, std::memory_order_release);
}

} // namespace

//===--- Internal API -----------------------------------------------------===//

void dtrain::rt::ensureInitialized() {
  if (__builtin_expect(finalized.load(std::memory_order_relaxed), 0))
    dieLocally("the dtrain runtime was used after dtrain_rt_finalize");
  std::call_once(initOnce, initialize, nullptr, nullptr);
}

bool dtrain::rt::readSwitchEnv(const char *name, const char *whenOff,
                               const char *whenOn) {
  const char *value = std::getenv(name);
  if (!value || !*value || !std::strcmp(value, "1"))
    return true;
  if (!std::strcmp(value, "0"))
    return false;
  fatal(nullptr,
        "%s='%s' is not valid (accepted: 0 to %s, 1 or unset to %s)", name,
        value, whenOff, whenOn);
}

bool dtrain::rt::mpiThreadMultiple() { return threadMultiple.load(); }

void dtrain::rt::fatal(dtrain_rt_comm_t *comm, const char *format, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  dtrain_rt_abort(comm, buffer);
}

void dtrain::rt::mpiFailed(int rc, const char *call, dtrain_rt_comm_t *comm) {
  char text[MPI_MAX_ERROR_STRING + 1] = "unknown MPI error";
  int len = 0;
  if (MPI_Error_string(rc, text, &len) == MPI_SUCCESS)
    text[len] = '\0';
  fatal(comm, "%s failed: %s", call, text);
}

void dtrain::rt::setCollectiveChecks(bool enabled) {
  checksWanted.store(enabled, std::memory_order_relaxed);
}

void dtrain::rt::checkAgreement(dtrain_rt_comm_t *comm, const char *what,
                                std::initializer_list<AgreedValue> values) {
  if (!collectiveChecksEnabled() || comm->size == 1)
    return;
  const std::vector<AgreedValue> fields(values);
  const size_t n = fields.size();
  // MAX over [x, -x] gives every rank max(x) and -min(x).
  std::vector<int64_t> local(n), both(2 * n);
  for (size_t i = 0; i < n; ++i) {
    local[i] = fields[i].value;
    both[i] = local[i];
    both[n + i] = -local[i];
  }
  DTRAIN_MPI_CALL(comm, MPI_Allreduce, MPI_IN_PLACE, both.data(), int(2 * n),
                  MPI_INT64_T, MPI_MAX, comm->mpi);
  bool same = true;
  for (size_t i = 0; i < n; ++i)
    same &= both[i] == -both[n + i];
  if (same)
    return;

  // Every rank got here; gather all values to name the ranks involved.
  const int size = comm->size;
  std::vector<int64_t> all(size_t(size) * n);
  DTRAIN_MPI_CALL(comm, MPI_Allgather, local.data(), int(n), MPI_INT64_T,
                  all.data(), int(n), MPI_INT64_T, comm->mpi);
  if (comm->rank != 0) {
    // Rank 0 prints the message and aborts the job; should that somehow
    // not take this rank down, abort on our own after a grace period.
    std::this_thread::sleep_for(std::chrono::seconds(10));
    fatal(comm, "%s arguments differ across ranks (see rank 0)", what);
  }
  std::string message, names;
  for (size_t i = 0; i < n; ++i) {
    names += std::string(i == 0 ? "" : i + 1 == n ? " and " : ", ") +
             fields[i].name;
    const int64_t max = both[i], min = -both[n + i];
    if (min == max)
      continue;
    int minRank = 0, maxRank = 0;
    while (all[size_t(minRank) * n + i] != min)
      ++minRank;
    while (all[size_t(maxRank) * n + i] != max)
      ++maxRank;
    if (!message.empty())
      message += "; ";
    message += std::string(fields[i].name) + " ranges " +
               std::to_string(min) + ".." + std::to_string(max) + " (rank " +
               std::to_string(minRank) + ": " + describe(fields[i], min) +
               ", rank " + std::to_string(maxRank) + ": " +
               describe(fields[i], max) + ")";
  }
  fatal(comm,
        "%s arguments differ across ranks: %s; every rank must pass the "
        "same %s",
        what, message.c_str(), names.c_str());
}

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_init(int *argc, char ***argv) {
  if (finalized.load(std::memory_order_relaxed))
    dieLocally("dtrain_rt_init called after dtrain_rt_finalize");
  std::call_once(initOnce, initialize, argc, argv);
}

void dtrain_rt_finalize(void) {
  // Not initialized: nothing to do. MPI owned by the host program: the host
  // finalizes it, and the runtime stays usable until then.
  if (!initialized.load(std::memory_order_acquire) || !ownsMPI)
    return;
  if (finalized.exchange(true))
    return; // explicit call followed by the atexit one
  stopCommThread();
  int mpiFinalized = 0;
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized)
    return;
  freeReductionOps();
  MPI_Finalize();
}

dtrain_rt_comm_t *dtrain_rt_comm_world(void) {
  ensureInitialized();
  return &worldComm;
}

int32_t dtrain_rt_comm_rank(dtrain_rt_comm_t *comm) {
  ensureInitialized();
  if (!comm)
    fatal(nullptr, "dtrain_rt_comm_rank: comm is NULL (use "
                   "dtrain_rt_comm_world())");
  return comm->rank;
}

int32_t dtrain_rt_comm_size(dtrain_rt_comm_t *comm) {
  ensureInitialized();
  if (!comm)
    fatal(nullptr, "dtrain_rt_comm_size: comm is NULL (use "
                   "dtrain_rt_comm_world())");
  return comm->size;
}

void dtrain_rt_abort(dtrain_rt_comm_t *comm, const char *message) {
  if (!message)
    message = "(no message)";
  int mpiInitialized = 0, mpiFinalized = 0;
  MPI_Initialized(&mpiInitialized);
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized)
    dieLocally(message);
  if (!mpiInitialized)
    ensureInitialized(); // MPI is needed to take the other ranks down
  printError(messageRank(comm), message);
  MPI_Comm mpiComm =
      comm && comm->mpi != MPI_COMM_NULL ? comm->mpi : MPI_COMM_WORLD;
  MPI_Abort(mpiComm, 1);
  std::_Exit(1); // MPI_Abort does not return; be sure of it
}
