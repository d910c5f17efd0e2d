//===- Comm.cpp - MPI setup, communicators and fatal errors ---------------===//
//
// Lazy initialization (every C ABI entry point calls ensureInitialized), the
// world communicator, finalization, and the one way the runtime reports an
// error: print "dtrain-rt: rank R: ..." and MPI_Abort the whole job.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace dtrain::rt;

namespace {

std::once_flag initOnce;
std::atomic<bool> initialized{false};
std::atomic<bool> finalized{false};
/// True when the runtime called MPI_Init_thread (and so must finalize).
bool ownsMPI = false;
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
  }

  // From here on MPI errors on the world communicator come back as codes
  // and go through checkMPI, which names the call before aborting.
  worldComm.mpi = MPI_COMM_WORLD;
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_set_errhandler, MPI_COMM_WORLD,
                  MPI_ERRORS_RETURN);
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_rank, MPI_COMM_WORLD, &worldComm.rank);
  DTRAIN_MPI_CALL(&worldComm, MPI_Comm_size, MPI_COMM_WORLD, &worldComm.size);
  // Whatever thread level MPI provides is accepted: the runtime itself
  // calls MPI from the calling thread only.
  (void)provided;

  createReductionOps(&worldComm);
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
