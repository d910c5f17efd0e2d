//===- HostProfile.cpp - host time in the CUDA runtime's calls ------------===//

#include "cuda/HostProfile.h"

#include <algorithm>
#include <cstring>

using namespace dtrain::rt::gpu;

void HostProfile::add(const char *name, int64_t nanoseconds) {
  std::lock_guard<std::mutex> guard(mutex);
  auto entry =
      std::find_if(entries.begin(), entries.end(), [&](const Entry &e) {
        return std::strcmp(e.name, name) == 0;
      });
  if (entry == entries.end())
    entry = entries.insert(entries.end(), Entry{name, 0, 0});
  ++entry->calls;
  entry->nanoseconds += nanoseconds;
}

void HostProfile::print(std::FILE *out) const {
  std::vector<Entry> sorted;
  {
    std::lock_guard<std::mutex> guard(mutex);
    sorted = entries;
  }
  std::sort(sorted.begin(), sorted.end(), [](const Entry &a, const Entry &b) {
    return a.nanoseconds != b.nanoseconds ? a.nanoseconds > b.nanoseconds
                                          : std::strcmp(a.name, b.name) < 0;
  });
  std::fprintf(out, "dtrain-rt: host time in the CUDA runtime's calls "
                    "(DTRAIN_CUDA_HOST_PROFILE=1), largest first:\n");
  std::fprintf(out, "%12s %10s %10s  %s\n", "total_ms", "calls", "us/call",
               "function");
  for (const Entry &e : sorted)
    std::fprintf(out, "%12.3f %10lld %10.3f  %s\n", e.nanoseconds * 1e-6,
                 static_cast<long long>(e.calls),
                 e.nanoseconds * 1e-3 / static_cast<double>(e.calls), e.name);
}
