//===- Broadcast.cpp - broadcast from a root rank -------------------------===//
//
// dtrain_rt_broadcast: bytes from one rank to all, through the
// communication thread like every collective (so it keeps its place among
// started all-reduces), split into transport calls of maxMessageCount()
// bytes.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>

using namespace dtrain::rt;

namespace {

struct BroadcastCollective final : Collective {
  char *buffer;
  int32_t root;

  BroadcastCollective(dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
                      int32_t root)
      : Collective(Collective::Broadcast, comm, bytes),
        buffer(static_cast<char *>(buffer)), root(root) {}

  void run() override {
    checkAgreement(comm, "broadcast", {{"bytes", payloadBytes}, {"root", root}});
    const Transport t = transport();
    const int64_t max = maxMessageCount();
    for (int64_t first = 0; first < payloadBytes; first += max)
      t.broadcast(comm, buffer + first, std::min(max, payloadBytes - first),
                  root);
  }
};

} // namespace

void dtrain_rt_broadcast(dtrain_rt_comm_t *comm, void *buffer, int64_t bytes,
                         int32_t root) {
  ensureInitialized();
  if (!comm)
    fatal(nullptr, "dtrain_rt_broadcast: comm is NULL (use "
                   "dtrain_rt_comm_world())");
  if (bytes < 0)
    fatal(comm, "dtrain_rt_broadcast: bytes is %lld (accepted: bytes >= 0)",
          (long long)bytes);
  if (!buffer && bytes > 0)
    fatal(comm,
          "dtrain_rt_broadcast: buffer is NULL with %lld bytes (accepted: "
          "NULL only when bytes is 0)",
          (long long)bytes);
  if (root < 0 || root >= comm->size)
    fatal(comm,
          "dtrain_rt_broadcast: root is %d (accepted: a rank of the "
          "communicator, 0 to %d)",
          root, comm->size - 1);
  BroadcastCollective broadcast(comm, buffer, bytes, root);
  submitCollective(&broadcast);
  waitCollective(&broadcast);
}
