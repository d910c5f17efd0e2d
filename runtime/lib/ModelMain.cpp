//===- ModelMain.cpp - the command line of compiled models ----------------===//
//
// dtrain_rt_model_main, the whole main of a program that dtrain-compile
// generates: it parses the model description compiled into the program
// (dtrain_model_info, format in dtrain_rt.h) and the command line (see
// printHelp), allocates one 64-byte-aligned buffer per argument of the run
// function, fills the weights from the ONNX file (OnnxWeights.h) and the
// inputs from .npy files or .npz archives, runs the model (timed with
// --repeat) and writes the requested outputs as .npy files or .npz archives.
//
// Every problem is one line "dtrain: error: ..." on stderr that names the
// file or argument and what was expected; the exit status is 2 for a usage
// error and 1 for anything else. Nothing is converted silently: dtypes and
// shapes must match the compiled ones exactly.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "OnnxWeights.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sys/stat.h>

using namespace dtrain::rt;

namespace {

/// A command-line mistake (exit status 2); other errors are Failures.
struct UsageError {
  std::string message;
};

[[noreturn]] __attribute__((format(printf, 1, 2))) void
usageError(const char *format, ...) {
  va_list args;
  va_start(args, format);
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  throw UsageError{buffer};
}

//===--- The model description --------------------------------------------===//

enum class Role { Param, Buffer, Input, Output, State, Eval, RankState };
const char *const roleNames[] = {"param",  "buffer", "input",    "output",
                                 "state",  "eval",   "rankstate"};

/// One `arg` line: a buffer of the run function.
struct Arg {
  Role role;
  int32_t dtype;
  std::vector<int64_t> dims;
  std::string name;
  size_t bytes;
};

struct ModelInfo {
  std::string onnx;
  /// "infer" (a model's forward pass) or "step" (one training step: the
  /// outputs are the updated parameters and the loss).
  std::string mode;
  std::vector<Arg> args;
  /// For a trainer with class labels: their number (labels lie in
  /// [0, classes)); 0 otherwise.
  int64_t classes = 0;
  /// The integer inputs that pick rows of an embedding table (nn.embedding),
  /// by name: the table's rows, for the runtime to check the indices.
  std::map<std::string, int64_t, std::less<>> indexRows;
  /// Whether the run function calls collectives (a data-parallel step):
  /// MPI is then initialized around the runs.
  bool collectives = false;

  /// The indices of the args of ROLE, in order.
  std::vector<size_t> indices(Role role) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].role == role)
        out.push_back(i);
    return out;
  }

  /// The index of the arg of ROLE named NAME, if any.
  std::optional<size_t> find(Role role, std::string_view name) const {
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].role == role && args[i].name == name)
        return i;
    return std::nullopt;
  }

  /// A trainer's labels: the input --dtrain-build-training added.
  std::optional<size_t> labels() const {
    std::optional<size_t> label = find(Role::Input, "labels");
    return label ? label : find(Role::Input, "targets");
  }

  /// A trainer's sample inputs: every input but the labels.
  std::vector<size_t> sampleInputs() const {
    std::vector<size_t> inputs;
    for (size_t i : indices(Role::Input))
      if (i != labels())
        inputs.push_back(i);
    return inputs;
  }
};

/// The samples one run of a trainer's step takes (per rank).
int64_t batchOf(const ModelInfo &info) {
  const std::vector<size_t> inputs = info.sampleInputs();
  return inputs.empty() || info.args[inputs[0]].dims.empty()
             ? 0
             : info.args[inputs[0]].dims[0];
}

std::string typeAndShape(const Arg &a) {
  return std::string(dtypeName(a.dtype)) + " " + dimsString(a.dims);
}

Arg parseArg(std::string_view line) {
  // <role> <dtype> <shape> <name...>
  std::string_view fields[3];
  for (std::string_view &field : fields) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos)
      fail("expected 'arg <role> <dtype> <shape> <name>'");
    field = line.substr(0, space);
    line.remove_prefix(space + 1);
  }
  Arg a{};
  a.name = std::string(line);
  if (a.name.empty())
    fail("the arg has no name");

  auto role = std::find(std::begin(roleNames), std::end(roleNames), fields[0]);
  if (role == std::end(roleNames))
    fail("unknown role %s (accepted: param, buffer, input, output, state, "
         "eval, rankstate)",
         quoted(fields[0]).c_str());
  a.role = Role(role - std::begin(roleNames));

  a.dtype = -1;
  for (int32_t d = DTRAIN_RT_F32; d <= DTRAIN_RT_BOOL; ++d)
    if (fields[1] == dtypeName(d))
      a.dtype = d;
  if (a.dtype < 0)
    fail("unknown dtype %s (accepted: f32, f64, f16, bf16, i64, i32, bool)",
         quoted(fields[1]).c_str());

  if (fields[2] != "-") {
    std::string_view shape = fields[2];
    while (true) {
      const size_t x = shape.find('x');
      const std::string_view dim = shape.substr(0, x);
      int64_t v = 0;
      bool ok = !dim.empty();
      for (char c : dim)
        ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) &&
             !__builtin_add_overflow(v, c - '0', &v);
      if (!ok)
        fail("bad shape %s (accepted: dimensions joined by 'x', or '-')",
             quoted(fields[2]).c_str());
      a.dims.push_back(v);
      if (x == std::string_view::npos)
        break;
      shape.remove_prefix(x + 1);
    }
  }
  if ((a.role == Role::Input || a.role == Role::Output) &&
      a.dims.size() > DTRAIN_RT_MAX_RANK)
    fail("%s %s has rank %zu (.npy files here hold rank <= %d)",
         roleNames[int(a.role)], quoted(a.name).c_str(), a.dims.size(),
         DTRAIN_RT_MAX_RANK);
  int64_t bytes = dtypeSize(a.dtype);
  bool overflow = false;
  for (int64_t d : a.dims)
    overflow |= __builtin_mul_overflow(bytes, d, &bytes);
  if (bytes != 0 && (overflow || uint64_t(bytes) > SIZE_MAX / 2))
    fail("the size of %s overflows", quoted(a.name).c_str());
  a.bytes = size_t(bytes);
  return a;
}

/// Parses dtrain_model_info; a malformed one is an internal error (the
/// compiler and the runtime disagree).
ModelInfo parseInfo(const char *text) {
  ModelInfo info;
  int lineNumber = 0;
  try {
    if (!text)
      fail("it is NULL");
    std::string_view rest = text;
    bool header = false, mode = false, onnx = false;
    while (!rest.empty()) {
      const size_t newline = rest.find('\n');
      const std::string_view line = rest.substr(0, newline);
      rest.remove_prefix(newline == std::string_view::npos ? rest.size()
                                                           : newline + 1);
      ++lineNumber;
      if (line.empty())
        continue;
      if (!header) {
        if (line != "dtrain-model 1")
          fail("expected 'dtrain-model 1' (this runtime reads version 1), "
               "found %s",
               quoted(line).c_str());
        header = true;
        continue;
      }
      const size_t space = line.find(' ');
      const std::string_view key = line.substr(0, space);
      const std::string_view value =
          space == std::string_view::npos ? "" : line.substr(space + 1);
      if (key == "onnx") {
        if (onnx)
          fail("a second 'onnx' line");
        if (value.empty())
          fail("an empty 'onnx' path");
        info.onnx = std::string(value);
        onnx = true;
      } else if (key == "mode") {
        if (mode)
          fail("a second 'mode' line");
        if (value != "infer" && value != "step" && value != "train")
          fail("mode %s is not supported by this runtime (accepted: infer, "
               "step, train)",
               quoted(value).c_str());
        info.mode = std::string(value);
        mode = true;
      } else if (key == "arg") {
        info.args.push_back(parseArg(value));
      } else if (key == "collectives") {
        info.collectives = true;
      } else if (key == "classes") {
        info.classes = std::atoll(std::string(value).c_str());
        if (info.classes < 1)
          fail("'classes' must be positive, found %s", quoted(value).c_str());
      } else if (key == "indices") {
        // indices <rows> <input name...>
        const size_t space = value.find(' ');
        const int64_t rows =
            std::atoll(std::string(value.substr(0, space)).c_str());
        if (space == std::string_view::npos || rows < 1)
          fail("expected 'indices <rows> <input>' with positive rows, found "
               "%s",
               quoted(value).c_str());
        // An input that indexes several tables must fit the smallest.
        auto [it, added] = info.indexRows.emplace(
            std::string(value.substr(space + 1)), rows);
        it->second = std::min(it->second, rows);
      } else {
        fail("unknown item %s (accepted: onnx, mode, arg, classes, indices, "
             "collectives)",
             quoted(key).c_str());
      }
    }
    lineNumber = 0;
    if (!header || !mode || !onnx)
      fail("it lacks the %s line", !header ? "'dtrain-model 1'"
                                   : !mode ? "'mode'"
                                           : "'onnx'");
    for (Role role : {Role::Input, Role::Output}) {
      const std::vector<size_t> ids = info.indices(role);
      for (size_t i = 0; i < ids.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (info.args[ids[i]].name == info.args[ids[j]].name)
            fail("two %ss are named %s", roleNames[int(role)],
                 quoted(info.args[ids[i]].name).c_str());
    }
  } catch (Failure &f) {
    f.message = "internal error: the model description compiled into this "
                "program is malformed (" +
                (lineNumber ? "line " + std::to_string(lineNumber) + ": "
                            : std::string()) +
                f.message +
                "); it was generated by a dtrain-compile that does not match "
                "this runtime";
    throw;
  }
  return info;
}

//===--- The command line -------------------------------------------------===//

struct Options {
  bool help = false, printInfo = false;
  std::string model;                        // --model, or empty
  int64_t repeat = 1, warmup = -1;          // warmup -1: the default
  bool timed = false;                       // --repeat given
  std::vector<std::string> inputs, outputs; // per input/output; "" unset
};

/// The names of the args of IDS for messages: "'x' (f32 2x4), 'k' (...)".
std::string argList(const ModelInfo &info, const std::vector<size_t> &ids) {
  if (ids.empty())
    return "none";
  std::string s;
  for (size_t i : ids)
    s += (s.empty() ? "" : ", ") + quoted(info.args[i].name) + " (" +
         typeAndShape(info.args[i]) + ")";
  return s;
}

int64_t parseCount(const std::string &flag, const std::string &value,
                   int64_t min) {
  int64_t v = 0;
  bool ok = !value.empty();
  for (char c : value)
    ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) &&
         !__builtin_add_overflow(v, c - '0', &v);
  if (!ok || v < min || v > 1000000000)
    usageError("%s %s: expected %s integer (at most 10^9)", flag.c_str(),
               quoted(value).c_str(),
               min > 0 ? "a positive" : "a non-negative");
  return v;
}

/// Whether FILE is an .npz archive (by its name): it holds arrays by name.
bool isArchive(const std::string &file) {
  return file.size() > 4 && file.compare(file.size() - 4, 4, ".npz") == 0;
}

/// The members of the .npz archive PATH, as np.load(PATH).files.
std::vector<std::string> archiveMembers(const std::string &path) {
  char **names = nullptr;
  int32_t count = 0;
  char error[1024];
  if (dtrain_rt_npz_names(path.c_str(), &names, &count, error, sizeof error))
    fail("%s", error);
  std::vector<std::string> members(names, names + count);
  dtrain_rt_npz_names_free(names);
  return members;
}

/// Matches the --input (ROLE Input) or --output values to the args:
/// NAME=FILE by name; then each archive without NAME= to the inputs it has
/// a member for (to every output left, for --output); then the other files
/// in order to the args left.
std::vector<std::string> bind(const ModelInfo &info, Role role,
                              const std::vector<std::string> &values) {
  const char *flag = role == Role::Input ? "--input" : "--output";
  const char *what = roleNames[int(role)];
  const std::vector<size_t> ids = info.indices(role);
  std::vector<std::string> files(ids.size());
  std::vector<std::string> positional;
  for (const std::string &value : values) {
    // NAME=FILE when some prefix up to an '=' is the name of an arg (ONNX
    // names may themselves contain '=').
    bool named = false;
    for (size_t eq = value.find('='); !named && eq != std::string::npos;
         eq = value.find('=', eq + 1)) {
      for (size_t k = 0; k < ids.size() && !named; ++k) {
        if (info.args[ids[k]].name != std::string_view(value).substr(0, eq))
          continue;
        named = true;
        if (eq + 1 == value.size())
          usageError("%s %s: no file after '='", flag, quoted(value).c_str());
        if (!files[k].empty())
          usageError("%s %s is given twice (%s and %s)", what,
                     quoted(info.args[ids[k]].name).c_str(),
                     quoted(files[k]).c_str(),
                     quoted(value.substr(eq + 1)).c_str());
        files[k] = value.substr(eq + 1);
      }
    }
    if (named)
      continue;
    if (value.find('=') != std::string::npos)
      usageError("%s %s: the model has no %s named %s (%ss: %s; a file "
                 "whose name contains '=' is given as NAME=FILE)",
                 flag, quoted(value).c_str(), what,
                 quoted(value.substr(0, value.find('='))).c_str(), what,
                 argList(info, ids).c_str());
    positional.push_back(value);
  }
  std::vector<std::string> plain;
  for (const std::string &file : positional) {
    if (!isArchive(file)) {
      plain.push_back(file);
      continue;
    }
    std::vector<std::string> members;
    if (role == Role::Input)
      members = archiveMembers(file);
    bool used = false;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (!files[k].empty() ||
          (role == Role::Input &&
           std::find(members.begin(), members.end(),
                     info.args[ids[k]].name) == members.end()))
        continue;
      files[k] = file;
      used = true;
    }
    if (used)
      continue;
    if (role == Role::Input) {
      std::string list;
      for (const std::string &m : members)
        list += (list.empty() ? "" : ", ") + quoted(m);
      fail("%s has no member for an input left (members: %s; the model's "
           "inputs: %s)",
           file.c_str(), list.empty() ? "none" : list.c_str(),
           argList(info, ids).c_str());
    }
    usageError("--output %s: every output is already given elsewhere",
               quoted(file).c_str());
  }
  positional = std::move(plain);
  size_t next = 0;
  for (size_t k = 0; k < ids.size() && next < positional.size(); ++k)
    if (files[k].empty())
      files[k] = positional[next++];
  if (next < positional.size())
    usageError("too many %s files: %s has no %s left to go to (the model's "
               "%ss: %s)",
               flag, quoted(positional[next]).c_str(), what, what,
               argList(info, ids).c_str());
  return files;
}

/// One flag of a command line: --NAME=VALUE, --NAME VALUE or --NAME.
struct Flag {
  std::string name, value;
};

/// The flags of ARGV, in order. Flags in WITHVALUE take a value, attached
/// with '=' or the next argument unless that is a flag; those in SWITCHES
/// take none; -h is --help, which ends the list (help wins over what
/// follows). Anything else is a usage error, for a stray argument with the
/// hint STRAY.
std::vector<Flag> readFlags(int argc, char **argv,
                            std::initializer_list<std::string_view> withValue,
                            std::initializer_list<std::string_view> switches,
                            const char *stray) {
  std::vector<Flag> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i] ? argv[i] : "";
    if (arg == "-h" || arg == "--help") {
      flags.push_back({"--help", ""});
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-")
      usageError("unexpected argument %s (%s; see --help)",
                 quoted(arg).c_str(), stray);
    if (arg.rfind("--", 0) != 0 || arg == "--")
      usageError("unknown flag %s (see --help)", quoted(arg).c_str());
    const size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const bool takesValue =
        std::find(withValue.begin(), withValue.end(), flag) != withValue.end();
    if (!takesValue &&
        std::find(switches.begin(), switches.end(), flag) == switches.end())
      usageError("unknown flag %s (see --help)", quoted(flag).c_str());
    if (!takesValue && eq != std::string::npos)
      usageError("%s takes no value", flag.c_str());
    std::string value;
    if (takesValue) {
      if (eq != std::string::npos)
        value = arg.substr(eq + 1);
      else if (i + 1 < argc && argv[i + 1] &&
               std::strncmp(argv[i + 1], "--", 2) != 0)
        value = argv[++i];
      if (value.empty())
        usageError("%s needs a value (see --help)", flag.c_str());
    }
    flags.push_back({flag, value});
  }
  return flags;
}

Options parseCommandLine(int argc, char **argv, const ModelInfo &info) {
  Options o;
  std::vector<std::string> inputs, outputs;
  bool haveRepeat = false, haveWarmup = false;
  for (const auto &[flag, value] :
       readFlags(argc, argv,
                 {"--input", "--output", "--model", "--repeat", "--warmup"},
                 {"--print-info"},
                 "inputs are given with --input FILE.npy")) {
    if (flag == "--help") {
      o.help = true;
      return o;
    } else if (flag == "--print-info") {
      o.printInfo = true;
    } else if (flag == "--input") {
      inputs.push_back(value);
    } else if (flag == "--output") {
      outputs.push_back(value);
    } else if (flag == "--model") {
      if (!o.model.empty())
        usageError("--model is given twice");
      o.model = value;
    } else if (flag == "--repeat") {
      if (haveRepeat)
        usageError("--repeat is given twice");
      haveRepeat = o.timed = true;
      o.repeat = parseCount(flag, value, 1);
    } else {
      if (haveWarmup)
        usageError("--warmup is given twice");
      haveWarmup = true;
      o.warmup = parseCount(flag, value, 0);
    }
  }
  if (o.warmup < 0)
    // A training step's warm-up runs would be steps too.
    o.warmup = o.repeat > 1 && info.mode != "step" ? 1 : 0;
  o.inputs = bind(info, Role::Input, inputs);
  o.outputs = bind(info, Role::Output, outputs);
  if (o.printInfo)
    return o;
  const std::vector<size_t> ids = info.indices(Role::Input);
  for (size_t k = 0; k < ids.size(); ++k)
    if (o.inputs[k].empty())
      usageError("no --input for input %s (%s); the model's inputs, in "
                 "order: %s",
                 quoted(info.args[ids[k]].name).c_str(),
                 typeAndShape(info.args[ids[k]]).c_str(),
                 argList(info, ids).c_str());
  return o;
}

/// S quoted for a POSIX shell when it needs it.
std::string shellWord(const std::string &s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_.,:/=+-") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void printHelp(const char *program, const ModelInfo &info) {
  const std::vector<size_t> inputs = info.indices(Role::Input),
                            outputs = info.indices(Role::Output);
  const size_t count = info.indices(Role::Param).size() +
                       info.indices(Role::Buffer).size();
  const char *stepNote =
      info.mode != "step"
          ? ""
          : "It is one training step: each run updates the parameters and "
            "the optimizer\nstate (zero at the start) in memory, and the "
            "next run starts from them;\nthe outputs named after them are "
            "their values after the last run.\n\n";
  const std::string weights =
      count == 0 ? "none"
                 : std::to_string(count) +
                       (count == 1 ? " initializer" : " initializers") +
                       " of " + info.onnx;
  std::string example = program;
  for (size_t k = 0; k < inputs.size(); ++k)
    example += " --input in" + std::to_string(k + 1) + ".npy";
  std::string run = example;
  if (!outputs.empty())
    example +=
        " --output " + shellWord(info.args[outputs[0]].name + "=" + "out.npy");
  std::printf(
      "usage: %s [--input [NAME=]FILE]... [--output [NAME=]FILE]...\n"
      "           [--model FILE.onnx] [--repeat N] [--warmup W] "
      "[--print-info]\n"
      "\n"
      "Runs the model that dtrain-compile compiled into this program: reads "
      "its\n"
      "weights from an ONNX file, its inputs from NumPy .npy files (np.save) "
      "or\n"
      ".npz archives (np.savez), runs it, and writes the outputs asked for "
      "the\n"
      "same way (np.load reads them).\n"
      "\n"
      "%s"
      "This model (--print-info shows every argument):\n"
      "  inputs:  %s\n"
      "  outputs: %s\n"
      "  weights: %s\n"
      "\n"
      "Flags (the value follows the flag, or is attached: --repeat=10):\n"
      "  --input [NAME=]FILE\n"
      "      Inputs of the model; give every input exactly once. A FILE.npy "
      "holds\n"
      "      one: NAME= gives it to the input of that ONNX name, files "
      "without NAME=\n"
      "      go to the inputs left, in the order above. A FILE.npz gives "
      "every\n"
      "      input left that it has a member of that name for (NAME=FILE.npz: "
      "only\n"
      "      input NAME). The dtype and shape must be the compiled ones "
      "(int8,\n"
      "      int16, uint8 and uint16 arrays read as i32, uint32 as i64, bool "
      "as i32\n"
      "      or i64 where the model takes integers; a bf16 input, which NumPy "
      "lacks,\n"
      "      from float32 values that bf16 holds, as bf16 outputs are written; "
      "nothing\n"
      "      else is converted). A bool input or output is NumPy's bool "
      "('|b1').\n"
      "  --output [NAME=]FILE\n"
      "      Writes an output (NAME, or else the next one in order) to "
      "FILE.npy,\n"
      "      or all outputs left (NAME=FILE.npz: output NAME) as members of "
      "the\n"
      "      archive FILE.npz, replacing the file. Outputs not asked for are "
      "not\n"
      "      written; without any --output the model just runs (to benchmark "
      "it).\n"
      "  --model FILE.onnx\n"
      "      Reads the weights from FILE.onnx instead of the file the model "
      "was\n"
      "      compiled from (above). Its initializers must have the names, "
      "dtypes and\n"
      "      shapes the model was compiled for; external data files are "
      "found\n"
      "      relative to FILE.onnx's directory.\n"
      "  --repeat N\n"
      "      Runs the model N times after the warm-up runs and prints one "
      "line\n"
      "      'run_ms=<mean> min_ms=<min> runs=<N>' (milliseconds per run) to "
      "stdout.\n"
      "      Without --repeat nothing is printed on success. The outputs are "
      "those\n"
      "      of the last run.\n"
      "  --warmup W\n"
      "      Untimed runs before the timed ones (default: 1 when N > 1, else "
      "0;\n"
      "      always 0 for a training step).\n"
      "  --print-info\n"
      "      Prints the model's arguments (role, ONNX name, dtype, shape) and "
      "exits.\n"
      "  -h, --help\n"
      "      Prints this help and exits.\n"
      "\n"
      "Exit status: 0 on success; 1 when a file cannot be read or written "
      "or does\n"
      "not match the model; 2 for a usage error. Errors are printed to "
      "stderr as\n"
      "'dtrain: error: ...'.\n"
      "\n"
      "Examples:\n"
      "  %s\n"
      "  %s --repeat 100\n",
      program, stepNote, argList(info, inputs).c_str(),
      argList(info, outputs).c_str(), weights.c_str(), example.c_str(),
      run.c_str());
}

/// One line per argument, the name last (it may contain spaces): inputs
/// and outputs first, in the order --input and --output use.
void printInfo(const ModelInfo &info, const std::string &onnx) {
  size_t width = 5;
  for (const Arg &a : info.args)
    width = std::max(width, dimsString(a.dims).size());
  std::printf("mode: %s\nweights: %s\n%-6s  %-5s  %-*s  %s\n",
              info.mode.c_str(), onnx.c_str(),
              "role", "dtype", int(width), "shape", "name");
  for (Role role :
       {Role::Input, Role::Output, Role::Param, Role::Buffer, Role::State,
        Role::RankState})
    for (const Arg &a : info.args)
      if (a.role == role)
        std::printf("%-6s  %-5s  %-*s  %s\n", roleNames[int(role)],
                    dtypeName(a.dtype), int(width), dimsString(a.dims).c_str(),
                    a.name.c_str());
}

//===--- Running ----------------------------------------------------------===//

/// The model buffers' allocator (dtrain_rt_set_buffer_allocator): the C
/// heap unless a target installs its own.
void *heapAllocate(size_t bytes) {
  void *p = nullptr;
  return ::posix_memalign(&p, 64, bytes) == 0 ? p : nullptr;
}
void *(*allocateBuffer)(size_t) = heapAllocate;
void (*freeBuffer)(void *) = std::free;
/// dtrain_rt_set_input_prefetch's function, if any.
void (*prefetchInput)(void *, size_t) = nullptr;
/// dtrain_rt_set_run_caller's function, if any.
void (*runCaller)(void (*)(void **), void **, size_t) = nullptr;

/// The host has written BYTES of a model input at BUFFER.
void wroteInput(void *buffer, size_t bytes) {
  if (prefetchInput && bytes > 0)
    prefetchInput(buffer, bytes);
}

struct BufferDeleter {
  void operator()(void *p) const { freeBuffer(p); }
};

/// An array filled by the runtime, freed at scope exit.
struct ArrayGuard {
  dtrain_rt_array_t array{};
  ~ArrayGuard() { dtrain_rt_array_free(&array); }
};

/// A hint for a .npy file of the wrong dtype.
std::string dtypeHint(int32_t expected) {
  static const char *const numpyNames[] = {
      "float32", "float64", "float16", nullptr, "int64", "int32", "bool_"};
  if (expected == DTRAIN_RT_BF16)
    return " (.npy files cannot hold bf16: save it as float32)";
  return std::string(" (save it with .astype(np.") + numpyNames[expected] +
         "))";
}

/// Fails unless every element of ARRAY (the input A, read from SOURCE) is
/// a row of the embedding table it indexes, if it indexes one: in
/// [-rows, rows), negative ones counting from the end as in ONNX's Gather.
void checkIndices(const ModelInfo &info, const Arg &a,
                  const dtrain_rt_array_t &array, const std::string &source) {
  auto it = info.indexRows.find(a.name);
  if (it == info.indexRows.end())
    return;
  const int64_t rows = it->second;
  const int64_t n = dtrain_rt_array_num_elements(&array);
  const int64_t perSample =
      array.rank > 0 && array.shape[0] > 0 ? n / array.shape[0] : 1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v =
        array.dtype == DTRAIN_RT_I64
            ? static_cast<const int64_t *>(array.data)[i]
            : int64_t(static_cast<const int32_t *>(array.data)[i]);
    if (v < -rows || v >= rows)
      fail("%s: index %lld of sample %lld (its element %lld) of input %s is "
           "out of range for the %lld rows of the table it looks up",
           source.c_str(), (long long)v, (long long)(i / perSample),
           (long long)(i % perSample), quoted(a.name).c_str(),
           (long long)rows);
  }
}

/// Allocates OUT with the shape of LIKE and elements of DTYPE.
void allocateLike(ArrayGuard &out, const dtrain_rt_array_t &like,
                  int32_t dtype) {
  char error[1024];
  if (dtrain_rt_array_alloc(&out.array, dtype, like.rank, like.shape, error,
                            sizeof error))
    fail("%s", error);
}

/// ARRAY widened where the model takes i64 or i32 (WANTED) and it holds a
/// narrower integer type: i32 to i64 (integer data of any width, as NumPy
/// writes token ids and labels), bool to either (0 and 1, labels saved as
/// booleans).
void widenIntegers(dtrain_rt_array_t &array, int32_t wanted) {
  const bool widens =
      (wanted == DTRAIN_RT_I64 && array.dtype == DTRAIN_RT_I32) ||
      ((wanted == DTRAIN_RT_I64 || wanted == DTRAIN_RT_I32) &&
       array.dtype == DTRAIN_RT_BOOL);
  if (!widens)
    return;
  ArrayGuard wide;
  allocateLike(wide, array, wanted);
  const int64_t n = dtrain_rt_array_num_elements(&array);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v =
        array.dtype == DTRAIN_RT_BOOL
            ? int64_t(static_cast<const uint8_t *>(array.data)[i])
            : int64_t(static_cast<const int32_t *>(array.data)[i]);
    if (wanted == DTRAIN_RT_I64)
      static_cast<int64_t *>(wide.array.data)[i] = v;
    else
      static_cast<int32_t *>(wide.array.data)[i] = int32_t(v);
  }
  std::swap(array, wide.array);
}

/// ARRAY narrowed to bf16 where it holds f32 and the model takes bf16
/// (WANTED), which NumPy lacks: as bf16 outputs are written as f32, exactly,
/// a bf16 input is read from f32 values that bf16 holds exactly (NaNs
/// quieted); any other value is an error, not rounded silently. SOURCE names
/// the file in it.
void narrowToBF16(dtrain_rt_array_t &array, int32_t wanted,
                  const std::string &name, const std::string &source) {
  if (wanted != DTRAIN_RT_BF16 || array.dtype != DTRAIN_RT_F32)
    return;
  ArrayGuard narrow;
  allocateLike(narrow, array, DTRAIN_RT_BF16);
  const int64_t n = dtrain_rt_array_num_elements(&array);
  const auto *from = static_cast<const float *>(array.data);
  auto *to = static_cast<uint16_t *>(narrow.array.data);
  for (int64_t i = 0; i < n; ++i) {
    to[i] = f32ToBF16(from[i]);
    if (!std::isnan(from[i]) && bf16ToF32(to[i]) != from[i])
      fail("input %s: element %lld of %s, %.9g, is no bf16 value (the model "
           "takes bf16; round the data to bf16 first, e.g. with "
           "torch.Tensor.bfloat16().float())",
           quoted(name).c_str(), (long long)i, source.c_str(), double(from[i]));
  }
  std::swap(array, narrow.array);
}

/// ARRAY, read from SOURCE for arg A, converted to A's dtype where NumPy
/// cannot write it or writes a narrower integer: the exact conversions
/// above; any other mismatch stays for the caller to report.
void convertToArgDType(dtrain_rt_array_t &array, const Arg &a,
                       const std::string &source) {
  widenIntegers(array, a.dtype);
  narrowToBF16(array, a.dtype, a.name, source);
}

void loadInput(const ModelInfo &info, const Arg &a, const std::string &file,
               void *buffer) {
  ArrayGuard in;
  char error[1024];
  const bool archive = isArchive(file);
  if ((archive ? dtrain_rt_npz_read(file.c_str(), a.name.c_str(), &in.array,
                                    error, sizeof error)
               : dtrain_rt_npy_read(file.c_str(), &in.array, error,
                                    sizeof error)) != 0)
    fail("input %s: %s", quoted(a.name).c_str(), error);
  // "x.npy", or "in.npz member 'x'".
  const std::string source =
      archive ? file + " member " + quoted(a.name) : file;
  convertToArgDType(in.array, a, source);
  if (in.array.dtype != a.dtype)
    fail("input %s: %s has dtype %s, expected %s%s", quoted(a.name).c_str(),
         source.c_str(), dtypeName(in.array.dtype), dtypeName(a.dtype),
         dtypeHint(a.dtype).c_str());
  const std::vector<int64_t> dims(in.array.shape,
                                  in.array.shape + in.array.rank);
  if (dims != a.dims) {
    // Only the batch differs: the model was compiled for another one.
    const bool batch =
        !dims.empty() && dims.size() == a.dims.size() &&
        std::equal(dims.begin() + 1, dims.end(), a.dims.begin() + 1);
    fail("input %s: %s has shape %s, but the model was compiled for %s%s",
         quoted(a.name).c_str(), source.c_str(), dimsString(dims).c_str(),
         dimsString(a.dims).c_str(),
         batch ? (" (recompile with --batch-size " + std::to_string(dims[0]) +
                  ")")
                     .c_str()
               : "");
  }
  checkIndices(info, a, in.array, source);
  if (a.bytes > 0)
    std::memcpy(buffer, in.array.data, a.bytes);
  wroteInput(buffer, a.bytes);
}

void loadWeight(const OnnxInitializers &onnx, const Arg &a, void *buffer) {
  const OnnxTensor &t = onnx.lookup(a.name);
  if (t.dtype != a.dtype)
    fail("weight %s in %s has dtype %s, expected %s", quoted(a.name).c_str(),
         onnx.path().c_str(), dtypeName(t.dtype), dtypeName(a.dtype));
  if (t.dims != a.dims)
    fail("weight %s in %s has shape %s, but the model was compiled for %s",
         quoted(a.name).c_str(), onnx.path().c_str(),
         dimsString(t.dims).c_str(), dimsString(a.dims).c_str());
  onnx.read(t, buffer, a.bytes);
}

/// The array view of the buffer of arg A.
dtrain_rt_array_t arrayOf(const Arg &a, void *buffer) {
  dtrain_rt_array_t array{};
  array.dtype = a.dtype;
  array.rank = int32_t(a.dims.size());
  std::copy(a.dims.begin(), a.dims.end(), array.shape);
  array.data = buffer;
  return array;
}

/// Writes each output given a file: an .npy file each, one archive per
/// .npz file with the outputs given to it as members named after them.
void writeOutputs(const ModelInfo &info, const std::vector<std::string> &files,
                  const std::vector<void *> &buffers) {
  const std::vector<size_t> outputs = info.indices(Role::Output);
  std::map<std::string, std::vector<size_t>> archives;
  char error[1024];
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Arg &a = info.args[outputs[k]];
    if (files[k].empty())
      continue;
    if (isArchive(files[k])) {
      archives[files[k]].push_back(outputs[k]);
      continue;
    }
    const dtrain_rt_array_t out = arrayOf(a, buffers[outputs[k]]);
    if (dtrain_rt_npy_write(files[k].c_str(), &out, error, sizeof error) != 0)
      fail("output %s: %s", quoted(a.name).c_str(), error);
  }
  for (const auto &[path, ids] : archives) {
    std::vector<const char *> names;
    std::vector<dtrain_rt_array_t> arrays;
    for (size_t i : ids) {
      names.push_back(info.args[i].name.c_str());
      arrays.push_back(arrayOf(info.args[i], buffers[i]));
    }
    if (dtrain_rt_npz_write(path.c_str(), int32_t(ids.size()), names.data(),
                            arrays.data(), error, sizeof error) != 0)
      fail("output %s: %s", argList(info, ids).c_str(), error);
  }
}

/// The buffers of a compiled model's run function, one per arg, 64-byte
/// aligned: weights read from the ONNX file, optimizer state and outputs
/// zeroed. In a training step, the output named after a parameter, buffer
/// or state (same dtype and shape) is its new value, which the step writes
/// over the old one (dtrain_rt.h): both share one buffer.
struct Workspace {
  const ModelInfo &info;
  std::vector<std::unique_ptr<void, BufferDeleter>> owned;
  std::vector<void *> buffers;

  explicit Workspace(const ModelInfo &info)
      : info(info), buffers(info.args.size()) {
    for (size_t i = 0; i < info.args.size(); ++i) {
      const Arg &a = info.args[i];
      if (std::optional<size_t> updated = updatedArg(i)) {
        buffers[i] = buffers[*updated];
        continue;
      }
      void *p = allocateLike(i);
      buffers[i] = p;
      // Optimizer state starts at zero, as in a fresh PyTorch optimizer.
      if (a.role == Role::Output || a.role == Role::State ||
          a.role == Role::Eval || a.role == Role::RankState)
        std::memset(p, 0, paddedBytes(a));
    }
  }

  /// The bytes of ARG's buffer: at least one cache line, so that an empty
  /// buffer is a valid pointer.
  static size_t paddedBytes(const Arg &a) {
    return std::max<size_t>((a.bytes + 63) / 64 * 64, 64);
  }

  /// For the output at INDEX of a training step, the parameter, buffer or
  /// state it is the new value of (outputs follow the other args).
  std::optional<size_t> updatedArg(size_t index) const {
    const Arg &out = info.args[index];
    if (info.mode == "infer" || out.role != Role::Output)
      return std::nullopt;
    for (size_t i = 0; i < index; ++i) {
      const Arg &a = info.args[i];
      if ((a.role == Role::Param || a.role == Role::Buffer ||
           a.role == Role::State || a.role == Role::RankState) &&
          a.name == out.name && a.dtype == out.dtype && a.dims == out.dims)
        return i;
    }
    return std::nullopt;
  }

  /// Reads the parameters and buffers from the ONNX file PATH (given by
  /// the user when OVERRIDDEN, else recorded at compile time).
  void loadWeights(const std::string &path, bool overridden) {
    std::unique_ptr<OnnxInitializers> onnx;
    for (size_t i = 0; i < info.args.size(); ++i) {
      const Arg &a = info.args[i];
      if (a.role != Role::Param && a.role != Role::Buffer)
        continue;
      if (!onnx) {
        try {
          onnx = OnnxInitializers::open(path);
        } catch (Failure &f) {
          f.message = "cannot read the weights: " + f.message +
                      (overridden ? ""
                                  : " (the ONNX file the model was "
                                    "compiled from; give another with "
                                    "--model FILE.onnx)");
          throw;
        }
      }
      loadWeight(*onnx, a, buffers[i]);
    }
  }

  /// Runs RUN once (through the run caller, if one is installed): the new
  /// parameters, buffers and state replace the old.
  void step(void (*run)(void **)) {
    if (runCaller)
      runCaller(run, buffers.data(), buffers.size());
    else
      run(buffers.data());
  }

  /// A buffer for the argument at INDEX (also a second one for an input,
  /// to fill while a step reads the first), freed with the workspace.
  void *allocateLike(size_t index) {
    const Arg &a = info.args[index];
    void *p = allocateBuffer(paddedBytes(a));
    if (!p)
      fail("cannot allocate %zu bytes for %s %s", a.bytes,
           roleNames[int(a.role)], quoted(a.name).c_str());
    owned.emplace_back(p);
    return p;
  }

  /// The index of the arg of ROLE named NAME, if any.
  std::optional<size_t> find(Role role, std::string_view name) const {
    return info.find(role, name);
  }
};

/// MPI initialized (dtrain_rt_init; guardedMain finalizes it), this rank
/// and the number of ranks.
struct Collectives {
  int32_t rank, size;
  Collectives(int &argc, char **&argv) {
    dtrain_rt_init(&argc, &argv);
    rank = dtrain_rt_comm_rank(dtrain_rt_comm_world());
    size = dtrain_rt_comm_size(dtrain_rt_comm_world());
  }
};

int modelMain(int argc, char **argv, const char *infoText,
              void (*run)(void **)) {
  const ModelInfo info = parseInfo(infoText);
  if (!run)
    fail("internal error: the model's run function is NULL");
  const char *program = argc > 0 && argv && argv[0] ? argv[0] : "model";
  const Options o = parseCommandLine(argc, argv, info);
  if (o.help) {
    printHelp(program, info);
    return 0;
  }
  const std::string onnxPath = o.model.empty() ? info.onnx : o.model;
  if (o.printInfo) {
    printInfo(info, onnxPath);
    return 0;
  }

  // A data-parallel step: every rank runs it (under mpirun); rank 0 alone
  // writes the outputs, which all ranks hold alike.
  std::optional<Collectives> collectives;
  if (info.collectives)
    collectives.emplace(argc, argv);
  Workspace w(info);
  // The inputs first: they are small and most mistakes are there.
  const std::vector<size_t> inputs = info.indices(Role::Input);
  for (size_t k = 0; k < inputs.size(); ++k)
    loadInput(info, info.args[inputs[k]], o.inputs[k], w.buffers[inputs[k]]);
  w.loadWeights(onnxPath, !o.model.empty());
  auto runOnce = [&] { w.step(run); };

  for (int64_t i = 0; i < o.warmup; ++i)
    runOnce();
  double total = 0, best = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < o.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    runOnce();
    const std::chrono::duration<double, std::milli> ms =
        std::chrono::steady_clock::now() - start;
    total += ms.count();
    best = std::min(best, ms.count());
  }

  if (!collectives || collectives->rank == 0)
    writeOutputs(info, o.outputs, w.buffers);
  if (o.timed) {
    std::printf("run_ms=%.6f min_ms=%.6f runs=%lld\n", total / double(o.repeat),
                best, (long long)o.repeat);
    std::fflush(stdout);
  }
  return 0;
}

void printError(const std::string &message) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "dtrain: error: %s\n", line.c_str());
  std::fflush(stderr);
}


//===--- Trainers ---------------------------------------------------------===//

struct TrainOptions {
  bool help = false, printInfo = false;
  std::string data, val, model, saveOnnx, checkpointDir, timeline, profile,
      xKey = "x", yKey = "y";
  int64_t epochs = 0, steps = 0, seed = 0, logEvery = 0, checkpointEvery = 0,
          globalBatch = 0, batchSize = 0;
  bool resume = false, shuffle = true;
};

void printTrainerHelp(const char *program, const ModelInfo &info) {
  std::printf(
      "usage: [mpirun -np P] %s --data FILE.npz [--val FILE.npz]\n"
      "           (--epochs E | --steps N) [--seed S] [--no-shuffle]\n"
      "           [--global-batch G] [--batch-size B] [--log-every K]\n"
      "           [--x-key NAME] [--y-key NAME] [--timeline TRACE.json]\n"
      "           [--profile PROFILE.json]\n"
      "           [--checkpoint-dir DIR [--checkpoint-every N] [--resume]]\n"
      "           [--model FILE.onnx] [--save-onnx FILE.onnx] [--print-info]\n"
      "\n"
      "Trains the model that dtrain-compile compiled into this program, "
      "starting\nfrom the weights of its ONNX file (%s).\n"
      "\n"
      "Data parallel (a trainer compiled with --data-parallel, the default): "
      "under\nmpirun every rank steps on its own shard of each global batch "
      "(rank r takes\nsamples r*B to (r+1)*B - 1 of it, B = %lld the per-rank "
      "batch compiled in)\nand the gradients are averaged across the ranks "
      "while the backward pass\nruns. Rank 0's weights are broadcast at the "
      "start (and after --resume);\nrank 0 alone prints, and writes "
      "checkpoints, the timeline and --save-onnx.\nBatch-norm batch "
      "statistics are each rank's own (PyTorch DDP's default);\nthe running "
      "statistics written and evaluated are rank 0's. Without mpirun\nit "
      "trains as one rank.\n"
      "\n"
      "Flags (the value follows the flag, or is attached: --epochs=10):\n"
      "  --data FILE.npz   training samples: arrays X (inputs, the first "
      "dimension\n"
      "                    the sample) and Y (labels), as np.savez writes "
      "them\n"
      "  --val FILE.npz    validation samples, evaluated after each epoch "
      "with the\n"
      "                    batch-norm running statistics (full batches "
      "only)\n"
      "  --epochs E        passes over the training samples, each in a new "
      "random\n"
      "                    order (full batches only)\n"
      "  --steps N         stop after N steps (also with --epochs: whichever "
      "comes\n"
      "                    first)\n"
      "  --seed S          the seed of the sample order and of the "
      "dropout masks\n"
      "                    (default 0)\n"
      "  --no-shuffle      takes the samples in file order in every epoch\n"
      "  --global-batch G  checks that the ranks together step on G samples "
      "(P x B)\n"
      "  --batch-size B    checks that each rank steps on B samples (fixed "
      "when\n"
      "                    compiling: dtrain-compile --batch-size)\n"
      "  --log-every K     a progress line every K steps (default: once per "
      "epoch)\n"
      "  --x-key NAME, --y-key NAME\n"
      "                    the array names in the .npz files (default x, "
      "y)\n"
      "  --checkpoint-dir DIR\n"
      "                    writes DIR/checkpoint.npz (parameters, batch-norm "
      "statistics,\n"
      "                    optimizer state, every rank's residuals, "
      "progress;\n"
      "                    atomically) after each epoch,\n"
      "                    every --checkpoint-every N steps, and at the end\n"
      "  --resume          continues from DIR/checkpoint.npz: the same run as "
      "without\n"
      "                    the interruption, bit for bit (--epochs and "
      "--steps count\n"
      "                    from the start; on another rank count, rank 0 "
      "takes the\n"
      "                    sum of the residuals)\n"
      "  --model FILE.onnx the initial weights (default: the file above)\n"
      "  --save-onnx FILE.onnx\n"
      "                    writes the model back with the trained weights "
      "and\n"
      "                    batch-norm statistics: the initial ONNX file with "
      "its\n"
      "                    initializers' data replaced (written to a "
      "temporary\n"
      "                    file, then renamed)\n"
      "  --timeline TRACE.json\n"
      "                    writes a Chrome trace (Perfetto, chrome://tracing) "
      "of every\n"
      "                    rank: steps, the computation up to each "
      "collective, the\n"
      "                    collectives on the communication thread "
      "(queued,\n"
      "                    started, finished, bytes) and the waits for them\n"
      "  --profile PROFILE.json\n"
      "                    measures what merging the exchanges into buckets "
      "depends on\n"
      "                    here: the computation before each exchange "
      "and after the\n"
      "                    last (the updates, less the waits), averaged over "
      "the steps\n"
      "                    after the first (where the computing threads "
      "fill a machine's\n"
      "                    cores, its CPU time times ranks per core); the "
      "all-reduce\n"
      "                    cost startup + per-byte x M (fitted to the steps' "
      "exchanges,\n"
      "                    or to all-reduces of 4 bytes and up timed after "
      "training when\n"
      "                    the exchanges are all of a size); those timed "
      "all-reduces, up\n"
      "                    to the step's whole payload (the planner never "
      "costs a bucket\n"
      "                    below them); and an exchange's CPU time, startup + "
      "per-byte x\n"
      "                    M, which the computation pays where its "
      "threads fill the\n"
      "                    cores; recompile with dtrain-compile "
      "--merge=optimal\n"
      "                    --merge-options=\"profile=PROFILE.json\"\n"
      "  --print-info      prints the model's arguments and exits\n"
      "\n"
      "Progress lines are key=value pairs: 'step= epoch= loss= acc= "
      "samples/s='\n"
      "(with several ranks also 'comm_ms= wait_ms= sent_MB=' per step: time "
      "the\ncollectives took on the communication thread, time the step "
      "waited for them,\nand bytes each rank sends in a bandwidth-optimal "
      "all-reduce;\nwith sparsified exchanges also 'density= compression=': "
      "the "
      "fraction of\nentries selected, and the dense ring all-reduce's bytes "
      "over the bytes sent;\nwith loss scaling also 'loss_scale= skipped=': "
      "the scale the next step uses\n(dynamic scaling) and the steps skipped "
      "so far because a gradient overflowed)\n"
      "(loss and accuracy averaged since the previous line), 'epoch= "
      "val_loss=\nval_acc= val_samples=' after each epoch, and last "
      "'final steps= epochs= loss=\nacc= [val_acc=]'. Exit status: 0 on "
      "success, 1 on an error (a file that\ndoes not fit the model, a "
      "label out of range, a loss that is not finite),\n2 for a usage "
      "error.\n",
      program, info.onnx.c_str(), (long long)batchOf(info));
}

TrainOptions parseTrainerCommandLine(int argc, char **argv) {
  TrainOptions o;
  for (const auto &[flag, value] : readFlags(
           argc, argv,
           {"--data", "--val", "--epochs", "--steps", "--seed", "--log-every",
            "--x-key", "--y-key", "--model", "--save-onnx", "--checkpoint-dir",
            "--checkpoint-every", "--global-batch", "--batch-size",
            "--timeline", "--profile"},
           {"--print-info", "--resume", "--no-shuffle"},
           "the data is given with --data FILE.npz")) {
    if (flag == "--help") {
      o.help = true;
      return o;
    }
    if (flag == "--print-info")
      o.printInfo = true;
    else if (flag == "--resume")
      o.resume = true;
    else if (flag == "--no-shuffle")
      o.shuffle = false;
    else if (flag == "--global-batch")
      o.globalBatch = parseCount(flag, value, 1);
    else if (flag == "--batch-size")
      o.batchSize = parseCount(flag, value, 1);
    else if (flag == "--timeline")
      o.timeline = value;
    else if (flag == "--profile")
      o.profile = value;
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--val")
      o.val = value;
    else if (flag == "--model")
      o.model = value;
    else if (flag == "--save-onnx")
      o.saveOnnx = value;
    else if (flag == "--checkpoint-dir")
      o.checkpointDir = value;
    else if (flag == "--checkpoint-every")
      o.checkpointEvery = parseCount(flag, value, 1);
    else if (flag == "--x-key")
      o.xKey = value;
    else if (flag == "--y-key")
      o.yKey = value;
    else if (flag == "--epochs")
      o.epochs = parseCount(flag, value, 1);
    else if (flag == "--steps")
      o.steps = parseCount(flag, value, 1);
    else if (flag == "--seed")
      o.seed = parseCount(flag, value, 0);
    else
      o.logEvery = parseCount(flag, value, 1);
  }
  if (o.printInfo)
    return o;
  if (o.data.empty())
    usageError("no --data FILE.npz (see --help)");
  if (!o.epochs && !o.steps)
    usageError("give --epochs E or --steps N (see --help)");
  if ((o.resume || o.checkpointEvery) && o.checkpointDir.empty())
    usageError("%s needs --checkpoint-dir DIR",
               o.resume ? "--resume" : "--checkpoint-every");
  return o;
}

/// Samples of an .npz file: X and Y, checked against the model's input
/// and label args (all but the batch dimension, and the dtype).
struct Samples {
  ArrayGuard x, y;
  int64_t count = 0;
  size_t xBytes = 0, yBytes = 0; // per sample

  Samples(const std::string &path, const TrainOptions &o,
          const ModelInfo &info, const Arg &input, const Arg &label) {
    char error[1024];
    if (dtrain_rt_npz_read(path.c_str(), o.xKey.c_str(), &x.array, error,
                           sizeof error) ||
        dtrain_rt_npz_read(path.c_str(), o.yKey.c_str(), &y.array, error,
                           sizeof error))
      fail("%s", error);
    convertToArgDType(x.array, input, path + " " + o.xKey);
    convertToArgDType(y.array, label, path + " " + o.yKey);
    check(path, o.xKey, x.array, input);
    check(path, o.yKey, y.array, label);
    checkIndices(info, input, x.array, path + " " + o.xKey);
    count = x.array.shape[0];
    if (y.array.shape[0] != count)
      fail("%s: %s has %lld samples but %s has %lld", path.c_str(),
           o.xKey.c_str(), (long long)count, o.yKey.c_str(),
           (long long)y.array.shape[0]);
    const int64_t batch = input.dims[0];
    if (count < batch)
      fail("%s: %lld samples, fewer than the batch size %lld (recompile "
           "with a smaller --batch-size)",
           path.c_str(), (long long)count, (long long)batch);
    xBytes = input.bytes / size_t(batch);
    yBytes = label.bytes / size_t(batch);
    // A label per sample, or per position of a sequence model's sample.
    const int64_t labelsPerSample =
        dtrain_rt_array_num_elements(&y.array) / count;
    if (info.classes > 0)
      for (int64_t i = 0; i < count * labelsPerSample; ++i) {
        const int64_t v = static_cast<const int64_t *>(y.array.data)[i];
        if (v < 0 || v >= info.classes)
          fail("%s: label %lld of sample %lld is out of range [0, %lld)",
               path.c_str(), (long long)v, (long long)(i / labelsPerSample),
               (long long)info.classes);
      }
  }

  static void check(const std::string &path, const std::string &key,
                    const dtrain_rt_array_t &array, const Arg &a) {
    if (array.dtype != a.dtype)
      fail("%s: %s has dtype %s, but the model's %s takes %s%s",
           path.c_str(), key.c_str(), dtypeName(array.dtype),
           quoted(a.name).c_str(), dtypeName(a.dtype),
           dtypeHint(a.dtype).c_str());
    const std::vector<int64_t> dims(array.shape, array.shape + array.rank);
    if (dims.size() != a.dims.size() || dims.empty() ||
        !std::equal(dims.begin() + 1, dims.end(), a.dims.begin() + 1)) {
      std::vector<int64_t> sample(a.dims);
      sample[0] = dims.empty() ? 0 : dims[0];
      fail("%s: %s has shape %s, but the model's %s takes N x %s samples "
           "(expected %s)",
           path.c_str(), key.c_str(), dimsString(dims).c_str(),
           quoted(a.name).c_str(),
           dimsString(std::vector<int64_t>(a.dims.begin() + 1, a.dims.end()))
               .c_str(),
           dimsString(sample).c_str());
    }
  }

  /// Copies the samples ORDER[first .. first + batch) into the buffers.
  void gather(const std::vector<int64_t> &order, int64_t first, int64_t batch,
              void *xBuffer, void *yBuffer) const {
    for (int64_t k = 0; k < batch; ++k) {
      const int64_t i = order[size_t(first + k)];
      std::memcpy(static_cast<char *>(xBuffer) + size_t(k) * xBytes,
                  static_cast<const char *>(x.array.data) + size_t(i) * xBytes,
                  xBytes);
      std::memcpy(static_cast<char *>(yBuffer) + size_t(k) * yBytes,
                  static_cast<const char *>(y.array.data) + size_t(i) * yBytes,
                  yBytes);
    }
    wroteInput(xBuffer, size_t(batch) * xBytes);
    wroteInput(yBuffer, size_t(batch) * yBytes);
  }
};

/// The training batches, each gathered on a thread of its own while the
/// step before it runs: a step then waits for its batch only when
/// gathering it (and, on a GPU, starting its move to the device: the input
/// prefetch) takes longer than the step. Two pairs of input buffers take
/// turns: the running step's and the next batch's.
class BatchLoader {
public:
  /// Gathers from SAMPLES; the spare pair is like the workspace's inputs X
  /// and Y (arguments X_INDEX and Y_INDEX).
  BatchLoader(const Samples &samples, Workspace &w, size_t xIndex,
              size_t yIndex)
      : samples(samples), spareX(w.allocateLike(xIndex)),
        spareY(w.allocateLike(yIndex)) {}
  BatchLoader(const BatchLoader &) = delete;
  BatchLoader &operator=(const BatchLoader &) = delete;
  ~BatchLoader() {
    if (pending.valid())
      pending.wait();
  }

  /// Starts gathering the samples ORDER[FIRST .. FIRST + BATCH) into the
  /// spare buffers (ORDER must outlive it).
  void start(const std::vector<int64_t> &order, int64_t first,
             int64_t batch) {
    pending = std::async(std::launch::async, [=, &order] {
      samples.gather(order, first, batch, spareX, spareY);
    });
  }

  /// Waits for the batch started last and swaps its buffers with X and Y,
  /// whose buffers (the last step's, which has returned) become the spare
  /// ones.
  void take(void *&x, void *&y) {
    pending.get();
    std::swap(x, spareX);
    std::swap(y, spareY);
  }

private:
  const Samples &samples;
  void *spareX, *spareY;
  std::future<void> pending;
};

/// Writes the ONNX file SOURCE to TARGET with the data of its parameters
/// and buffers replaced by those of W: the same bytes elsewhere, so the
/// graph and everything else stay as exported. Initializers must hold
/// their data in raw_data (as PyTorch exports them).
void saveOnnx(const Workspace &w, const std::string &source,
              const std::string &target) {
  std::unique_ptr<OnnxInitializers> onnx = OnnxInitializers::open(source);
  std::vector<char> bytes;
  {
    InputFile file(source.c_str());
    bytes.resize(size_t(file.size()));
    file.readAt(0, bytes.data(), bytes.size());
  }
  for (size_t i = 0; i < w.info.args.size(); ++i) {
    const Arg &a = w.info.args[i];
    if (a.role != Role::Param && a.role != Role::Buffer)
      continue;
    const OnnxTensor &t = onnx->lookup(a.name);
    if (t.dataLocation == 1 || !t.hasRaw || t.rawSize != a.bytes)
      fail("--save-onnx: initializer %s of %s keeps its data %s; dtrain "
           "writes back initializers stored in raw_data",
           quoted(a.name).c_str(), source.c_str(),
           t.dataLocation == 1 ? "in an external file" : "in typed fields");
    std::memcpy(bytes.data() + t.rawBegin, w.buffers[i], a.bytes);
  }
  writeFileAtomically(target, std::string_view(bytes.data(), bytes.size()),
                      "--save-onnx");
}

/// Where training stands: STEP steps done, BATCH batches of epoch EPOCH
/// (from 1) done.
struct Progress {
  int64_t step = 0, epoch = 1, batch = 0;
};

constexpr const char *kProgressNames[] = {"dtrain.step", "dtrain.epoch",
                                          "dtrain.batch"};

bool isTrainingState(Role role) {
  return role == Role::Param || role == Role::Buffer || role == Role::State ||
         role == Role::RankState;
}

/// Every rank's rank state (the residuals of sparsified exchanges), by arg:
/// the ranks' buffers one after the other, on rank 0.
using RankStates = std::map<size_t, std::vector<char>>;

/// Writes DIR/checkpoint.npz: every parameter, buffer and optimizer state
/// by name, each rank state as one array with a leading rank dimension
/// (from ROWS), and the progress (replacing the file atomically).
void writeCheckpoint(const Workspace &w, const std::string &dir,
                     const Progress &p, const RankStates &rows) {
  std::vector<const char *> names;
  std::vector<dtrain_rt_array_t> arrays;
  for (size_t i = 0; i < w.info.args.size(); ++i) {
    const Arg &a = w.info.args[i];
    if (!isTrainingState(a.role))
      continue;
    names.push_back(a.name.c_str());
    if (a.role != Role::RankState) {
      arrays.push_back(arrayOf(a, w.buffers[i]));
      continue;
    }
    const std::vector<char> &all = rows.at(i);
    // The writer only reads the data.
    dtrain_rt_array_t array = arrayOf(a, const_cast<char *>(all.data()));
    if (array.rank == DTRAIN_RT_MAX_RANK)
      fail("checkpoint: %s has the most dimensions an array file holds; "
           "no room for the rank dimension",
           quoted(a.name).c_str());
    std::copy_backward(array.shape, array.shape + array.rank,
                       array.shape + array.rank + 1);
    array.shape[0] = int64_t(all.size() / std::max<size_t>(a.bytes, 1));
    array.rank += 1;
    arrays.push_back(array);
  }
  int64_t values[] = {p.step, p.epoch, p.batch};
  for (int k = 0; k < 3; ++k) {
    dtrain_rt_array_t scalar{};
    scalar.dtype = DTRAIN_RT_I64;
    scalar.data = &values[k];
    names.push_back(kProgressNames[k]);
    arrays.push_back(scalar);
  }
  const std::string path = dir + "/checkpoint.npz";
  char error[1024];
  if (dtrain_rt_npz_write(path.c_str(), int32_t(names.size()), names.data(),
                          arrays.data(), error, sizeof error) != 0)
    fail("checkpoint: %s", error);
}

/// Restores the state and the progress from DIR/checkpoint.npz; every
/// rank's rank state goes to ROWS, for RANKS ranks: a checkpoint of another
/// rank count gives rank 0 the sum of its ranks' (f32: what the residuals
/// hold is what matters, not which rank holds it) and the others zero.
Progress readCheckpoint(Workspace &w, const std::string &dir, int ranks,
                        RankStates &rows) {
  const std::string path = dir + "/checkpoint.npz";
  char error[1024];
  int64_t summedRanks = 0;
  for (size_t i = 0; i < w.info.args.size(); ++i) {
    const Arg &a = w.info.args[i];
    if (!isTrainingState(a.role))
      continue;
    ArrayGuard in;
    if (dtrain_rt_npz_read(path.c_str(), a.name.c_str(), &in.array, error,
                           sizeof error) != 0)
      fail("--resume: %s", error);
    std::vector<int64_t> dims(in.array.shape, in.array.shape + in.array.rank);
    int64_t saved = 1;
    if (a.role == Role::RankState && !dims.empty()) {
      saved = dims.front();
      dims.erase(dims.begin());
    }
    if (in.array.dtype != a.dtype || dims != a.dims ||
        (a.role == Role::RankState && in.array.rank == 0))
      fail("--resume: %s member %s is %s %s, but the model's is %s %s%s",
           path.c_str(), quoted(a.name).c_str(), dtypeName(in.array.dtype),
           dimsString(std::vector<int64_t>(in.array.shape,
                                           in.array.shape + in.array.rank))
               .c_str(),
           dtypeName(a.dtype), dimsString(a.dims).c_str(),
           a.role == Role::RankState ? " per rank (after a rank dimension)"
                                     : "");
    if (a.role != Role::RankState) {
      std::memcpy(w.buffers[i], in.array.data, a.bytes);
      continue;
    }
    std::vector<char> &all = rows[i];
    all.assign(size_t(ranks) * a.bytes, 0);
    const char *data = static_cast<const char *>(in.array.data);
    if (saved == ranks) {
      std::memcpy(all.data(), data, all.size());
    } else if (a.dtype == DTRAIN_RT_F32) {
      float *sum = reinterpret_cast<float *>(all.data());
      const size_t n = a.bytes / sizeof(float);
      for (int64_t r = 0; r < saved; ++r)
        for (size_t j = 0; j < n; ++j)
          sum[j] += reinterpret_cast<const float *>(data)[size_t(r) * n + j];
      summedRanks = saved;
    } else {
      fail("--resume: %s member %s holds %lld ranks' state, but %d ranks "
           "run now",
           path.c_str(), quoted(a.name).c_str(), (long long)saved, ranks);
    }
  }
  if (summedRanks)
    std::printf("resumed the rank state of %lld ranks on %d: rank 0 takes "
                "its sum\n",
                (long long)summedRanks, ranks);
  int64_t values[3];
  for (int k = 0; k < 3; ++k) {
    ArrayGuard in;
    if (dtrain_rt_npz_read(path.c_str(), kProgressNames[k], &in.array, error,
                           sizeof error) != 0)
      fail("--resume: %s", error);
    if (in.array.dtype != DTRAIN_RT_I64 || in.array.rank != 0)
      fail("--resume: %s member '%s' is not an i64 scalar", path.c_str(),
           kProgressNames[k]);
    values[k] = *static_cast<const int64_t *>(in.array.data);
  }
  return {values[0], values[1], values[2]};
}

/// Ends a rank of a data-parallel job whose error another rank reports.
struct QuietExit {
  int status;
};

/// The ranks of a trainer (one without mpirun, or when not data parallel)
/// and how they act together: collectives, and errors that stop every rank
/// with one message rather than leaving some waiting forever.
struct Ranks {
  std::optional<Collectives> mpi;
  int rank = 0, size = 1;

  Ranks(bool dataParallel, int &argc, char **&argv) {
    if (!dataParallel)
      return;
    mpi.emplace(argc, argv);
    rank = mpi->rank;
    size = mpi->size;
  }
  bool root() const { return rank == 0; }

  /// Runs FN on every rank; when it fails on any rank, all stop: the
  /// lowest failing rank reports its error, the others exit quietly.
  template <typename Fn> void together(Fn &&fn) const {
    std::optional<Failure> failure;
    try {
      fn();
    } catch (const Failure &f) {
      failure = f;
    }
    if (size == 1) {
      if (failure)
        throw *failure;
      return;
    }
    double firstFailed = failure ? -rank : -size; // MAX of -rank: the lowest
    dtrain_rt_all_reduce(dtrain_rt_comm_world(), &firstFailed, 1,
                         DTRAIN_RT_F64, DTRAIN_RT_MAX);
    if (firstFailed == -size)
      return;
    if (failure && firstFailed == -rank) {
      if (rank != 0)
        failure->message = "rank " + std::to_string(rank) + ": " +
                           failure->message;
      throw *failure;
    }
    throw QuietExit{1};
  }

  /// Runs FN on rank 0 alone (its files); a failure there stops the job.
  template <typename Fn> void onRoot(Fn &&fn) const {
    if (!root())
      return;
    try {
      fn();
    } catch (const Failure &f) {
      if (size == 1)
        throw;
      printError(f.message);
      dtrain_rt_abort(dtrain_rt_comm_world(),
                      "stopping every rank after rank 0's error");
    }
  }

  /// Every rank's BYTES at DATA, one after the other, on rank 0 (empty on
  /// the others).
  std::vector<char> gather(const void *data, size_t bytes) const {
    std::vector<char> all(root() ? size_t(size) * bytes : 0);
    if (size == 1)
      std::memcpy(all.data(), data, bytes);
    else
      DTRAIN_MPI_CALL(dtrain_rt_comm_world(), MPI_Gather, data,
                      messageSize(bytes), MPI_BYTE, all.data(),
                      messageSize(bytes), MPI_BYTE, 0,
                      dtrain_rt_comm_world()->mpi);
    return all;
  }

  /// Rank r's BYTES of ALL (given on rank 0) into DATA on each rank r.
  void scatter(const std::vector<char> &all, void *data, size_t bytes) const {
    if (size == 1)
      std::memcpy(data, all.data(), bytes);
    else
      DTRAIN_MPI_CALL(dtrain_rt_comm_world(), MPI_Scatter, all.data(),
                      messageSize(bytes), MPI_BYTE, data, messageSize(bytes),
                      MPI_BYTE, 0, dtrain_rt_comm_world()->mpi);
  }

  /// BYTES as one MPI count.
  static int messageSize(size_t bytes) {
    if (bytes > size_t(std::numeric_limits<int>::max()))
      fail("a rank state of %zu bytes does not fit one MPI message", bytes);
    return int(bytes);
  }

  /// Rank 0's bytes on every rank.
  void broadcast(void *data, size_t bytes) const {
    if (size > 1)
      dtrain_rt_broadcast(dtrain_rt_comm_world(), data, int64_t(bytes), 0);
  }

  /// VALUES summed over the ranks (in place).
  void sum(std::vector<double> &values) const {
    if (size > 1)
      dtrain_rt_all_reduce(dtrain_rt_comm_world(), values.data(),
                           int64_t(values.size()), DTRAIN_RT_F64,
                           DTRAIN_RT_SUM);
  }
};

/// " density= compression=" of STATS' sparse exchanges, when there were
/// any: the fraction of entries this rank selected, and how many times
/// fewer bytes it sent than a ring all-reduce of the dense gradients would
/// over RANKS ranks.
void printSparseStats(const CommStats &stats, int ranks) {
  if (stats.sparseElements == 0)
    return;
  const double denseBytes = 2.0 * (ranks - 1) / ranks * 4.0 *
                            double(stats.sparseElements);
  std::printf(" density=%.5f compression=%.1f",
              double(stats.selectedElements) / double(stats.sparseElements),
              stats.sparseSentBytes > 0
                  ? denseBytes / double(stats.sparseSentBytes)
                  : 0.0);
}

/// " loss_scale= skipped=" of a step with loss scaling
/// (--dtrain-mixed-precision): its state after the last step.
void printLossScale(const Workspace &w) {
  std::optional<size_t> skipped =
      w.find(Role::State, "loss_scale.skipped_steps");
  if (!skipped)
    return;
  if (std::optional<size_t> scale = w.find(Role::State, "loss_scale"))
    std::printf(" loss_scale=%g", *static_cast<const float *>(w.buffers[*scale]));
  std::printf(" skipped=%lld",
              (long long)*static_cast<const int64_t *>(w.buffers[*skipped]));
}

CommStats &operator+=(CommStats &a, const CommStats &b) {
  a.collectives += b.collectives;
  a.payloadBytes += b.payloadBytes;
  a.sentBytes += b.sentBytes;
  a.sparseElements += b.sparseElements;
  a.selectedElements += b.selectedElements;
  a.sparseSentBytes += b.sparseSentBytes;
  a.busySeconds += b.busySeconds;
  a.blockedSeconds += b.blockedSeconds;
  return a;
}

int trainerMain(int argc, char **argv, const char *infoText,
                void (*run)(void **), void (*eval)(void **)) {
  const ModelInfo info = parseInfo(infoText);
  if (!run || !eval || info.mode != "train")
    fail("internal error: not a compiled trainer");
  const char *launcherSize = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!info.collectives && launcherSize && std::atoi(launcherSize) > 1)
    fail("this trainer was compiled without --data-parallel: under mpirun "
         "each of the %s ranks would train alone; recompile it with "
         "dtrain-compile --data-parallel",
         launcherSize);
  const char *program = argc > 0 && argv && argv[0] ? argv[0] : "trainer";
  const Ranks ranks(info.collectives, argc, argv);
  std::optional<TrainOptions> parsed;
  try {
    parsed = parseTrainerCommandLine(argc, argv);
  } catch (const UsageError &) {
    if (!ranks.root()) // every rank has the same command line
      throw QuietExit{2};
    throw;
  }
  const TrainOptions &o = *parsed;
  if (o.help || o.printInfo) {
    if (!ranks.root())
      return 0;
    if (o.help)
      printTrainerHelp(program, info);
    else
      printInfo(info, o.model.empty() ? info.onnx : o.model);
    return 0;
  }
  const std::string onnxPath = o.model.empty() ? info.onnx : o.model;
  if (!o.profile.empty() && !ranks.mpi)
    usageError("--profile measures the gradients' exchanges of a "
               "data-parallel trainer; this one was compiled with "
               "--data-parallel=false");
  const std::optional<size_t> label = info.labels();
  const std::vector<size_t> inputs = info.sampleInputs();
  const std::optional<size_t> loss = info.find(Role::Output, "loss"),
                              correct = info.find(Role::Output, "correct"),
                              evalLoss = info.find(Role::Eval, "loss"),
                              evalCorrect = info.find(Role::Eval, "correct");
  if (!label || inputs.size() != 1 || !loss || !evalLoss)
    fail("internal error: a trainer needs one input, labels and a loss");
  const Arg &input = info.args[inputs[0]];
  const int64_t batch = input.dims[0], globalBatch = batch * ranks.size;
  // The predictions "correct" counts in a sample: one, or one per position
  // of a sequence model's labels.
  const std::vector<int64_t> &labelDims = info.args[*label].dims;
  const int64_t predictionsPerSample =
      std::accumulate(labelDims.begin() + 1, labelDims.end(), int64_t(1),
                      std::multiplies<int64_t>());
  const auto rankWord = [](int n) {
    return std::to_string(n) + (n == 1 ? " rank" : " ranks");
  };
  if (o.batchSize && o.batchSize != batch) {
    if (!ranks.root())
      throw QuietExit{2};
    usageError("--batch-size %lld: this trainer steps on %lld samples per "
               "rank (fixed when compiling: dtrain-compile --batch-size)",
               (long long)o.batchSize, (long long)batch);
  }
  if (o.globalBatch && o.globalBatch != globalBatch) {
    if (!ranks.root())
      throw QuietExit{2};
    const bool divides = o.globalBatch % batch == 0;
    usageError("--global-batch %lld: %s x %lld samples per rank make %lld "
               "(the per-rank batch is fixed when compiling); %s",
               (long long)o.globalBatch, rankWord(ranks.size).c_str(),
               (long long)batch, (long long)globalBatch,
               divides ? ("run " + rankWord(int(o.globalBatch / batch)) +
                          " (mpirun -np " +
                          std::to_string(o.globalBatch / batch) + ")")
                             .c_str()
                       : "recompile with a --batch-size that divides it");
  }

  Workspace w(info);
  std::optional<Samples> data, val;
  Progress start;
  ranks.together([&] {
    data.emplace(o.data, o, info, input, info.args[*label]);
    if (data->count < globalBatch)
      fail("%s: %lld samples, fewer than the global batch of %lld (%s x "
           "%lld)",
           o.data.c_str(), (long long)data->count, (long long)globalBatch,
           rankWord(ranks.size).c_str(), (long long)batch);
    if (!o.val.empty())
      val.emplace(o.val, o, info, input, info.args[*label]);
  });
  // Rank 0 reads the weights (and the checkpoint) and gives them to all.
  RankStates resumedRows;
  ranks.together([&] {
    if (!ranks.root())
      return;
    w.loadWeights(onnxPath, !o.model.empty());
    // Created up front, so that a directory that cannot be made fails
    // before any training.
    if (!o.checkpointDir.empty() && !o.resume &&
        ::mkdir(o.checkpointDir.c_str(), 0777) != 0 && errno != EEXIST)
      fail("--checkpoint-dir: cannot create %s: %s", o.checkpointDir.c_str(),
           std::strerror(errno));
    // So are the files written after training.
    for (auto [path, option] : {std::pair(&o.saveOnnx, "--save-onnx"),
                                std::pair(&o.timeline, "--timeline"),
                                std::pair(&o.profile, "--profile")})
      if (!path->empty())
        checkCreatable(*path, option);
    // The seed of the dropout masks (nn.dropout_mask); a resumed run takes
    // the checkpoint's.
    if (std::optional<size_t> seed = w.find(Role::State, "rng.seed"))
      *static_cast<int64_t *>(w.buffers[*seed]) = o.seed;
    if (o.resume)
      start = readCheckpoint(w, o.checkpointDir, ranks.size, resumedRows);
  });
  // Rank state is each rank's own: from the checkpoint's row of the rank.
  for (size_t i = 0; i < info.args.size(); ++i)
    if (info.args[i].role == Role::RankState && o.resume)
      ranks.scatter(resumedRows[i], w.buffers[i], info.args[i].bytes);
    else if (isTrainingState(info.args[i].role) &&
             info.args[i].role != Role::RankState)
      ranks.broadcast(w.buffers[i], info.args[i].bytes);
  ranks.broadcast(&start, sizeof start);
  // Each rank its own dropout masks: rank r's seed is rank 0's plus r
  // times the golden ratio (rank 0 keeps the checkpointed one).
  if (std::optional<size_t> seed = w.find(Role::State, "rng.seed"))
    *static_cast<uint64_t *>(w.buffers[*seed]) +=
        uint64_t(ranks.rank) * 0x9E3779B97F4A7C15ull;
  // Every rank takes part (rank state is gathered); rank 0 writes.
  auto saveCheckpoint = [&](const Progress &now) {
    RankStates rows;
    for (size_t i = 0; i < info.args.size(); ++i)
      if (info.args[i].role == Role::RankState)
        rows[i] = ranks.gather(w.buffers[i], info.args[i].bytes);
    ranks.onRoot([&] { writeCheckpoint(w, o.checkpointDir, now, rows); });
  };
  if (o.resume && ranks.root())
    std::printf("resumed step=%lld epoch=%lld batch=%lld\n",
                (long long)start.step, (long long)start.epoch,
                (long long)start.batch);

  const int64_t batches = data->count / globalBatch;
  const int64_t epochs =
      o.epochs ? o.epochs : (o.steps + batches - 1) / batches;
  const int64_t logEvery = o.logEvery ? o.logEvery : batches;
  const int64_t runSteps = (o.steps ? o.steps : epochs * batches) - start.step;
  if (!o.profile.empty() && runSteps < 2)
    usageError("--profile times the steps after the run's first (a warm-up): "
               "it needs 2 or more, and this run has %lld",
               (long long)std::max<int64_t>(runSteps, 0));
  auto valueOf = [&](size_t index) {
    return *static_cast<const float *>(w.buffers[index]);
  };
  auto countOf = [&](size_t index) {
    return *static_cast<const int64_t *>(w.buffers[index]);
  };
  const bool reportComm = ranks.size > 1;
  CommStats windowComm, totalComm;
  const bool tracing = !o.timeline.empty() || !o.profile.empty();
  // The origin of the timeline's and the profile's times, alike on every
  // rank.
  const double origin = tracing && ranks.mpi
                            ? alignedOrigin(dtrain_rt_comm_world())
                            : clockSeconds();
  std::vector<TraceEvent> timeline;
  StepProfile profile(origin);
  std::vector<int64_t> order(size_t(data->count));
  BatchLoader loader(*data, w, inputs[0], *label);
  Progress now = start;
  int64_t step = start.step;
  double epochLoss = 0, lastValAcc = -1;
  int64_t epochCorrect = 0, epochSamples = 0, epochLossSteps = 0, epoch = 0;
  // Under loss scaling, a step whose gradients overflowed is skipped on
  // every rank (its loss may be inf or NaN): it counts in this state.
  const std::optional<size_t> skippedSteps =
      w.find(Role::State, "loss_scale.skipped_steps");
  auto skippedCount = [&] {
    return skippedSteps ? *static_cast<const int64_t *>(w.buffers[*skippedSteps])
                        : int64_t(0);
  };
  for (epoch = start.epoch; epoch <= epochs && (!o.steps || step < o.steps);
       ++epoch) {
    // Each epoch's order from the seed and the epoch alone, so that a
    // resumed run shuffles as the uninterrupted one, and all ranks alike.
    for (int64_t i = 0; i < data->count; ++i)
      order[size_t(i)] = i;
    if (o.shuffle) {
      std::mt19937_64 rng(uint64_t(o.seed) * 0x9E3779B97F4A7C15ull +
                          uint64_t(epoch));
      std::shuffle(order.begin(), order.end(), rng);
    }
    epochLoss = 0;
    epochCorrect = epochSamples = epochLossSteps = 0;
    totalComm += windowComm;
    windowComm = CommStats{};
    double windowLoss = 0;
    int64_t windowCorrect = 0, windowSamples = 0, windowLossSteps = 0;
    auto windowStart = std::chrono::steady_clock::now();
    const int64_t firstBatch = epoch == start.epoch ? start.batch : 0;
    // This rank's shard of global batch B.
    auto shard = [&](int64_t b) { return b * globalBatch + ranks.rank * batch; };
    if (firstBatch < batches && (!o.steps || step < o.steps))
      loader.start(order, shard(firstBatch), batch);
    for (int64_t b = firstBatch; b < batches && (!o.steps || step < o.steps);
         ++b) {
      loader.take(w.buffers[inputs[0]], w.buffers[*label]);
      if (b + 1 < batches && (!o.steps || step + 1 < o.steps))
        loader.start(order, shard(b + 1), batch);
      // The statistics and the timeline cover the steps alone (each step
      // waits for its collectives), not the trainer's own exchanges.
      takeCommStats();
      resetCollectiveSequence();
      setTracing(tracing);
      const double stepBegin = clockSeconds();
      const double stepBeginCpu = o.profile.empty() ? 0 : computeCpuSeconds();
      const int64_t skippedBefore = skippedCount();
      w.step(run);
      const double stepEnd = clockSeconds();
      const double stepEndCpu = o.profile.empty() ? 0 : computeCpuSeconds();
      traceSpan("step " + std::to_string(step + 1), stepBegin, stepEnd);
      setTracing(false);
      if (tracing) {
        std::vector<TraceEvent> events = takeTrace();
        if (!o.profile.empty() && step > start.step) // after a warm-up step
          profile.addStep(events, stepBegin, stepBeginCpu, stepEnd, stepEndCpu);
        if (!o.timeline.empty())
          timeline.insert(timeline.end(), events.begin(), events.end());
      }
      windowComm += takeCommStats();
      // The first step showed that every rank runs the same collectives
      // (checked); the later ones run the same code.
      if (step == start.step)
        setCollectiveChecks(false);
      ++step;
      now = b + 1 == batches ? Progress{step, epoch + 1, 0}
                             : Progress{step, epoch, b + 1};
      if (o.checkpointEvery && step % o.checkpointEvery == 0)
        saveCheckpoint(now);
      // The loss is the global batch's (averaged in the step): every rank
      // sees the same.
      const float stepLoss = valueOf(*loss);
      const bool skipped = skippedCount() != skippedBefore;
      if (!std::isfinite(stepLoss) && !skipped) {
        if (!ranks.root())
          throw QuietExit{1};
        fail("the loss is %g at step %lld (epoch %lld): training diverged "
             "(try a smaller --lr)",
             double(stepLoss), (long long)step, (long long)epoch);
      }
      // The loss averages leave skipped steps out.
      if (!skipped) {
        windowLoss += stepLoss;
        epochLoss += stepLoss;
        ++windowLossSteps;
        ++epochLossSteps;
      }
      windowSamples += batch;
      epochSamples += batch;
      if (correct) {
        windowCorrect += countOf(*correct);
        epochCorrect += countOf(*correct);
      }
      if (step % logEvery == 0) {
        std::vector<double> counts{double(windowCorrect)};
        ranks.sum(counts);
        const double seconds = std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() -
                                   windowStart)
                                   .count();
        const int64_t windowSteps = windowSamples / batch;
        if (ranks.root()) {
          std::printf("step=%lld epoch=%lld loss=%.6f", (long long)step,
                      (long long)epoch,
                      windowLossSteps ? windowLoss / double(windowLossSteps)
                                      : NAN);
          if (correct)
            std::printf(" acc=%.4f",
                        counts[0] / double(windowSamples * ranks.size *
                                           predictionsPerSample));
          std::printf(" samples/s=%.1f",
                      double(windowSamples * ranks.size) / seconds);
          if (reportComm)
            std::printf(" comm_ms=%.3f wait_ms=%.3f sent_MB=%.3f",
                        windowComm.busySeconds * 1e3 / double(windowSteps),
                        windowComm.blockedSeconds * 1e3 / double(windowSteps),
                        double(windowComm.sentBytes) / 1e6 /
                            double(windowSteps));
          if (reportComm)
            printSparseStats(windowComm, ranks.size);
          printLossScale(w);
          std::printf("\n");
          std::fflush(stdout);
        }
        totalComm += windowComm;
        windowComm = CommStats{};
        windowLoss = 0;
        windowCorrect = windowSamples = windowLossSteps = 0;
        windowStart = std::chrono::steady_clock::now();
      }
    }
    if (val) {
      // Every rank evaluates every P-th batch with rank 0's batch-norm
      // running statistics.
      for (size_t i = 0; i < info.args.size(); ++i)
        if (info.args[i].role == Role::Buffer)
          ranks.broadcast(w.buffers[i], info.args[i].bytes);
      std::vector<int64_t> inOrder(size_t(val->count));
      for (int64_t i = 0; i < val->count; ++i)
        inOrder[size_t(i)] = i;
      const int64_t valBatches = val->count / batch;
      std::vector<double> sums{0, 0}; // loss, correct
      for (int64_t b = ranks.rank; b < valBatches; b += ranks.size) {
        val->gather(inOrder, b * batch, batch, w.buffers[inputs[0]],
                    w.buffers[*label]);
        w.step(eval);
        sums[0] += valueOf(*evalLoss);
        if (evalCorrect)
          sums[1] += double(countOf(*evalCorrect));
      }
      ranks.sum(sums);
      if (ranks.root()) {
        std::printf("epoch=%lld val_loss=%.6f", (long long)epoch,
                    sums[0] / double(valBatches));
        if (evalCorrect) {
          lastValAcc =
              sums[1] / double(valBatches * batch * predictionsPerSample);
          std::printf(" val_acc=%.4f", lastValAcc);
        }
        std::printf(" val_samples=%lld\n", (long long)(valBatches * batch));
        std::fflush(stdout);
      }
    }
    if (!o.checkpointDir.empty() && now.batch == 0)
      saveCheckpoint(now);
  }
  totalComm += windowComm;
  if (!o.checkpointDir.empty())
    saveCheckpoint(now);
  std::vector<double> counts{double(epochCorrect)};
  ranks.sum(counts);
  if (ranks.root()) {
    std::printf("final steps=%lld epochs=%lld loss=%.6f", (long long)step,
                (long long)(epoch - 1),
                epochLossSteps ? epochLoss / double(epochLossSteps) : NAN);
    if (correct)
      std::printf(" acc=%.4f",
                  counts[0] /
                      double(std::max<int64_t>(1, epochSamples * ranks.size *
                                                      predictionsPerSample)));
    if (reportComm) {
      const double steps = double(std::max<int64_t>(1, step - start.step));
      const double hidden =
          totalComm.busySeconds > 0
              ? std::clamp(1 - totalComm.blockedSeconds /
                                   totalComm.busySeconds,
                           0.0, 1.0)
              : 1.0;
      std::printf(" ranks=%d comm_ms=%.3f wait_ms=%.3f sent_MB=%.3f "
                  "comm_hidden=%.3f",
                  ranks.size, totalComm.busySeconds * 1e3 / steps,
                  totalComm.blockedSeconds * 1e3 / steps,
                  double(totalComm.sentBytes) / 1e6 / steps, hidden);
      printSparseStats(totalComm, ranks.size);
    }
    printLossScale(w);
    if (lastValAcc >= 0)
      std::printf(" val_acc=%.4f", lastValAcc);
    std::printf("\n");
    std::fflush(stdout);
  }
  if (!o.saveOnnx.empty())
    ranks.onRoot([&] { saveOnnx(w, onnxPath, o.saveOnnx); });
  if (!o.timeline.empty())
    ranks.together([&] {
      writeTimeline(ranks.mpi ? dtrain_rt_comm_world() : nullptr, o.timeline,
                    timeline, origin);
    });
  if (!o.profile.empty())
    ranks.together(
        [&] { profile.write(dtrain_rt_comm_world(), o.profile); });
  return 0;
}

/// MAIN's exit status, or its error's (printed).
template <typename Main> int runReportingErrors(Main main) {
  try {
    return main();
  } catch (const QuietExit &e) {
    return e.status;
  } catch (const UsageError &e) {
    printError(e.message);
    return 2;
  } catch (const Failure &f) {
    printError(f.message);
  } catch (const std::bad_alloc &) {
    printError("out of memory");
  } catch (const std::exception &e) {
    printError(std::string("internal error: ") + e.what());
  }
  return 1;
}

/// Runs MAIN, turning every error into its message and exit status, then
/// finalizes MPI if MAIN initialized it: only after the message is out,
/// since a rank that finalized and exited first could let mpirun take the
/// others down before they print.
template <typename Main> int guardedMain(Main main) {
  const int status = runReportingErrors(main);
  dtrain_rt_finalize();
  return status;
}

} // namespace

extern "C" int dtrain_rt_trainer_main(int argc, char **argv, const char *info,
                                      void (*run)(void **buffers),
                                      void (*eval)(void **buffers)) {
  return guardedMain([&] { return trainerMain(argc, argv, info, run, eval); });
}

extern "C" int dtrain_rt_model_main(int argc, char **argv, const char *info,
                                    void (*run)(void **buffers)) {
  return guardedMain([&] { return modelMain(argc, argv, info, run); });
}

extern "C" void dtrain_rt_set_buffer_allocator(void *(*alloc)(size_t bytes),
                                               void (*free)(void *pointer)) {
  if (!alloc || !free)
    fatal(nullptr, "dtrain_rt_set_buffer_allocator: alloc or free is NULL");
  allocateBuffer = alloc;
  freeBuffer = free;
}

extern "C" void dtrain_rt_set_run_caller(void (*caller)(void (*)(void **),
                                                        void **, size_t)) {
  runCaller = caller;
}

extern "C" void dtrain_rt_set_input_prefetch(void (*prefetch)(void *pointer,
                                                              size_t bytes)) {
  prefetchInput = prefetch;
}
