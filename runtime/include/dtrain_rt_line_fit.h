//===- dtrain_rt_line_fit.h - cost lines fitted to timed exchanges -*- C++ -*-//
//
// The least-squares line seconds = startup + perByte * bytes that a
// trainer's --profile fits to its timed exchanges, and that the planners
// refit to the exchanges of several profiles (refit-profiles=): one
// definition for both, header-only since the runtime builds on its own.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RT_LINE_FIT_H
#define DTRAIN_RT_LINE_FIT_H

#include <algorithm>
#include <optional>
#include <vector>

namespace dtrain::rt {

/// Exchanges of one size: their bytes, mean seconds, and how many there
/// were (the weight of the mean in a fit).
struct LineSample {
  double bytes, seconds, count = 1;
};

/// A cost line: startup + perByte * bytes seconds.
struct CostLine {
  double startup = 0, perByte = 0;
  double at(double bytes) const { return startup + perByte * bytes; }
};

/// Least squares of seconds = startup + perByte * bytes over SAMPLES, each
/// weighted by its count (the fit of every exchange they stand for), both
/// coefficients clamped at 0.
inline CostLine fitLine(const std::vector<LineSample> &samples) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const LineSample &s : samples) {
    n += s.count;
    sx += s.count * s.bytes;
    sy += s.count * s.seconds;
    sxx += s.count * s.bytes * s.bytes;
    sxy += s.count * s.bytes * s.seconds;
  }
  if (n <= 0)
    return {};
  const double denominator = n * sxx - sx * sx;
  double perByte = denominator > 0 ? (n * sxy - sx * sy) / denominator : 0;
  perByte = std::max(perByte, 0.0);
  return {std::max((sy - perByte * sx) / n, 0.0), perByte};
}

/// fitLine(SAMPLES) where their sizes span enough of a range to fit a line
/// to (16x, from 1 KiB), else none.
inline std::optional<CostLine>
fitSpannedLine(const std::vector<LineSample> &samples) {
  if (samples.empty())
    return std::nullopt;
  double smallest = samples.front().bytes, largest = smallest;
  for (const LineSample &s : samples) {
    smallest = std::min(smallest, s.bytes);
    largest = std::max(largest, s.bytes);
  }
  if (largest < 16 * std::max(smallest, 1024.0))
    return std::nullopt;
  return fitLine(samples);
}

} // namespace dtrain::rt

#endif // DTRAIN_RT_LINE_FIT_H
