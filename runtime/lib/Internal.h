//===- Internal.h - dtrain runtime internals --------------------*- C++ -*-===//
//
// Shared by the runtime's sources; not installed, not part of the C ABI.
// Every source file of the runtime includes this header first, so that the
// C ABI declarations below get default visibility while the library itself
// is built with -fvisibility=hidden.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_INTERNAL_H
#define DTRAIN_RUNTIME_INTERNAL_H

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

/// Marks the few internal functions that the runtime's own tests call.
#define DTRAIN_RT_TEST_API __attribute__((visibility("default")))

/// Marks the internal functions that libdtrain_runtime_cuda, built from
/// the same tree, calls too: the heavy-op kernels' argument checks
/// (Kernels.h) and what they report failures with, so that its kernels
/// accept the same calls and reject the others with the same messages.
#define DTRAIN_RT_CUDA_SHARED_API __attribute__((visibility("default")))

struct dtrain_rt_comm {
  MPI_Comm mpi;
  int rank;
  int size;
};

namespace dtrain::rt {

/// Initializes the runtime on first use (dtrain_rt_init(NULL, NULL)); aborts
/// when the runtime is used after dtrain_rt_finalize.
void ensureInitialized();

/// The on/off environment variable NAME: 1 or unset is on, 0 off; any
/// other value aborts, saying what 0 and 1 do (WHENOFF, WHENON).
bool readSwitchEnv(const char *name, const char *whenOff, const char *whenOn);

/// Whether MPI provides MPI_THREAD_MULTIPLE (known once initialized).
bool mpiThreadMultiple();

/// Prints "dtrain-rt: rank R: <formatted message>" and aborts every rank of
/// COMM (the world when COMM is null).
[[noreturn]] DTRAIN_RT_CUDA_SHARED_API void fatal(dtrain_rt_comm_t *comm,
                                                  const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// Reports a failed MPI call ("<call> failed: <MPI_Error_string>") and aborts.
[[noreturn]] DTRAIN_RT_TEST_API void mpiFailed(int rc, const char *call,
                                               dtrain_rt_comm_t *comm);

inline void checkMPI(int rc, const char *call, dtrain_rt_comm_t *comm) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0))
    mpiFailed(rc, call, comm);
}

/// Calls MPI function FN with the remaining arguments and aborts the job
/// with a message naming FN when it does not return MPI_SUCCESS.
#define DTRAIN_MPI_CALL(comm, fn, ...)                                         \
  ::dtrain::rt::checkMPI(fn(__VA_ARGS__), #fn, (comm))

/// One argument of a collective that every rank must pass alike; DESCRIBE
/// (optional) names a value in messages.
struct AgreedValue {
  const char *name;
  int64_t value;
  const char *(*describe)(int64_t) = nullptr;
};

/// Aborts the job with a message naming the ranks and values when the
/// ranks of COMM disagree on VALUES (WHAT names the collective). Costs one
/// small MPI_Allreduce; nothing with one rank or DTRAIN_CHECK_COLLECTIVES=0
/// (read once per process).
void checkAgreement(dtrain_rt_comm_t *comm, const char *what,
                    std::initializer_list<AgreedValue> values);

/// Turns the check off (or back on, unless DTRAIN_CHECK_COLLECTIVES=0): a
/// trainer does once its first step has shown that every rank issues the
/// same collectives, since the later steps run the same code.
void setCollectiveChecks(bool enabled);

//===--- Element types and reductions -------------------------------------===//

/// A DTRAIN_RT_* element type that collectives accept (the float types).
inline bool isValidDType(int32_t dtype) {
  return dtype >= DTRAIN_RT_F32 && dtype <= DTRAIN_RT_BF16;
}
/// Any DTRAIN_RT_* element type (array files also take the integer and
/// bool types).
inline bool isKnownDType(int64_t dtype) {
  return dtype >= DTRAIN_RT_F32 && dtype <= DTRAIN_RT_BOOL;
}
inline bool isValidReduction(int32_t reduction) {
  return reduction >= DTRAIN_RT_SUM && reduction <= DTRAIN_RT_MAX;
}
inline bool isValidAlgorithm(int32_t algorithm) {
  return algorithm >= DTRAIN_RT_ALLREDUCE_DEFAULT &&
         algorithm <= DTRAIN_RT_ALLREDUCE_RING;
}

/// Names for messages ("f32", "mean", "ring", ...); "?" when invalid.
DTRAIN_RT_TEST_API const char *dtypeName(int64_t dtype);
DTRAIN_RT_TEST_API const char *reductionName(int64_t reduction);
DTRAIN_RT_TEST_API const char *algorithmName(int64_t algorithm);

/// Size in bytes of one element of DTYPE; 0 when it is not a known type.
inline int64_t dtypeSize(int32_t dtype) {
  switch (dtype) {
  case DTRAIN_RT_F64:
  case DTRAIN_RT_I64:
    return 8;
  case DTRAIN_RT_F32:
  case DTRAIN_RT_I32:
    return 4;
  case DTRAIN_RT_F16:
  case DTRAIN_RT_BF16:
    return 2;
  case DTRAIN_RT_BOOL:
    return 1;
  default:
    return 0;
  }
}

/// The MPI datatype and operation that all-reduce DTYPE with REDUCTION
/// (MEAN reduces with the SUM op; see finishReduction). The 16-bit types
/// travel as MPI_UINT16_T and reduce with the runtime's own commutative ops,
/// which compute in f32 and round to nearest even.
struct MPIReduction {
  MPI_Datatype type;
  MPI_Op op;
};
MPIReduction mpiReduction(int32_t dtype, int32_t reduction);

/// INOUT[i] = INOUT[i] (op) IN[i] for N elements, op = SUM (also for MEAN)
/// or MAX; 16-bit types compute in f32 and round. MAX propagates NaN.
void reduceLocal(int32_t dtype, int32_t reduction, void *inout, const void *in,
                 int64_t n);

/// The post-processing every all-reduce ends with, whatever the algorithm:
/// for MEAN, divides the N summed elements by COMM_SIZE (16-bit: in f32,
/// rounded back). Nothing for SUM and MAX.
void finishReduction(int32_t dtype, int32_t reduction, void *buffer, int64_t n,
                     int commSize);

/// Creates / frees the user-defined MPI ops behind mpiReduction.
void createReductionOps(dtrain_rt_comm_t *comm);
void freeReductionOps();

//===--- Message sizes ----------------------------------------------------===//

/// The most elements (all-reduce) or bytes (the other calls) one transport
/// call carries, below 2^31 as the transport ABI promises (MPI counts are
/// int): longer all-reduces, broadcasts and ring steps are split. INT_MAX
/// unless a test lowered it.
int64_t maxMessageCount();
DTRAIN_RT_TEST_API void setMaxMessageCountForTesting(int64_t count);

//===--- Transport (Transport.cpp) ----------------------------------------===//

/// A transport's functions with its context bound.
class Transport {
public:
  explicit Transport(const dtrain_rt_transport_t &t) : t(t) {}
  int64_t ringFromBytes() const { return t.ring_from_bytes; }
  bool reducesMean() const { return t.reduces_mean != 0; }
  void allReduce(dtrain_rt_comm_t *comm, void *buffer, int64_t count,
                 int32_t dtype, int32_t reduction) const {
    t.all_reduce(t.context, comm, buffer, count, dtype, reduction);
  }
  void broadcast(dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
                 int32_t root) const {
    t.broadcast(t.context, comm, buffer, bytes, root);
  }
  void allGather(dtrain_rt_comm_t *comm, const void *send, int64_t bytes,
                 void *recv) const {
    t.all_gather(t.context, comm, send, bytes, recv);
  }
  void allGatherV(dtrain_rt_comm_t *comm, const void *send, void *recv,
                  const int64_t *bytes) const {
    t.all_gather_v(t.context, comm, send, recv, bytes);
  }
  void send(dtrain_rt_comm_t *comm, const void *buffer, int64_t bytes,
            int32_t peer) const {
    t.send(t.context, comm, buffer, bytes, peer);
  }
  void recv(dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
            int32_t peer) const {
    t.recv(t.context, comm, buffer, bytes, peer);
  }
  void sendRecv(dtrain_rt_comm_t *comm, const void *send, int64_t sendBytes,
                int32_t dest, void *recv, int64_t recvBytes,
                int32_t source) const {
    t.send_recv(t.context, comm, send, sendBytes, dest, recv, recvBytes,
                source);
  }

private:
  const dtrain_rt_transport_t &t;
};

/// What the collectives move their data through: the transport that
/// dtrain_rt_set_transport installed, MPI by default.
Transport transport();

//===--- Sparse exchange kernels (SparseKernels.cpp) ----------------------===//

/// What the sparse exchanges run their per-element work through: the table
/// that dtrain_rt_set_sparse_kernels installed, the CPU's by default.
const dtrain_rt_sparse_kernels_t &sparseKernels();

//===--- Algorithms -------------------------------------------------------===//

/// In-place ring all-reduce (reduce-scatter then all-gather over the
/// transport's send_recv to the ring neighbours), without MEAN's final
/// division. It passes over slices of P chunks of at most kRingChunkBytes.
///
/// Each step reduces a chunk that arrives into one that stays. Chunks
/// larger than a core's L2 cache (2 MiB here) stream both from memory at
/// every step: on 4 ranks over shared memory a 64 MiB all-reduce took 1.5x
/// as long in one pass as in slices, 32 MiB 1.4x; slices cost 2(P-1)
/// message latencies each (docs/benchmarks-allreduce.md).
constexpr int64_t kRingChunkBytes = 128 << 10;
void ringAllReduce(dtrain_rt_comm_t *comm, void *buffer, int64_t count,
                   int32_t dtype, int32_t reduction);

/// In-place all-reduce by the default algorithm for its size (the
/// transport's all-reduce below its ring_from_bytes, else the ring;
/// DTRAIN_ALLREDUCE overrides), without MEAN's final
/// division or the cross-rank check: for collectives that run one inside
/// their own request (a sparse exchange that sends everything).
void allReduceInPlace(dtrain_rt_comm_t *comm, void *buffer, int64_t count,
                      int32_t dtype, int32_t reduction);

//===--- The communication thread (CommThread.cpp) ------------------------===//

/// A collective that runs on the communication thread. The submitter owns
/// it and must not free it before waitCollective returns.
struct Collective {
  enum Kind { AllReduce, Broadcast, SparseAllReduce };
  Collective(Kind kind, dtrain_rt_comm_t *comm, int64_t payloadBytes)
      : kind(kind), comm(comm), payloadBytes(payloadBytes) {}
  virtual ~Collective() = default;
  /// The transfers; on the communication thread, in submission order.
  virtual void run() = 0;
  /// "all_reduce #3": the kind and the sequence number within the step.
  std::string label() const;
  /// Whether it leaves its buffer as it is: an all-reduce or a broadcast
  /// across one rank (in place), which then neither waits for the buffer
  /// fence nor runs; a sparse exchange still selects.
  bool leavesBufferAlone() const {
    return comm->size == 1 && kind != SparseAllReduce;
  }

  const Kind kind;
  dtrain_rt_comm_t *const comm;
  const int64_t payloadBytes;
  /// Bytes this rank sends; set when submitted (dense) or by run()
  /// (sparse, whose volume depends on what was selected).
  int64_t sentBytes = 0, sequence = 0;
  /// A sparse collective's dense element count and the entries this rank
  /// selected.
  int64_t sparseElements = 0, selectedElements = 0;
  double queued = 0, started = 0, finished = 0; // clockSeconds()
  /// computeCpuSeconds() when queued, while tracing (else -1).
  double queuedCpu = -1;
  /// While tracing: the CPU seconds the submitting thread spent in
  /// submitCollective, then also in waitCollective.
  double callerCpu = 0;
  /// The CPU seconds run() took on its thread (transfers, reductions and
  /// the waits' polling).
  double cpuSeconds = 0;
  /// What the buffer fence recorded when C was submitted (null without
  /// one); waited for before run().
  void *fence = nullptr;
  bool done = false; // guarded by the communication thread's mutex
};

/// Queues C behind every collective submitted before it (or runs it now,
/// see CommThread.cpp); waitCollective blocks until it has run.
void submitCollective(Collective *c);
void waitCollective(Collective *c);
/// Whether C has run (waitCollective would not block).
bool collectiveDone(Collective *c);
/// Whether a collective was submitted and has not run yet.
bool collectivesInFlight();

/// What installing a table of functions (a transport, the sparse kernels)
/// needs. FN is the installing C function, INSTALLING what it installs
/// ("a transport"), OWNER its functions' owner ("the transport's").
/// Aborts while a collective is in flight.
void checkNoCollectiveInFlight(const char *fn, const char *installing);
/// Aborts when one of FUNCTIONS (name, whether set) is NULL.
void checkEveryFunctionSet(
    const char *fn, const char *owner,
    std::initializer_list<std::pair<const char *, bool>> functions);
/// Joins the communication thread (before MPI_Finalize); it restarts on
/// the next submission.
void stopCommThread();

/// Seconds since the runtime was loaded (steady clock): the time base of
/// the statistics and of the timeline.
DTRAIN_RT_TEST_API double clockSeconds();
/// CPU seconds this process has used outside the collectives (on the
/// communication thread, or inline) and, while tracing, outside the calls
/// that submit them and wait for them: the computation's, on all its
/// threads.
DTRAIN_RT_TEST_API double computeCpuSeconds();
/// The threads a process computes on (oneDNN's OpenMP, the generated
/// code's parallel loops and the runtime's own parallel passes):
/// OMP_NUM_THREADS, else, as OpenMP does, the CPUs of the calling thread's
/// affinity mask, but no more than its share of the node's CPUs where
/// several ranks run on the node (setNodeRanks): mpirun binds the ranks of
/// a job of more than 2 to a whole socket, or none, each of which would
/// otherwise start a thread on every CPU of it.
DTRAIN_RT_TEST_API int computeThreads();
/// Records that RANKS processes of the job run on this node (dtrain_rt_init;
/// 0: as the MPI launcher says, as before MPI is initialized) and, where
/// OMP_NUM_THREADS is not set, gives the OpenMP runtime of the kernels
/// computeThreads() threads; returns the ranks recorded before.
DTRAIN_RT_TEST_API int setNodeRanks(int ranks);
/// Whether a device computes the step (a buffer fence is installed,
/// dtrain_rt_set_buffer_fence): the host's threads then only queue its
/// work.
bool deviceComputes();

/// Communication since the previous call: collectives finished, bytes
/// all-reduced or broadcast (payload) and sent by this rank in a
/// bandwidth-optimal algorithm, seconds the communication thread spent in
/// them, and seconds callers spent blocked waiting for them (the part of
/// the communication that was not hidden).
struct CommStats {
  int64_t collectives = 0, payloadBytes = 0, sentBytes = 0;
  /// Of the sparse collectives: dense elements, entries selected, bytes
  /// sent.
  int64_t sparseElements = 0, selectedElements = 0, sparseSentBytes = 0;
  double busySeconds = 0, blockedSeconds = 0;
};
DTRAIN_RT_TEST_API CommStats takeCommStats();

/// The name of the span in which the main thread waits for a collective:
/// this prefix, then the collective's label.
constexpr const char kWaitSpanPrefix[] = "wait ";

/// A span of the timeline: on the calling (main) thread or the
/// communication thread, BYTES >= 0 for collectives, QUEUED >= 0 the time
/// a collective was submitted.
struct TraceEvent {
  enum Thread { MainThread, CommThread };
  std::string name;
  Thread thread;
  double begin, end;
  int64_t bytes;
  double queued;
  /// A collective's computeCpuSeconds() when queued (-1: none).
  double queuedCpu = -1;
  /// A collective's CPU seconds on the thread that ran it; a wait span's,
  /// the waiting thread's to submit the collective and wait for it (-1:
  /// none).
  double cpu = -1;
};
/// Recording of the timeline is off until enabled.
DTRAIN_RT_TEST_API void setTracing(bool enabled);
/// Records a span of the main thread (when tracing).
DTRAIN_RT_TEST_API void traceSpan(std::string name, double begin, double end);
/// Restarts the collectives' sequence numbers (at each step).
DTRAIN_RT_TEST_API void resetCollectiveSequence();
/// The spans recorded since the previous call.
DTRAIN_RT_TEST_API std::vector<TraceEvent> takeTrace();

/// A clockSeconds() of this rank for one moment common to all ranks of
/// COMM: rank 0's clock at the call, carried over by the round trip with
/// rank 0 that took the least time of several (its clock and this rank's
/// then differ by what rank 0 read minus the trip's midpoint). Ranks that
/// leave a collective do not leave it together: with 2 ranks per core, a
/// rank's call can return most of a step after another's, so an origin
/// taken as they leave one misaligns their times by as much. Collective
/// over COMM, from the main thread while no collective is in flight. A
/// null COMM or one rank: clockSeconds().
DTRAIN_RT_TEST_API double alignedOrigin(dtrain_rt_comm_t *comm);

/// Gathers every rank's EVENTS to rank 0, which writes them to PATH as a
/// Chrome trace, times relative to ORIGIN (each rank's alignedOrigin());
/// throws a Failure (ArrayFile.h) on rank 0 when the file cannot be
/// written. Collective over COMM, from the main thread once every
/// collective has been waited for (Timeline.cpp). A null COMM: this
/// process alone, as rank 0.
void writeTimeline(dtrain_rt_comm_t *comm, const std::string &path,
                   const std::vector<TraceEvent> &events, double origin);

/// A machine as the ranks of a job share it: how many of them run on it,
/// the threads they compute on (computeThreads(), summed; none for a rank
/// whose device computes), and its cores (the union of their affinity
/// masks).
struct HostShare {
  int64_t ranks = 1, threads = 1, cores = 1;
  /// Whether the computing threads fill the cores: every other thread's
  /// CPU time, the communication threads' included, is then taken from
  /// the computation.
  bool computationFillsCores() const { return threads >= cores; }
};

/// The computation's seconds in a span of WALL seconds in which it used
/// CPUSECONDS of CPU time (computeCpuSeconds()), on a machine shared as
/// HOST. Where the computing threads fill the cores, its CPU time times
/// ranks per core (the machine's CPU time spread over its cores), even
/// where the wall time is longer: the rest went to the communication
/// threads, whose share a profile's plans differ in. Elsewhere its wall
/// time.
DTRAIN_RT_TEST_API double computationSeconds(const HostShare &host, double wall,
                                             double cpuSeconds);

/// A trainer's --profile (Profile.cpp): the computation before each
/// exchange of a step and after the last one, averaged over the steps
/// added (computationSeconds), the all-reduce cost fitted on the job's ranks
/// and the exchanges' CPU time, written as the JSON that
/// --dtrain-merge-gradients reads (profile=).
class DTRAIN_RT_TEST_API StepProfile {
public:
  /// ORIGIN: this rank's alignedOrigin(), which aligns the ranks' times.
  explicit StepProfile(double origin) : origin(origin) {}
  /// Adds the spans of one step that began at STEPBEGIN (clockSeconds()),
  /// STEPBEGINCPU (computeCpuSeconds()) and ended at STEPEND, STEPENDCPU.
  void addStep(const std::vector<TraceEvent> &events, double stepBegin,
               double stepBeginCpu, double stepEnd, double stepEndCpu);
  /// Times all-reduces of several sizes over COMM, fits the cost, and rank
  /// 0 writes PATH. Collective; throws a Failure (ArrayFile.h).
  void write(dtrain_rt_comm_t *comm, const std::string &path) const;

private:
  /// Per exchange, summed over the steps: the computation's seconds
  /// before it, and the CPU seconds it used then.
  std::vector<double> computeSums, computeCpuSums;
  /// Summed over the steps: the computation after the last exchange was
  /// queued (the updates), its seconds less the waits for the exchanges,
  /// and the CPU seconds it used.
  double tailSum = 0, tailCpuSum = 0;
  /// The computing thread's CPU seconds to submit and wait for the
  /// exchanges (the wait spans' cpu), summed, and how many there were.
  double callerCpuSum = 0, callerCount = 0;
  std::vector<int64_t> bytes;
  double origin;
  /// Every exchange of the steps: its bytes, when it began and ended on
  /// the communication thread (seconds from the origin), the CPU seconds
  /// it took there, and when its step's backward pass ended (its last
  /// exchange was queued).
  std::vector<double> stepSizes, stepBegins, stepEnds, stepCpus,
      stepBackwardEnds;
  int64_t steps = 0;
};

} // namespace dtrain::rt

/// What dtrain_rt_wait completes: any collective started through the C ABI.
struct dtrain_rt_request : dtrain::rt::Collective {
  using Collective::Collective;
};

#endif // DTRAIN_RUNTIME_INTERNAL_H
