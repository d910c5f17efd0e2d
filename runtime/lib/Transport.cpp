//===- Transport.cpp - what the collectives move their data through -------===//
//
// The installed transport (dtrain_rt_set_transport) and the default one,
// MPI: one MPI call on the communicator per transport call, the calls the
// collectives made before there were transports. Every size fits an MPI
// int count: the collectives keep them below 2^31 (maxMessageCount).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <utility>
#include <vector>

using namespace dtrain::rt;

namespace {

/// The tag of point-to-point messages: the communication thread runs one
/// collective at a time, so no other collective's message can match.
constexpr int kTag = 0x4454; // "DT"

void mpiAllReduce(void *, dtrain_rt_comm_t *comm, void *buffer, int64_t count,
                  int32_t dtype, int32_t reduction) {
  const MPIReduction r = mpiReduction(dtype, reduction);
  DTRAIN_MPI_CALL(comm, MPI_Allreduce, MPI_IN_PLACE, buffer, int(count), r.type,
                  r.op, comm->mpi);
  // MEAN, which the runtime does not pass here (reduces_mean 0) but a
  // transport that forwards to this one may.
  finishReduction(dtype, reduction, buffer, count, comm->size);
}

void mpiBroadcast(void *, dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
                  int32_t root) {
  DTRAIN_MPI_CALL(comm, MPI_Bcast, buffer, int(bytes), MPI_BYTE, root,
                  comm->mpi);
}

void mpiAllGather(void *, dtrain_rt_comm_t *comm, const void *send,
                  int64_t bytes, void *recv) {
  DTRAIN_MPI_CALL(comm, MPI_Allgather, send, int(bytes), MPI_BYTE, recv,
                  int(bytes), MPI_BYTE, comm->mpi);
}

void mpiAllGatherV(void *, dtrain_rt_comm_t *comm, const void *send, void *recv,
                   const int64_t *bytes) {
  std::vector<int> counts(static_cast<size_t>(comm->size)),
      displs(static_cast<size_t>(comm->size));
  int total = 0;
  for (int r = 0; r < comm->size; ++r) {
    counts[size_t(r)] = int(bytes[r]);
    displs[size_t(r)] = total;
    total += counts[size_t(r)];
  }
  DTRAIN_MPI_CALL(comm, MPI_Allgatherv, send, counts[size_t(comm->rank)],
                  MPI_BYTE, recv, counts.data(), displs.data(), MPI_BYTE,
                  comm->mpi);
}

void mpiSend(void *, dtrain_rt_comm_t *comm, const void *buffer, int64_t bytes,
             int32_t peer) {
  DTRAIN_MPI_CALL(comm, MPI_Send, buffer, int(bytes), MPI_BYTE, peer, kTag,
                  comm->mpi);
}

void mpiRecv(void *, dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
             int32_t peer) {
  DTRAIN_MPI_CALL(comm, MPI_Recv, buffer, int(bytes), MPI_BYTE, peer, kTag,
                  comm->mpi, MPI_STATUS_IGNORE);
}

void mpiSendRecv(void *, dtrain_rt_comm_t *comm, const void *send,
                 int64_t sendBytes, int32_t dest, void *recv, int64_t recvBytes,
                 int32_t source) {
  DTRAIN_MPI_CALL(comm, MPI_Sendrecv, send, int(sendBytes), MPI_BYTE, dest,
                  kTag, recv, int(recvBytes), MPI_BYTE, source, kTag, comm->mpi,
                  MPI_STATUS_IGNORE);
}

/// From this size the ring beats Open MPI's MPI_Allreduce on 4 ranks over
/// a 1 Gbit/s network (1.5x at 2-3 MB) and over shared memory
/// (docs/benchmarks-allreduce.md); it loses by up to 1.4x on loopback TCP
/// below 4 MB, which no cluster runs on.
constexpr int64_t kRingFromBytes = 2 << 20;

constexpr dtrain_rt_transport_t kMPI = {
    nullptr,       kRingFromBytes, mpiAllReduce, mpiBroadcast, mpiAllGather,
    mpiAllGatherV, mpiSend,        mpiRecv,      mpiSendRecv,  0,
};

/// Read by the collectives, written only while none is in flight (so the
/// communication thread's queue orders the two).
dtrain_rt_transport_t installed = kMPI;

} // namespace

Transport dtrain::rt::transport() { return Transport(installed); }

//===--- C ABI ------------------------------------------------------------===//

void dtrain_rt_set_transport(const dtrain_rt_transport_t *transport) {
  static constexpr const char *fn = "dtrain_rt_set_transport";
  checkNoCollectiveInFlight(fn, "a transport");
  if (!transport) {
    installed = kMPI;
    return;
  }
  checkEveryFunctionSet(fn, "the transport's",
                        {{"all_reduce", transport->all_reduce},
                         {"broadcast", transport->broadcast},
                         {"all_gather", transport->all_gather},
                         {"all_gather_v", transport->all_gather_v},
                         {"send", transport->send},
                         {"recv", transport->recv},
                         {"send_recv", transport->send_recv}});
  if (transport->ring_from_bytes < 0)
    fatal(nullptr,
          "%s: ring_from_bytes is %lld (accepted: 0 for no ring, or a "
          "size in bytes)",
          fn, (long long)transport->ring_from_bytes);
  installed = *transport;
}

const dtrain_rt_transport_t *dtrain_rt_mpi_transport(void) { return &kMPI; }
