//===- Timeline.cpp - Chrome trace of a training run ----------------------===//
//
// writeTimeline: every rank's spans (TraceEvent, recorded by the
// communication thread, the waits and the trainer), gathered to rank 0 and
// written as a Chrome trace (JSON Object Format; viewable in Perfetto or
// chrome://tracing): one process per rank, thread 0 the rank's computation,
// thread 1 its communication thread (a collective's args: its bytes, when
// it was queued, and the CPU time it took). Between the spans the trainer
// records ("step N"), the computation is split at the moments each
// collective was queued: "compute -> all_reduce #k" ends when that
// gradient (or the loss) was ready, so the backward pass shows per
// gradient, and the span after the last one holds the optimizer updates
// and the waits before them. alignedOrigin gives the ranks' times one
// origin.
//
//===----------------------------------------------------------------------===//

#include "ArrayFile.h"
#include "Internal.h"

#include <algorithm>
#include <cstdio>

using namespace dtrain::rt;

namespace {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

void appendEvent(std::string &json, const std::string &name, int rank,
                 int thread, double begin, double end, double origin,
                 const std::string &args) {
  char times[96];
  std::snprintf(times, sizeof times, "\"ts\":%.3f,\"dur\":%.3f",
                (begin - origin) * 1e6, std::max(0.0, end - begin) * 1e6);
  json += "{\"name\":" + jsonString(name) + ",\"ph\":\"X\"," + times +
          ",\"pid\":" + std::to_string(rank) +
          ",\"tid\":" + std::to_string(thread);
  if (!args.empty())
    json += ",\"args\":{" + args + "}";
  json += "},\n";
}

/// This rank's events as JSON objects, each followed by ",\n".
std::string rankEvents(int rank, const std::vector<TraceEvent> &events,
                       double origin) {
  std::string json;
  json += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" +
          std::to_string(rank) + ",\"args\":{\"name\":\"rank " +
          std::to_string(rank) + "\"}},\n";
  for (int thread = 0; thread < 2; ++thread)
    json += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" +
            std::to_string(rank) + ",\"tid\":" + std::to_string(thread) +
            ",\"args\":{\"name\":\"" +
            (thread == 0 ? "compute" : "communication") + "\"}},\n";
  std::vector<const TraceEvent *> collectives;
  for (const TraceEvent &e : events) {
    std::string args;
    if (e.bytes >= 0)
      args = "\"bytes\":" + std::to_string(e.bytes);
    if (e.queued >= 0) {
      char queued[64];
      std::snprintf(queued, sizeof queued, ",\"queued_us\":%.3f",
                    (e.queued - origin) * 1e6);
      args += queued;
      collectives.push_back(&e);
    }
    if (e.cpu >= 0) {
      char cpu[64];
      std::snprintf(cpu, sizeof cpu, ",\"cpu_us\":%.3f", e.cpu * 1e6);
      args += cpu;
    }
    appendEvent(json, e.name, rank, e.thread, e.begin, e.end, origin, args);
  }
  // The computation of each step, split where collectives were queued.
  for (const TraceEvent &step : events) {
    if (step.thread != TraceEvent::MainThread ||
        step.name.rfind("step ", 0) != 0)
      continue;
    std::vector<const TraceEvent *> queued;
    for (const TraceEvent *c : collectives)
      if (c->queued >= step.begin && c->queued <= step.end)
        queued.push_back(c);
    std::sort(queued.begin(), queued.end(),
              [](const TraceEvent *a, const TraceEvent *b) {
                return a->queued < b->queued;
              });
    double from = step.begin;
    for (const TraceEvent *c : queued) {
      appendEvent(json, "compute -> " + c->name, rank, 0, from, c->queued,
                  origin, "");
      from = c->queued;
    }
    appendEvent(json, queued.empty() ? "compute" : "updates and waits", rank,
                0, from, step.end, origin, "");
  }
  return json;
}

} // namespace

double dtrain::rt::alignedOrigin(dtrain_rt_comm_t *comm) {
  if (!comm || comm->size == 1)
    return clockSeconds();
  // Rank 0 answers each rank's pings in turn with its clock. A ping that
  // waited for a turn on a shared core takes long and is not used; the
  // fastest of ROUNDS bounds the error by half its round trip.
  constexpr int rounds = 16, tag = 0x7e3a;
  double origin = clockSeconds(), offset = 0;
  if (comm->rank == 0) {
    for (int peer = 1; peer < comm->size; ++peer)
      for (int round = 0; round < rounds; ++round) {
        char ping;
        DTRAIN_MPI_CALL(comm, MPI_Recv, &ping, 1, MPI_CHAR, peer, tag,
                        comm->mpi, MPI_STATUS_IGNORE);
        const double now = clockSeconds();
        DTRAIN_MPI_CALL(comm, MPI_Send, &now, 1, MPI_DOUBLE, peer, tag,
                        comm->mpi);
      }
  } else {
    double fastest = -1;
    for (int round = 0; round < rounds; ++round) {
      const char ping = 0;
      double rootNow;
      const double sent = clockSeconds();
      DTRAIN_MPI_CALL(comm, MPI_Send, &ping, 1, MPI_CHAR, 0, tag, comm->mpi);
      DTRAIN_MPI_CALL(comm, MPI_Recv, &rootNow, 1, MPI_DOUBLE, 0, tag,
                      comm->mpi, MPI_STATUS_IGNORE);
      const double received = clockSeconds();
      if (fastest < 0 || received - sent < fastest) {
        fastest = received - sent;
        offset = rootNow - (sent + received) / 2;
      }
    }
  }
  // Rank 0's origin, in each rank's own clock.
  DTRAIN_MPI_CALL(comm, MPI_Bcast, &origin, 1, MPI_DOUBLE, 0, comm->mpi);
  return origin - offset;
}

void dtrain::rt::writeTimeline(dtrain_rt_comm_t *comm,
                               const std::string &path,
                               const std::vector<TraceEvent> &events,
                               double origin) {
  const int rank = comm ? comm->rank : 0, size = comm ? comm->size : 1;
  std::string all = rankEvents(rank, events, origin);
  if (size > 1) {
    // Every collective has been waited for: the main thread may call MPI.
    const std::string mine = std::move(all);
    int length = int(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size)),
        offsets(static_cast<size_t>(size));
    DTRAIN_MPI_CALL(comm, MPI_Gather, &length, 1, MPI_INT, lengths.data(), 1,
                    MPI_INT, 0, comm->mpi);
    all.clear();
    if (rank == 0) {
      size_t total = 0;
      for (int r = 0; r < size; ++r) {
        offsets[size_t(r)] = int(total);
        total += size_t(lengths[size_t(r)]);
      }
      all.resize(total);
    }
    DTRAIN_MPI_CALL(comm, MPI_Gatherv, mine.data(), length, MPI_CHAR,
                    all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                    comm->mpi);
  }
  if (rank != 0)
    return;
  if (all.size() >= 2)
    all.resize(all.size() - 2); // the last ",\n"
  writeFileAtomically(path,
                      "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n" +
                          all + "\n]}\n",
                      "--timeline");
}
