//===- Nccl.cpp - the runtime's transport over NCCL -----------------------===//
//
// dtrain_rt_cuda_nccl_transport: the collectives' transport (dtrain_rt.h)
// on the process's GPU (CudaDriver.h). libnccl.so.2 is looked up with
// dlopen on first use, as the driver is, so that the library still loads
// where NCCL is missing.
//
// The communicator is made on the transport's first call, which comes
// from a collective and so after MPI_Init (a trainer's main installs the
// transport before it initializes MPI): rank 0's ncclGetUniqueId reaches
// every rank through the MPI transport's broadcast, and each calls
// ncclCommInitRank on its device. NCCL wants a device for each rank: when
// ranks share one, every call goes to the MPI transport instead. Every call
// then enqueues its NCCL operations on the communicator's non-blocking stream
// and waits for it: the communication thread blocks there while the main thread
// keeps launching the step's kernels, which is the overlap.
//
// Buffers that the device cannot reach (the runtime's own host memory:
// packed sparse sets, the ring's receive space, values on the stack) go
// through a staging buffer in device memory, copied on the same stream.
//
// Failures print "dtrain-rt: NCCL <call> failed: <its error string>" and
// exit with status 1, as the driver's do (CudaDriver.h).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"

#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

using namespace dtrain::rt::gpu;

namespace {

// The NCCL functions used, looked up by these names.
#define DTRAIN_NCCL_FUNCTIONS(X)                                               \
  X(ncclGetErrorString)                                                        \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclAllReduce)                                                             \
  X(ncclBroadcast)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclSend)                                                                  \
  X(ncclRecv)                                                                  \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)

struct Nccl {
#define DTRAIN_NCCL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  DTRAIN_NCCL_FUNCTIONS(DTRAIN_NCCL_MEMBER)
#undef DTRAIN_NCCL_MEMBER
};

/// NCCL, loaded on the first call; exits saying why when it cannot be.
const Nccl &nccl() {
  static const Nccl loaded = [] {
    Nccl n;
    void *library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library)
      fatal("NCCL not found (%s): the collectives of --target=cuda "
            "trainers run over NCCL; install it, or set DTRAIN_NCCL=0 to "
            "run them over MPI",
            dlerror());
#define DTRAIN_NCCL_LOOKUP(fn)                                                 \
  n.fn = reinterpret_cast<decltype(n.fn)>(dlsym(library, #fn));                \
  if (!n.fn)                                                                   \
    fatal("libnccl.so.2 has no %s: NCCL is older than the %d.%d this "         \
          "runtime was built with (update NCCL)",                              \
          #fn, NCCL_MAJOR, NCCL_MINOR);
    DTRAIN_NCCL_FUNCTIONS(DTRAIN_NCCL_LOOKUP)
#undef DTRAIN_NCCL_LOOKUP
    return n;
  }();
  return loaded;
}

void checkNccl(ncclResult_t rc, const char *call) {
  if (__builtin_expect(rc != ncclSuccess, 0))
    fatal("NCCL %s failed: %s", call, nccl().ncclGetErrorString(rc));
}

/// Calls the NCCL function FN with the remaining arguments and exits
/// naming FN when it fails.
#define DTRAIN_NCCL(fn, ...) checkNccl(nccl().fn(__VA_ARGS__), #fn)

CUdeviceptr address(const void *pointer) {
  return reinterpret_cast<CUdeviceptr>(pointer);
}

/// Whether kernels (and so NCCL) can use POINTER as it is: device or
/// managed memory. Managed memory may report either memory type, hence
/// the second attribute; a host pointer unknown to CUDA gets neither.
bool deviceReaches(const void *pointer) {
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED};
  unsigned int memoryType = 0, managed = 0;
  void *values[] = {&memoryType, &managed};
  DTRAIN_CU(cuPointerGetAttributes, 2, attributes, values, address(pointer));
  return managed || memoryType == CU_MEMORYTYPE_DEVICE;
}

/// One buffer of a call: its BYTES at HOST as the caller gave them, and
/// where the device reads and writes them (HOST itself, or a range of the
/// staging buffer when STAGED).
struct Placed {
  Placed(const void *host, int64_t bytes)
      : host(const_cast<void *>(host)), bytes(size_t(bytes)),
        staged(bytes > 0 && !deviceReaches(host)) {}
  void *host;
  size_t bytes;
  bool staged;
  char *device = nullptr;
};

const dtrain_rt_transport_t &mpi() { return *dtrain_rt_mpi_transport(); }

/// The NCCL communicator of the runtime's communicator COMM, its stream and
/// the staging buffer; or, when ranks share a device, which NCCL refuses,
/// the MPI transport for everything (OVERMPI). Calls come one at a time
/// (the transport ABI), so nothing here is locked.
struct Communicator {
  dtrain_rt_comm_t *comm;
  int rank, size;
  bool overMPI = false;
  ncclComm_t nccl = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr staging = 0;
  size_t stagingBytes = 0;

  /// Gives each of BUFFERS its device address: staged ones consecutive
  /// ranges of the staging buffer, grown to hold them.
  void place(std::initializer_list<Placed *> buffers) {
    constexpr size_t kAlign = 256; // what cuMemAlloc aligns to
    size_t total = 0;
    for (const Placed *b : buffers)
      if (b->staged)
        total += (b->bytes + kAlign - 1) / kAlign * kAlign;
    if (total > stagingBytes) {
      // The previous call waited for the stream: nothing uses the old one.
      if (staging)
        DTRAIN_CU(cuMemFree, staging);
      stagingBytes = std::max(total, 2 * stagingBytes);
      DTRAIN_CU(cuMemAlloc, &staging, stagingBytes);
    }
    size_t offset = 0;
    for (Placed *b : buffers) {
      if (b->staged) {
        b->device = reinterpret_cast<char *>(staging + offset);
        offset += (b->bytes + kAlign - 1) / kAlign * kAlign;
      } else {
        b->device = static_cast<char *>(b->host);
      }
    }
  }

  /// Copies a staged B's caller bytes to the device (before the operation
  /// reads them), or back (after it wrote them).
  void copyIn(const Placed &b) {
    if (b.staged)
      DTRAIN_CU(cuMemcpyAsync, address(b.device), address(b.host), b.bytes,
                stream);
  }
  void copyOut(const Placed &b) {
    if (b.staged)
      DTRAIN_CU(cuMemcpyAsync, address(b.host), address(b.device), b.bytes,
                stream);
  }

  /// Waits for the call's operations: the transport returns once the
  /// transfer is done.
  void wait() { DTRAIN_CU(cuStreamSynchronize, stream); }
};

/// Whether two ranks of COMM drive the same device (by its UUID, unique
/// across nodes), as every rank of a node does when it has fewer devices
/// than ranks (CudaDriver.h). The same answer on every rank.
bool ranksShareADevice(dtrain_rt_comm_t *comm, int size) {
  CUdevice device;
  CUuuid uuid;
  DTRAIN_CU(cuDeviceGet, &device, cuda().ordinal);
  DTRAIN_CU(cuDeviceGetUuid, &uuid, device);
  std::vector<CUuuid> all(static_cast<size_t>(size));
  mpi().all_gather(mpi().context, comm, &uuid, sizeof uuid, all.data());
  auto less = [](const CUuuid &a, const CUuuid &b) {
    return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) < 0;
  };
  std::sort(all.begin(), all.end(), less);
  for (size_t r = 1; r < all.size(); ++r)
    if (!less(all[r - 1], all[r]))
      return true;
  return false;
}

/// The communicator, made on every rank's first call, which comes from the
/// same collective on every rank (see the file comment).
Communicator &communicator(dtrain_rt_comm_t *comm) {
  // The device's context current on the calling thread (the first call of
  // each thread sets it), where NCCL finds the device.
  (void)cuda();
  // Never destroyed: NCCL's threads may still run when static destructors
  // do, and the process's exit frees it all.
  static Communicator *made = nullptr;
  if (made) {
    if (made->comm != comm)
      fatal("the NCCL transport serves the communicator of its first call "
            "only (dtrain_rt_comm_world())");
    return *made;
  }
  auto *c = new Communicator;
  c->comm = comm;
  c->rank = dtrain_rt_comm_rank(comm);
  c->size = dtrain_rt_comm_size(comm);
  made = c;
  if (ranksShareADevice(comm, c->size)) {
    // A job of more ranks than a node has devices (a test of several
    // ranks on one GPU) still runs, on MPI; rank 0 says so once.
    c->overMPI = true;
    if (c->rank == 0)
      std::fprintf(stderr,
                   "dtrain-rt: note: ranks share a CUDA device, which "
                   "NCCL does not allow: the collectives run over MPI\n");
    return *c;
  }
  (void)nccl(); // on every rank, before rank 0's id is waited for
  // NCCL finds its device through the CUDA runtime, whose current device
  // is per thread: set it on this one (the communication thread) rather
  // than rely on the runtime adopting the driver's current context.
  if (const cudaError_t rc = cudaSetDevice(cuda().ordinal); rc != cudaSuccess)
    fatal("cudaSetDevice(%d) for NCCL failed: %s", cuda().ordinal,
          cudaGetErrorString(rc));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (c->rank == 0)
    DTRAIN_NCCL(ncclGetUniqueId, &id);
  mpi().broadcast(mpi().context, comm, &id, sizeof id, 0);
  DTRAIN_NCCL(ncclCommInitRank, &c->nccl, c->size, id, c->rank);
  DTRAIN_CU(cuStreamCreate, &c->stream, CU_STREAM_NON_BLOCKING);
  return *c;
}

//===--- The transport's functions ----------------------------------------===//

struct ElementType {
  ncclDataType_t nccl;
  int64_t bytes;
};

ElementType elementType(int32_t dtype) {
  switch (dtype) {
  case DTRAIN_RT_F32:
    return {ncclFloat32, 4};
  case DTRAIN_RT_F64:
    return {ncclFloat64, 8};
  case DTRAIN_RT_F16:
    return {ncclFloat16, 2};
  case DTRAIN_RT_BF16:
    return {ncclBfloat16, 2};
  }
  fatal("the NCCL transport's all_reduce: dtype %d (accepted: %d = f32, "
        "%d = f64, %d = f16, %d = bf16)",
        int(dtype), DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16,
        DTRAIN_RT_BF16);
}

void transportAllReduce(void *, dtrain_rt_comm_t *comm, void *buffer,
                        int64_t count, int32_t dtype, int32_t reduction) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().all_reduce(mpi().context, comm, buffer, count, dtype,
                            reduction);
  if (count == 0)
    return;
  const ElementType type = elementType(dtype);
  Placed data(buffer, count * type.bytes);
  c.place({&data});
  c.copyIn(data);
  const ncclRedOp_t op = reduction == DTRAIN_RT_MAX    ? ncclMax
                         : reduction == DTRAIN_RT_MEAN ? ncclAvg
                                                       : ncclSum;
  DTRAIN_NCCL(ncclAllReduce, data.device, data.device, size_t(count), type.nccl,
              op, c.nccl, c.stream);
  c.copyOut(data);
  c.wait();
}

void transportBroadcast(void *, dtrain_rt_comm_t *comm, void *buffer,
                        int64_t bytes, int32_t root) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().broadcast(mpi().context, comm, buffer, bytes, root);
  if (bytes == 0)
    return;
  Placed data(buffer, bytes);
  c.place({&data});
  if (c.rank == root)
    c.copyIn(data);
  DTRAIN_NCCL(ncclBroadcast, data.device, data.device, size_t(bytes), ncclInt8,
              root, c.nccl, c.stream);
  c.copyOut(data);
  c.wait();
}

void transportAllGather(void *, dtrain_rt_comm_t *comm, const void *send,
                        int64_t bytes, void *recv) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().all_gather(mpi().context, comm, send, bytes, recv);
  if (bytes == 0)
    return;
  Placed in(send, bytes), out(recv, bytes * c.size);
  c.place({&in, &out});
  c.copyIn(in);
  DTRAIN_NCCL(ncclAllGather, in.device, out.device, size_t(bytes), ncclInt8,
              c.nccl, c.stream);
  c.copyOut(out);
  c.wait();
}

/// NCCL has no all-gather of blocks of different sizes: every rank sends
/// its block to every other in one group, and copies its own.
void transportAllGatherV(void *, dtrain_rt_comm_t *comm, const void *send,
                         void *recv, const int64_t *bytes) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().all_gather_v(mpi().context, comm, send, recv, bytes);
  std::vector<int64_t> offsets(size_t(c.size) + 1, 0);
  for (int r = 0; r < c.size; ++r)
    offsets[size_t(r) + 1] = offsets[size_t(r)] + bytes[r];
  if (offsets.back() == 0)
    return;
  const int64_t mine = bytes[c.rank];
  Placed in(send, mine), out(recv, offsets.back());
  c.place({&in, &out});
  c.copyIn(in);
  if (mine > 0)
    DTRAIN_CU(cuMemcpyAsync, address(out.device + offsets[size_t(c.rank)]),
              address(in.device), size_t(mine), c.stream);
  DTRAIN_NCCL(ncclGroupStart);
  for (int r = 0; r < c.size; ++r) {
    if (r == c.rank)
      continue;
    // Both ends know both sizes, so both skip the empty blocks.
    if (mine > 0)
      DTRAIN_NCCL(ncclSend, in.device, size_t(mine), ncclInt8, r, c.nccl,
                  c.stream);
    if (bytes[r] > 0)
      DTRAIN_NCCL(ncclRecv, out.device + offsets[size_t(r)], size_t(bytes[r]),
                  ncclInt8, r, c.nccl, c.stream);
  }
  DTRAIN_NCCL(ncclGroupEnd);
  c.copyOut(out);
  c.wait();
}

void transportSend(void *, dtrain_rt_comm_t *comm, const void *buffer,
                   int64_t bytes, int32_t peer) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().send(mpi().context, comm, buffer, bytes, peer);
  if (bytes == 0)
    return;
  Placed data(buffer, bytes);
  c.place({&data});
  c.copyIn(data);
  DTRAIN_NCCL(ncclSend, data.device, size_t(bytes), ncclInt8, peer, c.nccl,
              c.stream);
  c.wait();
}

void transportRecv(void *, dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
                   int32_t peer) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().recv(mpi().context, comm, buffer, bytes, peer);
  if (bytes == 0)
    return;
  Placed data(buffer, bytes);
  c.place({&data});
  DTRAIN_NCCL(ncclRecv, data.device, size_t(bytes), ncclInt8, peer, c.nccl,
              c.stream);
  c.copyOut(data);
  c.wait();
}

void transportSendRecv(void *, dtrain_rt_comm_t *comm, const void *send,
                       int64_t sendBytes, int32_t dest, void *recv,
                       int64_t recvBytes, int32_t source) {
  Communicator &c = communicator(comm);
  if (c.overMPI)
    return mpi().send_recv(mpi().context, comm, send, sendBytes, dest, recv,
                           recvBytes, source);
  if (sendBytes == 0 && recvBytes == 0)
    return;
  Placed in(send, sendBytes), out(recv, recvBytes);
  c.place({&in, &out});
  c.copyIn(in);
  // One group, so that neither waits for the other: every rank of a ring
  // sends and receives at once.
  DTRAIN_NCCL(ncclGroupStart);
  if (sendBytes > 0)
    DTRAIN_NCCL(ncclSend, in.device, size_t(sendBytes), ncclInt8, dest, c.nccl,
                c.stream);
  if (recvBytes > 0)
    DTRAIN_NCCL(ncclRecv, out.device, size_t(recvBytes), ncclInt8, source,
                c.nccl, c.stream);
  DTRAIN_NCCL(ncclGroupEnd);
  c.copyOut(out);
  c.wait();
}

/// NCCL's all-reduce picks its own ring or tree at every size:
/// ring_from_bytes 0. It averages on the device (ncclAvg), so that the
/// runtime does not divide a gradient on the host: reduces_mean 1.
constexpr dtrain_rt_transport_t kNccl = {
    nullptr,
    0,
    transportAllReduce,
    transportBroadcast,
    transportAllGather,
    transportAllGatherV,
    transportSend,
    transportRecv,
    transportSendRecv,
    1,
};

} // namespace

const dtrain_rt_transport_t *dtrain_rt_cuda_nccl_transport(void) {
  return &kNccl;
}
