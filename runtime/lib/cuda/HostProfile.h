//===- HostProfile.h - host time in the CUDA runtime's calls ---*- C++ -*-===//
//
// DTRAIN_CUDA_HOST_PROFILE=1 times the host side of the calls a
// --target=cuda trainer makes into this library (kernel launches, heavy
// ops, allocations, waits for the step stream) and prints the totals at
// exit: where a step's host time goes when the GPU waits for the host.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RT_CUDA_HOSTPROFILE_H
#define DTRAIN_RT_CUDA_HOSTPROFILE_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

namespace dtrain::rt::gpu {

/// Calls and host time by name.
class HostProfile {
public:
  /// Adds one call of NAME (kept: a string literal) that took NANOSECONDS.
  void add(const char *name, int64_t nanoseconds);
  /// A header, then one line a name (total ms, calls, us a call), the
  /// largest total first.
  void print(std::FILE *out) const;

private:
  struct Entry {
    const char *name;
    int64_t calls;
    int64_t nanoseconds;
  };
  mutable std::mutex mutex;
  std::vector<Entry> entries; // a few dozen names: searched in order
};

/// The process's profile where DTRAIN_CUDA_HOST_PROFILE=1 (read once; it is
/// then printed to stderr at exit), else null.
HostProfile *hostProfile();

/// Adds the host time of its scope to hostProfile(), as a call of NAME.
class HostTimer {
public:
  explicit HostTimer(const char *name)
      : name(name), profile(hostProfile()),
        start(profile ? std::chrono::steady_clock::now()
                      : std::chrono::steady_clock::time_point()) {}
  HostTimer(const HostTimer &) = delete;
  HostTimer &operator=(const HostTimer &) = delete;
  ~HostTimer() {
    if (profile)
      profile->add(name, std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count());
  }

private:
  const char *name;
  HostProfile *profile;
  std::chrono::steady_clock::time_point start;
};

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RT_CUDA_HOSTPROFILE_H
