//===- CostModel.cpp - the cost model shared by the Dist passes -----------===//

#include "dtrain/Dist/CostModel.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::dist;

namespace {

int64_t elementsOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

/// Estimated seconds of OP: multiply-adds of matmul and convolutions at
/// FLOPS, result elements of anything else at ELEMENTS per second.
} // namespace

double mlir::dtrain::dist::estimateSeconds(Operation *op, ComputeSpeed speed) {
  const double flops = speed.flops, elements = speed.elements;
  // A convolution (or one of its gradients) with output-shaped Y and
  // filter W does |Y| * |W| / O multiply-adds.
  auto convolution = [&](Value y, Value w) {
    auto filter = cast<ShapedType>(w.getType());
    if (!filter.hasStaticShape() || filter.getDimSize(0) == 0)
      return 0.0;
    return 2.0 * double(elementsOf(y.getType())) *
           double(filter.getNumElements()) / double(filter.getDimSize(0)) /
           flops;
  };
  return TypeSwitch<Operation *, double>(op)
      .Case<nn::MatmulOp>([&](nn::MatmulOp matmul) {
        // 2 K flops for each element of the result.
        auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
        int64_t rank = lhsType.getRank();
        const int64_t k =
            lhsType.getDimSize(matmul.getTransposeLhs() ? rank - 2 : rank - 1);
        if (ShapedType::isDynamic(k))
          return 0.0;
        return 2.0 * double(elementsOf(matmul.getType())) * double(k) / flops;
      })
      .Case<nn::Conv2DOp>([&](nn::Conv2DOp conv) {
        return convolution(conv.getResult(), conv.getWeight());
      })
      .Case<nn::Conv2DBackwardDataOp>([&](nn::Conv2DBackwardDataOp conv) {
        return convolution(conv.getGrad(), conv.getWeight());
      })
      .Case<nn::Conv2DBackwardWeightsOp>([&](nn::Conv2DBackwardWeightsOp conv) {
        return convolution(conv.getGrad(), conv.getResult());
      })
      .Default([&](Operation *other) {
        double count = 0;
        for (Type type : other->getResultTypes())
          count += double(elementsOf(type));
        return count / elements;
      });
}

/// Reads the profile at PATH, without refitting.
static FailureOr<Profile> readOneProfile(StringRef path, Location loc,
                                         StringRef option) {
  auto fail = [&](const Twine &message) -> FailureOr<Profile> {
    return emitError(loc) << option << ": profile " << path << ": " << message;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("cannot read it: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fail("not JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return fail("expected an object {\"startup_s\": ..., \"per_byte_s\": "
                "..., \"compute_s\": [...]}");
  Profile profile;
  std::optional<double> startup = object->getNumber("startup_s"),
                        perByte = object->getNumber("per_byte_s");
  const llvm::json::Array *compute = object->getArray("compute_s");
  if (!startup || !perByte || !compute)
    return fail("needs the numbers startup_s and per_byte_s and the array "
                "compute_s");
  profile.cost.startup = *startup;
  profile.cost.perByte = *perByte;
  profile.ranks = object->getInteger("ranks");
  if (const llvm::json::Value *speed = object->get("select_elements_per_s")) {
    profile.selectElementsPerSecond = speed->getAsNumber();
    if (!profile.selectElementsPerSecond ||
        !(*profile.selectElementsPerSecond > 0))
      return fail("select_elements_per_s must be a number > 0");
  }
  // Timed all-reduces by size (optional): the cost never drops below them.
  const llvm::json::Array *timedBytes = object->getArray("allreduce_bytes"),
                          *timedSeconds = object->getArray("allreduce_s");
  if (bool(timedBytes) != bool(timedSeconds) ||
      (timedBytes && timedBytes->size() != timedSeconds->size()))
    return fail("allreduce_bytes and allreduce_s must be arrays of the same "
                "length");
  for (size_t i = 0; timedBytes && i < timedBytes->size(); ++i) {
    std::optional<double> size = (*timedBytes)[i].getAsNumber(),
                          seconds = (*timedSeconds)[i].getAsNumber();
    if (!size || !seconds || *size <= 0 || *seconds < 0 ||
        (i > 0 && *size <= profile.cost.measured.back().first))
      return fail("allreduce_bytes must increase from > 0 and allreduce_s "
                  "hold numbers >= 0");
    profile.cost.measured.push_back({*size, *seconds});
  }
  for (const llvm::json::Value &value : *compute) {
    std::optional<double> seconds = value.getAsNumber();
    if (!seconds || *seconds < 0)
      return fail("compute_s holds a value that is not a number >= 0");
    profile.computeSeconds.push_back(*seconds);
  }
  if (const llvm::json::Value *tail = object->get("tail_s")) {
    profile.tailSeconds = tail->getAsNumber();
    if (!profile.tailSeconds || *profile.tailSeconds < 0)
      return fail("tail_s must be a number >= 0");
  }
  if (*startup < 0 || *perByte < 0)
    return fail("startup_s and per_byte_s must be >= 0");
  // The cost of an exchange beside the backward pass, and with nothing
  // computing beside it (both optional).
  auto readLine = [&](StringRef name,
                      std::optional<CostLine> &line) -> LogicalResult {
    const std::string startupKey = (name + "_startup_s").str(),
                      perByteKey = (name + "_per_byte_s").str();
    std::optional<double> first = object->getNumber(startupKey),
                          second = object->getNumber(perByteKey);
    if (bool(first) != bool(second) || (first && (*first < 0 || *second < 0)))
      return fail(startupKey + " and " + perByteKey +
                  " must both be numbers >= 0, or both absent");
    if (first)
      line = CostLine{*first, *second};
    return success();
  };
  if (failed(readLine("backward", profile.cost.backwardLine)) ||
      failed(readLine("alone", profile.cost.aloneLine)))
    return failure();
  // And the exchanges they were fitted to (optional).
  auto readSamples =
      [&](StringRef key,
          std::optional<std::vector<::dtrain::rt::LineSample>> &samples)
      -> LogicalResult {
    const llvm::json::Value *value = object->get(key);
    if (!value)
      return success();
    const llvm::json::Array *array = value->getAsArray();
    auto bad = [&] {
      return fail(key + " must be an array of [bytes > 0, seconds >= 0, "
                        "count > 0]");
    };
    if (!array)
      return bad();
    samples.emplace();
    for (const llvm::json::Value &entry : *array) {
      const llvm::json::Array *triple = entry.getAsArray();
      if (!triple || triple->size() != 3)
        return bad();
      std::optional<double> bytes = (*triple)[0].getAsNumber(),
                            seconds = (*triple)[1].getAsNumber(),
                            count = (*triple)[2].getAsNumber();
      if (!bytes || !seconds || !count || !(*bytes > 0) || !(*seconds >= 0) ||
          !(*count > 0))
        return bad();
      samples->push_back({*bytes, *seconds, *count});
    }
    return success();
  };
  if (failed(readSamples("backward_exchanges", profile.backwardSamples)) ||
      failed(readSamples("alone_exchanges", profile.aloneSamples)))
    return failure();
  // The bytes of the step's exchanges (optional).
  if (const llvm::json::Value *value = object->get("exchange_bytes")) {
    const char *message = "exchange_bytes must be an array of numbers > 0";
    const llvm::json::Array *sizes = value->getAsArray();
    if (!sizes)
      return fail(message);
    profile.stepBytes = 0;
    for (const llvm::json::Value &entry : *sizes) {
      std::optional<double> size = entry.getAsNumber();
      if (!size || !(*size > 0))
        return fail(message);
      *profile.stepBytes += *size;
    }
  }
  // The exchanges' CPU time (optional), which the computation pays where
  // its threads fill the machine's cores (one per rank unless said).
  std::optional<double> cpuStartup =
      object->getNumber("exchange_cpu_startup_s");
  std::optional<double> cpuPerByte =
      object->getNumber("exchange_cpu_per_byte_s");
  std::optional<double> callerCpu = object->getNumber("exchange_caller_cpu_s");
  std::optional<int64_t> hostRanks = object->getInteger("host_ranks"),
                         hostCores = object->getInteger("host_cores");
  const int64_t hostThreads =
      object->getInteger("host_threads").value_or(hostRanks.value_or(1));
  if ((cpuStartup && *cpuStartup < 0) || (cpuPerByte && *cpuPerByte < 0) ||
      (callerCpu && *callerCpu < 0) || (hostRanks && *hostRanks < 1) ||
      (hostCores && *hostCores < 1) || hostThreads < 1)
    return fail("exchange_cpu_startup_s, exchange_cpu_per_byte_s and "
                "exchange_caller_cpu_s must be >= 0, host_ranks, "
                "host_threads and host_cores >= 1");
  if (hostRanks && hostCores && hostThreads >= *hostCores) {
    const double ranksPerCore = double(*hostRanks) / double(*hostCores);
    profile.cost.cpuStartup = cpuStartup.value_or(0) * ranksPerCore;
    profile.cost.cpuPerByte = cpuPerByte.value_or(0) * ranksPerCore;
    // The computation's CPU time leaves out its thread's calls to submit
    // and wait for each exchange; elsewhere its wall time holds them.
    profile.cost.callerCpu = callerCpu.value_or(0) * ranksPerCore;
  }
  return profile;
}

FailureOr<Profile>
mlir::dtrain::dist::readProfile(StringRef path,
                                ArrayRef<std::string> refitPaths, Location loc,
                                StringRef option) {
  FailureOr<Profile> profile = readOneProfile(path, loc, option);
  if (failed(profile) || refitPaths.empty())
    return profile;
  // The lines over the exchanges of every profile: a merged trainer's
  // buckets are larger than the unmerged trainer's exchanges that ran
  // within its backward pass (4 B-51 KB on the emulated cluster), which
  // left the cost of a MB bucket there to an extrapolation.
  auto sampled = [&](StringRef file, const Profile &each) -> LogicalResult {
    if (each.backwardSamples && each.aloneSamples)
      return success();
    return emitError(loc) << option << ": refit-profiles: profile " << file
                          << " has no backward_exchanges and alone_exchanges "
                             "to refit to (a trainer's --profile writes them)";
  };
  if (failed(sampled(path, *profile)))
    return failure();
  for (const std::string &file : refitPaths) {
    FailureOr<Profile> other = readOneProfile(file, loc, option);
    if (failed(other))
      return failure();
    if (profile->ranks && other->ranks && *profile->ranks != *other->ranks)
      return emitError(loc) << option << ": refit-profiles: profile " << file
                            << " is of " << *other->ranks << " ranks, but "
                            << path << " of " << *profile->ranks;
    if (profile->stepBytes && other->stepBytes &&
        *profile->stepBytes != *other->stepBytes)
      return emitError(loc)
             << option << ": refit-profiles: profile " << file << " exchanges "
             << int64_t(*other->stepBytes) << " bytes a step, but " << path
             << " " << int64_t(*profile->stepBytes)
             << ": not profiles of one trainer";
    if (failed(sampled(file, *other)))
      return failure();
    llvm::append_range(*profile->backwardSamples, *other->backwardSamples);
    llvm::append_range(*profile->aloneSamples, *other->aloneSamples);
  }
  profile->cost.backwardLine =
      ::dtrain::rt::fitSpannedLine(*profile->backwardSamples);
  profile->cost.aloneLine =
      ::dtrain::rt::fitSpannedLine(*profile->aloneSamples);
  return profile;
}

LogicalResult mlir::dtrain::dist::readProfileOption(
    MLIRContext *context, StringRef path, ArrayRef<std::string> refitPaths,
    StringRef option, std::optional<Profile> &profile) {
  profile.reset();
  if (path.empty())
    return success();
  FailureOr<Profile> read =
      readProfile(path, refitPaths, UnknownLoc::get(context), option);
  if (failed(read))
    return failure();
  profile = std::move(*read);
  return success();
}

SmallVector<Exchange>
mlir::dtrain::dist::collectExchanges(Block &body, ComputeSpeed speed,
                                     double *tailSeconds) {
  SmallVector<Exchange> exchanges;
  double compute = 0;
  for (Operation &op : body) {
    auto start = dyn_cast<comm::AllReduceStartOp>(&op);
    if (!start) {
      compute += estimateSeconds(&op, speed);
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(start.getInput().getType());
    comm::WaitOp wait;
    if (start.getRequest().hasOneUse())
      wait = dyn_cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
    if (!type || !type.hasStaticShape() || !wait || wait->getBlock() != &body)
      continue; // not a step's gradient exchange (memrefs, dynamic shapes)
    const double bytes = double(type.getNumElements()) *
                         double(type.getElementTypeBitWidth()) / 8;
    exchanges.push_back({start, wait, type, {bytes, compute}});
    compute = 0;
  }
  if (tailSeconds)
    *tailSeconds = compute;
  return exchanges;
}

std::optional<Network> mlir::dtrain::dist::lookupNetwork(StringRef name) {
  // Latency per message and bandwidth per link; Ethernet carries about
  // 94% of its line rate as payload.
  if (name == "1gbe")
    return Network{50e-6, 117.5e6};
  if (name == "10gbe")
    return Network{20e-6, 1.175e9};
  if (name == "100gb-ib")
    return Network{2e-6, 12.0e9};
  return std::nullopt;
}

AllReduceCost mlir::dtrain::dist::ringAllReduceCost(int64_t ranks,
                                                    Network network) {
  if (ranks <= 1)
    return {0, 0};
  const double steps = 2.0 * double(ranks - 1);
  return {steps * network.latency, steps / double(ranks) / network.bandwidth};
}

Network mlir::dtrain::dist::networkOfRing(AllReduceCost cost, int64_t ranks) {
  // startup = 2(P-1) latencies, per-byte = 2(P-1)/P / bandwidth.
  const double steps = 2.0 * double(ranks - 1);
  return {cost.startup / steps, steps / double(ranks) / cost.perByte};
}

int64_t mlir::dtrain::dist::sparseK(double density, int64_t n) {
  return std::max<int64_t>(1, int64_t(std::floor(density * double(n))));
}

/// Messages of a binomial tree (or recursive doubling) over RANKS.
static double treeSteps(int64_t ranks) {
  return std::ceil(std::log2(double(ranks)));
}

double SparseExchangeCost::dense(int64_t n) const {
  const double bytes = 4.0 * double(n);
  AllReduceCost ring = ringAllReduceCost(ranks, network);
  const double doubling =
      treeSteps(ranks) * (network.latency + bytes / network.bandwidth);
  return std::min(ring.startup + ring.perByte * bytes, doubling);
}

double SparseExchangeCost::messages(bool gTopK) const {
  return gTopK ? 3 * treeSteps(ranks) : double(ranks - 1);
}

double SparseExchangeCost::entryVolumes(bool gTopK) const {
  return gTopK ? 2 * treeSteps(ranks) : double(ranks - 1);
}

double SparseExchangeCost::allGather(int64_t n, int64_t k) const {
  return select(n) + messages(false) * network.latency +
         entryVolumes(false) * 8.0 * double(k) / network.bandwidth;
}

double SparseExchangeCost::gTopK(int64_t n, int64_t k) const {
  return select(n) + messages(true) * network.latency +
         entryVolumes(true) * 8.0 * double(k) / network.bandwidth;
}

AllReduceCost SparseExchangeCost::bucketCost(double density, bool gTopK) const {
  // n = bytes / 4 elements to select from; an entry volume is 8 density n
  // = 2 density bytes.
  return {messages(gTopK) * network.latency,
          1 / (4 * elementsPerSecond) +
              entryVolumes(gTopK) * 2 * density / network.bandwidth};
}

std::string mlir::dtrain::dist::formatShortNumber(double value) {
  std::string text(32, '\0');
  text.resize(size_t(std::snprintf(text.data(), text.size(), "%g", value)));
  return text;
}

bool mlir::dtrain::dist::feedsReturn(Value value) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    for (Operation *user : next.getUsers()) {
      if (isa<func::ReturnOp>(user))
        return true;
      if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
              tensor::ExpandShapeOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  return false;
}
