//===- ONNXImporter.cpp - ONNX models into the nn dialect -----------------===//
//
// Builds `func.func @forward` in the nn dialect from an ONNX graph. Result
// types come from ONNX shape inference (run after symbolic input dimensions
// are bound) and every created op is verified at once, so the nn ops' own
// shape inference checks ONNX's, and decides where ONNX gave no shape
// (shapes computed from shapes beyond its data propagation). Shape
// arithmetic that exporters emit (Shape, Gather, Unsqueeze, Concat, ...)
// is evaluated at import into constants; weights are never copied into
// the IR.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Import/ONNXImporter.h"

#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include "onnx/defs/parser.h"
#include <google/protobuf/io/coded_stream.h>
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <charconv>
#include <numeric>

using namespace mlir;
using namespace mlir::dtrain;

namespace {

/// The newest ONNX the library (ONNX 1.12) knows: IR version 8, opset 17.
constexpr int64_t kMaxIRVersion = onnx::IR_VERSION;
constexpr int64_t kMaxOpset = 17;
constexpr int64_t kMinOpset = 7;
/// The most elements a folded ConstantOfShape may make.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;

/// Folded shape arithmetic: the integer (or small float) value of an ONNX
/// tensor known at import time.
struct ConstantValue {
  SmallVector<int64_t> shape;
  SmallVector<int64_t> ints;    // integer tensors
  SmallVector<double> floats;   // float tensors
  int32_t elemType = onnx::TensorProto::INT64;

  bool isInteger() const {
    return elemType == onnx::TensorProto::INT64 ||
           elemType == onnx::TensorProto::INT32 ||
           elemType == onnx::TensorProto::BOOL;
  }
  int64_t numElements() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
  /// Appends element INDEX of FROM, which has this constant's kind of
  /// elements (a fold that moves data).
  void appendElement(const ConstantValue &from, int64_t index) {
    if (from.isInteger())
      ints.push_back(from.ints[index]);
    else
      floats.push_back(from.floats[index]);
  }
};

/// Whether ONNX data type TYPE is a float type (initializers of which are
/// parameters).
bool isFloatDataType(int64_t type) {
  return type == onnx::TensorProto::FLOAT ||
         type == onnx::TensorProto::DOUBLE ||
         type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16;
}

/// The index in a tensor of shape OPERAND of element I of its NumPy
/// broadcast to RESULT: the broadcast dimensions pinned to 0.
int64_t getBroadcastSource(ArrayRef<int64_t> result, ArrayRef<int64_t> operand,
                           int64_t i) {
  int64_t index = 0, stride = 1;
  int64_t offset = result.size() - operand.size();
  for (int64_t d = result.size() - 1; d >= offset; --d) {
    int64_t position = i % result[d];
    i /= result[d];
    int64_t size = operand[d - offset];
    index += (size == 1 ? 0 : position) * stride;
    stride *= size;
  }
  return index;
}

/// The nn.compare predicate of ONNX comparison TYPE (Equal, Less, ...).
std::optional<nn::ComparePredicate> getComparePredicate(StringRef type) {
  return llvm::StringSwitch<std::optional<nn::ComparePredicate>>(type)
      .Case("Equal", nn::ComparePredicate::eq)
      .Case("Less", nn::ComparePredicate::lt)
      .Case("LessOrEqual", nn::ComparePredicate::le)
      .Case("Greater", nn::ComparePredicate::gt)
      .Case("GreaterOrEqual", nn::ComparePredicate::ge)
      .Default(std::nullopt);
}

/// Whether A PREDICATE B holds.
template <typename T>
bool compareValues(nn::ComparePredicate predicate, T a, T b) {
  switch (predicate) {
  case nn::ComparePredicate::eq:
    return a == b;
  case nn::ComparePredicate::lt:
    return a < b;
  case nn::ComparePredicate::le:
    return a <= b;
  case nn::ComparePredicate::gt:
    return a > b;
  case nn::ComparePredicate::ge:
    return a >= b;
  }
  llvm_unreachable("unknown comparison");
}

/// The element count of a tensor with dimensions `dims` as read from a
/// file: none when a dimension is negative or the count overflows.
template <typename Range>
std::optional<int64_t> getCheckedElementCount(const Range &dims) {
  int64_t count = 1;
  for (int64_t dim : dims)
    if (dim < 0 || llvm::MulOverflow(count, dim, count))
      return std::nullopt;
  return count;
}

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, const ONNXImportOptions &options)
      : ctx(ctx), path(path), options(options), builder(ctx),
        fileLoc(FileLineColLoc::get(ctx, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run(onnx::ModelProto &model);
  FailureOr<llvm::StringSet<>>
  getFrozenInitializers(const onnx::ModelProto &model);

private:
  //===--- Diagnostics ----------------------------------------------------===//
  Location nodeLoc(const onnx::NodeProto &node) {
    std::string name = node.name().empty() ? node.op_type() + "#" +
                                                 std::to_string(nodeIndex)
                                           : node.name();
    return NameLoc::get(StringAttr::get(ctx, name), fileLoc);
  }
  /// "node 'conv1' (Conv): ", or "node #3 (Conv): " for unnamed nodes.
  InFlightDiagnostic nodeError(const onnx::NodeProto &node) {
    InFlightDiagnostic diag = emitError(nodeLoc(node)) << "node ";
    if (node.name().empty())
      diag << "#" << nodeIndex;
    else
      diag << "'" << node.name() << "'";
    return std::move(diag << " (" << node.op_type() << "): ");
  }

  //===--- Model-level steps ----------------------------------------------===//
  LogicalResult checkVersions(const onnx::ModelProto &model);
  LogicalResult checkSupportedOps(const onnx::GraphProto &graph);
  LogicalResult checkDataflow(const onnx::GraphProto &graph);
  LogicalResult checkWindowOps(const onnx::ModelProto &model);
  LogicalResult bindInputShapes(onnx::GraphProto &graph);
  LogicalResult checkExternalData(const onnx::TensorProto &tensor);
  LogicalResult checkTensorStorage(const onnx::TensorProto &tensor,
                                   const Twine &what, bool isInitializer);
  LogicalResult checkTensorsStorage(const onnx::GraphProto &graph);
  void collectTypes(const onnx::GraphProto &graph);

  //===--- Types and values -----------------------------------------------===//
  FailureOr<Type> getElementType(int32_t onnxType, Location loc);
  /// The type ONNX shape inference gives `name`. Symbolic dimensions are an
  /// error, or become `?` with `allowSymbolic` (for node results, which the
  /// nn op's own inference then makes static).
  FailureOr<RankedTensorType> getTensorType(const std::string &name,
                                            Location loc,
                                            bool allowSymbolic = false);
  /// The type of node result `name` for createOp, which refines what is not
  /// static with the op's own inference: ONNX's, symbolic dimensions as
  /// `?`, or an unranked tensor where ONNX's inference gave no shape (a
  /// shape computed by shape arithmetic that its data propagation does not
  /// follow, such as PyTorch's x.view(b, 2, c // 2, h, w) for sizes that
  /// x.size() gave).
  FailureOr<TensorType> getResultType(const std::string &name, Location loc);
  FailureOr<Value> getValue(const onnx::NodeProto &node, int index);
  const ConstantValue *getConstant(const onnx::NodeProto &node, int index);
  /// The constant at input #index if it is an integer tensor (axes, shapes,
  /// pads), else null.
  const ConstantValue *getIntConstant(const onnx::NodeProto &node, int index);
  bool hasInput(const onnx::NodeProto &node, int index) {
    return index < node.input_size() && !node.input(index).empty();
  }
  FailureOr<ConstantValue> readConstant(const onnx::TensorProto &tensor,
                                        Location loc);
  Value materialize(const ConstantValue &constant, Type elementType);
  Value scalarConstant(double value, Type elementType);

  //===--- Ops -------------------------------------------------------------===//
  /// Creates `opName` with the type ONNX inferred for each node output and
  /// verifies it, so that the op's own inference checks ONNX's.
  FailureOr<Operation *> createOp(const onnx::NodeProto &node,
                                  StringRef opName, ValueRange operands,
                                  ArrayRef<NamedAttribute> attrs,
                                  ArrayRef<Type> resultTypes);
  /// The common case: one result, bound to the node's first output and typed
  /// as ONNX inferred it, or as `resultType` where the importer computes it.
  LogicalResult emitSingle(const onnx::NodeProto &node, StringRef opName,
                           ValueRange operands,
                           ArrayRef<NamedAttribute> attrs = {},
                           TensorType resultType = {});
  LogicalResult importNode(const onnx::NodeProto &node);
  LogicalResult foldNode(const onnx::NodeProto &node, bool &folded);
  FailureOr<ConstantValue> foldScatterND(const onnx::NodeProto &node,
                                         const ConstantValue &data);

  LogicalResult importGemm(const onnx::NodeProto &node);
  LogicalResult emitReshape(const onnx::NodeProto &node, Value x,
                            ArrayRef<int64_t> shape);
  LogicalResult importFlatten(const onnx::NodeProto &node);
  /// Reshape, Unsqueeze and Squeeze of a run-time tensor.
  LogicalResult importReshape(const onnx::NodeProto &node);
  /// The shape a Reshape NODE makes of a tensor of shape DIMS.
  FailureOr<SmallVector<int64_t>> getReshapeTarget(const onnx::NodeProto &node,
                                                   ArrayRef<int64_t> dims);
  /// The shape an Unsqueeze or Squeeze NODE makes of a tensor of shape
  /// DIMS.
  FailureOr<SmallVector<int64_t>> getSqueezeTarget(const onnx::NodeProto &node,
                                                   ArrayRef<int64_t> dims);
  /// The box of a Slice NODE of a tensor of shape DIMS: bounds clamped,
  /// negative ones counted from the end; negative steps (a reversal, from
  /// STARTS backwards) only where NEGATIVE_STEPS allows them.
  struct SliceBox {
    SmallVector<int64_t> starts, sizes, steps;
  };
  FailureOr<SliceBox> getSliceBox(const onnx::NodeProto &node,
                                  ArrayRef<int64_t> dims, bool negativeSteps);
  /// The node's `axis` attribute (DEFAULT_AXIS when absent) in [0, rank);
  /// an error at the node when out of range.
  FailureOr<int64_t> getAxisAttr(const onnx::NodeProto &node,
                                 int64_t defaultAxis, int64_t rank);
  /// nn.slice of COUNT elements of X from START along AXIS, all of the
  /// other dimensions.
  FailureOr<Value> createAxisSlice(const onnx::NodeProto &node, Value x,
                                   int64_t axis, int64_t start, int64_t count);
  LogicalResult importSplit(const onnx::NodeProto &node);
  LogicalResult importLayerNorm(const onnx::NodeProto &node);
  LogicalResult importMatMul(const onnx::NodeProto &node);
  LogicalResult importPow(const onnx::NodeProto &node);
  LogicalResult importCast(const onnx::NodeProto &node);
  LogicalResult importCompare(const onnx::NodeProto &node,
                              nn::ComparePredicate predicate);
  LogicalResult importLogical(const onnx::NodeProto &node);
  LogicalResult importExtremum(const onnx::NodeProto &node);
  LogicalResult checkNotTrained(const onnx::NodeProto &node, Value operand);
  LogicalResult importExpand(const onnx::NodeProto &node);
  LogicalResult importGather(const onnx::NodeProto &node);
  LogicalResult importClip(const onnx::NodeProto &node);
  LogicalResult importActivation(const onnx::NodeProto &node);
  LogicalResult importSoftmax(const onnx::NodeProto &node, StringRef opName);
  LogicalResult importReduce(const onnx::NodeProto &node, StringRef opName);
  LogicalResult importConv(const onnx::NodeProto &node);
  LogicalResult importPool(const onnx::NodeProto &node);
  LogicalResult importBatchNorm(const onnx::NodeProto &node);
  LogicalResult importDropout(const onnx::NodeProto &node);
  LogicalResult importSlice(const onnx::NodeProto &node);
  LogicalResult importPad(const onnx::NodeProto &node);

  /// Explicit [top, left, bottom, right] padding of a 2-d window op,
  /// resolving auto_pad.
  FailureOr<SmallVector<int64_t>> getPadding2d(const onnx::NodeProto &node,
                                              ArrayRef<int64_t> inputHW,
                                              ArrayRef<int64_t> kernel,
                                              ArrayRef<int64_t> strides,
                                              ArrayRef<int64_t> dilations);

  MLIRContext *ctx;
  std::string path;
  const ONNXImportOptions &options;
  OpBuilder builder;
  Location fileLoc;
  int64_t opset = 0;
  int nodeIndex = 0;

  llvm::StringMap<onnx::TypeProto> types;
  llvm::StringMap<Value> values;
  llvm::StringMap<ConstantValue> constants;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  /// Names read by some node or returned by the graph.
  llvm::StringSet<> used;
  /// The new values of buffer arguments (batch-norm running statistics in
  /// training mode), which the function returns marked train.updated.
  SmallVector<std::pair<BlockArgument, Value>> bufferUpdates;

  /// True when output #index of `node` exists and something reads it.
  bool isOutputUsed(const onnx::NodeProto &node, int index) {
    return index < node.output_size() && used.contains(node.output(index));
  }
};

//===----------------------------------------------------------------------===//
// ONNX attributes
//===----------------------------------------------------------------------===//

/// ONNX hyperparameters (attributes, scalar constants) are f32; they are
/// widened through their shortest decimal form so that 0.1f becomes 0.1,
/// not 0.10000000149011612.
double widenFloat(float value) {
  char text[32];
  *std::to_chars(text, text + sizeof(text) - 1, value).ptr = '\0';
  return std::strtod(text, nullptr);
}

const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     StringRef name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t getIntAttr(const onnx::NodeProto &node, StringRef name,
                   int64_t defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->i() : defaultValue;
}

double getFloatAttr(const onnx::NodeProto &node, StringRef name,
                    double defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? widenFloat(attr->f()) : defaultValue;
}

std::string getStringAttr(const onnx::NodeProto &node, StringRef name,
                          StringRef defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->s() : defaultValue.str();
}

SmallVector<int64_t> getIntsAttr(const onnx::NodeProto &node, StringRef name,
                                 ArrayRef<int64_t> defaultValue = {}) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  if (!attr)
    return SmallVector<int64_t>(defaultValue);
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

/// ONNX ops this importer turns into nn ops or folds into constants.
const llvm::StringSet<> &supportedOps() {
  // clang-format off
  static const llvm::StringSet<> ops = {
      "Abs",                 "Add",                 "And",
      "AveragePool",         "BatchNormalization",  "Cast",
      "Celu",                "Clip",                "Concat",
      "Constant",            "ConstantOfShape",     "Conv",
      "Div",                 "Dropout",             "Elu",
      "Equal",               "Erf",                 "Exp",
      "Expand",              "Flatten",             "Gather",
      "Gemm",                "GlobalAveragePool",   "Greater",
      "GreaterOrEqual",      "HardSigmoid",         "HardSwish",
      "Identity",            "LayerNormalization",  "LeakyRelu",
      "Less",                "LessOrEqual",         "Log",
      "LogSoftmax",          "MatMul",              "Max",
      "MaxPool",             "Min",                 "Mod",
      "Mul",                 "Neg",                 "Not",
      "Or",                  "Pad",                 "Pow",
      "Range",               "Reciprocal",          "ReduceMean",
      "ReduceSum",           "Relu",                "Reshape",
      "ScatterND",           "Selu",                "Shape",
      "Sigmoid",             "Slice",               "Softmax",
      "Softplus",            "Split",               "Sqrt",
      "Squeeze",             "Sub",                 "Tanh",
      "Transpose",           "Unsqueeze",           "Where",
      "Xor"};
  // clang-format on
  return ops;
}

//===----------------------------------------------------------------------===//
// Model-level steps
//===----------------------------------------------------------------------===//

LogicalResult Importer::checkVersions(const onnx::ModelProto &model) {
  if (model.ir_version() > kMaxIRVersion)
    return emitError(fileLoc)
           << "model IR version " << model.ir_version()
           << " is newer than this build of dtrain supports (ONNX 1.12: IR "
              "version <= "
           << kMaxIRVersion << "); re-export with an older opset";
  for (const onnx::OperatorSetIdProto &import : model.opset_import()) {
    if (!import.domain().empty() && import.domain() != "ai.onnx")
      continue;
    opset = import.version();
  }
  if (opset == 0)
    return emitError(fileLoc) << "model imports no default ONNX opset";
  if (opset > kMaxOpset || opset < kMinOpset)
    return emitError(fileLoc)
           << "model uses opset " << opset << "; dtrain supports opsets "
           << kMinOpset << " to " << kMaxOpset
           << " (export with opset_version in that range)";
  return success();
}

LogicalResult Importer::checkSupportedOps(const onnx::GraphProto &graph) {
  bool ok = true;
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    nodeIndex = index;
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (defaultDomain && supportedOps().contains(node.op_type()))
      continue;
    nodeError(node) << "unsupported operator"
                    << (defaultDomain ? "" : " of domain '" + node.domain() +
                                                 "'");
    ok = false;
  }
  return success(ok);
}

/// True for the operators whose ONNX shape inference (convPoolShapeInference)
/// trusts its inputs' ranks and attribute lengths.
static bool isWindowOp(StringRef type) {
  return type == "Conv" || type == "MaxPool" || type == "AveragePool" ||
         type == "ConvTranspose" || type == "LpPool";
}

/// True for the operators whose ONNX shape inference indexes their input's
/// dimensions by an unchecked attribute: the window ops, and
/// LayerNormalization's axis (a scalar input crashes it).
static bool isRankTrustingOp(StringRef type) {
  return isWindowOp(type) || type == "LayerNormalization";
}

LogicalResult Importer::checkWindowOps(const onnx::ModelProto &model) {
  // ONNX's shape inference of convolutions and pools divides by strides
  // and indexes by ranks unchecked: a zero stride or a rank-2 input crashes
  // it, as a scalar input or an axis out of range crashes
  // LayerNormalization's. Their preconditions are checked here, with the
  // ranks from a first, lenient inference in which each such op is replaced
  // by an Identity (which keeps the rank).
  onnx::ModelProto probe = model;
  for (onnx::NodeProto &node : *probe.mutable_graph()->mutable_node()) {
    if (!isRankTrustingOp(node.op_type()) || node.input_size() == 0 ||
        node.output_size() == 0)
      continue;
    node.set_op_type("Identity");
    node.clear_attribute();
    node.mutable_input()->DeleteSubrange(1, node.input_size() - 1);
    node.mutable_output()->DeleteSubrange(1, node.output_size() - 1);
  }
  try {
    onnx::shape_inference::InferShapes(
        probe, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(/*check_type=*/false, /*strict_mode=*/0,
                                    /*data_prop=*/true));
  } catch (const std::exception &) {
    // The real inference below reports what is wrong.
  }
  llvm::StringMap<int64_t> ranks;
  const onnx::GraphProto &graph = probe.graph();
  for (const auto &list : {graph.input(), graph.value_info(), graph.output()})
    for (const onnx::ValueInfoProto &info : list)
      if (info.type().tensor_type().has_shape())
        ranks[info.name()] = info.type().tensor_type().shape().dim_size();
  for (const onnx::TensorProto &tensor : graph.initializer())
    ranks[tensor.name()] = tensor.dims_size();

  bool ok = true;
  for (int index = 0; index < model.graph().node_size(); ++index) {
    const onnx::NodeProto &node = model.graph().node(index);
    nodeIndex = index;
    if (!isRankTrustingOp(node.op_type()))
      continue;
    bool isConv = node.op_type().find("Conv") != std::string::npos;
    int minInputs = isConv ? 2 : 1;
    auto rankOf = [&](int input) -> std::optional<int64_t> {
      auto it = input < node.input_size() ? ranks.find(node.input(input))
                                          : ranks.end();
      return it == ranks.end() ? std::nullopt
                               : std::optional<int64_t>(it->second);
    };
    std::optional<int64_t> rank = rankOf(0);
    auto fail = [&]() -> InFlightDiagnostic {
      ok = false;
      return nodeError(node);
    };
    if (!isWindowOp(node.op_type())) {
      // LayerNormalization: the axis must name a dimension of the input.
      int64_t axis = getIntAttr(node, "axis", -1);
      if (rank && (axis < -*rank || axis >= *rank))
        fail() << "axis " << axis << " is out of range for input '"
               << node.input(0) << "' of rank " << *rank;
      continue;
    }
    if (node.input_size() < minInputs) {
      fail() << "needs " << minInputs << " inputs, got " << node.input_size();
      continue;
    }
    // An input of unknown rank here has none in the real inference either
    // (which differs only in the window ops' output dimensions, not in what
    // is known), and ONNX infers no shape for a window op without its
    // input's: the nn op, whose inference checks everything, decides.
    if (!rank)
      continue;
    if (*rank < 3) {
      fail() << "input '" << node.input(0) << "' has rank " << *rank
             << "; a window needs batch, channel and spatial dimensions";
      continue;
    }
    int64_t spatial = *rank - 2;
    if (isConv && rankOf(1) != rank) {
      fail() << "the weights must have the input's rank " << *rank;
      continue;
    }
    if (!isConv && !findAttr(node, "kernel_shape")) {
      fail() << "the kernel_shape attribute is required";
      continue;
    }
    struct WindowAttr {
      StringRef name;
      int64_t length;
      bool positive;
    };
    for (const WindowAttr &attr : {WindowAttr{"kernel_shape", spatial, true},
                                   WindowAttr{"strides", spatial, true},
                                   WindowAttr{"dilations", spatial, true},
                                   WindowAttr{"pads", 2 * spatial, false}}) {
      StringRef name = attr.name;
      int64_t length = attr.length;
      bool positive = attr.positive;
      if (!findAttr(node, name))
        continue;
      SmallVector<int64_t> values = getIntsAttr(node, name);
      if (static_cast<int64_t>(values.size()) != length) {
        fail() << name << " has " << values.size() << " values, expected "
               << length;
        break;
      }
      if (llvm::any_of(values, [&](int64_t v) {
            return positive ? v <= 0 : v < 0;
          })) {
        fail() << name << " must be "
               << (positive ? "positive" : "non-negative") << ", got ["
               << llvm::interleaved(values) << "]";
        break;
      }
    }
    if (findAttr(node, "group") && getIntAttr(node, "group", 1) <= 0)
      fail() << "group must be positive, got " << getIntAttr(node, "group", 1);
  }
  return success(ok);
}

LogicalResult Importer::checkDataflow(const onnx::GraphProto &graph) {
  // Every value a node reads must exist before it: ONNX's shape inference
  // dereferences the types of undefined inputs.
  llvm::StringSet<> defined;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &tensor : graph.initializer())
    defined.insert(tensor.name());
  bool ok = true;
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    nodeIndex = index;
    for (const std::string &input : node.input())
      if (!input.empty() && !defined.contains(input)) {
        nodeError(node) << "input '" << input
                        << "' is neither a graph input, an initializer nor "
                           "an output of an earlier node";
        ok = false;
      }
    for (const std::string &output : node.output())
      if (!output.empty())
        defined.insert(output);
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!defined.contains(output.name())) {
      emitError(fileLoc) << "graph output '" << output.name()
                         << "' is not computed by any node";
      ok = false;
    }
  return success(ok);
}

LogicalResult Importer::bindInputShapes(onnx::GraphProto &graph) {
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializerNames.insert(tensor.name());
  llvm::StringSet<> bound;
  bool ok = true;
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    if (initializerNames.contains(input.name()))
      continue;
    if (!input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape()) {
      emitError(fileLoc) << "input '" << input.name()
                         << "' has no tensor shape";
      ok = false;
      continue;
    }
    onnx::TensorShapeProto *shape =
        input.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto given = options.inputShapes.find(input.name());
    if (given != options.inputShapes.end()) {
      bound.insert(input.name());
      if (static_cast<int64_t>(given->second.size()) != shape->dim_size()) {
        emitError(fileLoc) << "--input-shape " << input.name() << " has "
                           << given->second.size()
                           << " dimensions but the input has rank "
                           << shape->dim_size();
        ok = false;
        continue;
      }
      for (auto [dim, size] : llvm::zip(*shape->mutable_dim(), given->second)) {
        if (dim.has_dim_value() && dim.dim_value() != size) {
          emitError(fileLoc) << "--input-shape " << input.name()
                             << " gives size " << size << " where the model "
                             << "fixes " << dim.dim_value();
          ok = false;
        }
        dim.set_dim_value(size);
      }
      continue;
    }
    for (auto [index, dim] : llvm::enumerate(*shape->mutable_dim())) {
      if (dim.has_dim_value() && dim.dim_value() >= 0)
        continue;
      if (index == 0 && options.batchSize) {
        dim.set_dim_value(*options.batchSize);
        continue;
      }
      emitError(fileLoc) << "input '" << input.name() << "' dimension "
                         << index << " is symbolic ('" << dim.dim_param()
                         << "'): bind it with "
                         << (index == 0 ? "--batch-size N or " : "")
                         << "--input-shape " << input.name() << "=...";
      ok = false;
    }
  }
  for (const auto &entry : options.inputShapes)
    if (!bound.contains(entry.getKey())) {
      emitError(fileLoc) << "--input-shape names '" << entry.getKey()
                         << "', which is not a data input of the model";
      ok = false;
    }
  return success(ok);
}

LogicalResult Importer::checkExternalData(const onnx::TensorProto &tensor) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return success();
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() != "location")
      continue;
    StringRef location = entry.value();
    bool escapes = llvm::sys::path::is_absolute(location) ||
                   llvm::any_of(llvm::make_range(
                                    llvm::sys::path::begin(location),
                                    llvm::sys::path::end(location)),
                                [](StringRef part) { return part == ".."; });
    if (escapes)
      return emitError(fileLoc)
             << "initializer '" << tensor.name()
             << "' has external data at '" << location
             << "', outside the model's directory (rejected: a model may "
                "only refer to files beside it)";
    return success();
  }
  return emitError(fileLoc) << "initializer '" << tensor.name()
                            << "' has external data without a location";
}

/// The bytes of one element of ONNX data type TYPE in raw_data, and the
/// values per element in its typed field (complex numbers take two);
/// nullopt for types without a fixed size (strings, unknown types).
static std::optional<std::pair<int64_t, int64_t>>
getElementStorage(int32_t type) {
  switch (type) {
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL:
    return std::pair{1, 1};
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return std::pair{2, 1};
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return std::pair{4, 1};
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::DOUBLE:
    return std::pair{8, 1};
  case onnx::TensorProto::COMPLEX64:
    return std::pair{8, 2};
  case onnx::TensorProto::COMPLEX128:
    return std::pair{16, 2};
  default:
    return std::nullopt;
  }
}

/// How many values TENSOR holds in the typed field that ONNX reads for its
/// data type (int32_data for the 8- and 16-bit types and booleans,
/// uint64_data for the unsigned 32- and 64-bit ones), and in the others.
static std::pair<int64_t, int64_t>
getTypedValueCounts(const onnx::TensorProto &tensor) {
  const int64_t all = tensor.float_data_size() + tensor.int32_data_size() +
                      tensor.int64_data_size() + tensor.double_data_size() +
                      tensor.uint64_data_size();
  int64_t typed = 0;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::COMPLEX64:
    typed = tensor.float_data_size();
    break;
  case onnx::TensorProto::INT64:
    typed = tensor.int64_data_size();
    break;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::COMPLEX128:
    typed = tensor.double_data_size();
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    typed = tensor.uint64_data_size();
    break;
  default:
    typed = tensor.int32_data_size();
    break;
  }
  return {typed, all - typed};
}

LogicalResult Importer::checkTensorStorage(const onnx::TensorProto &tensor,
                                           const Twine &what,
                                           bool isInitializer) {
  // ONNX's own shape inference reads constant tensors (data propagation)
  // trusting that their data matches their dims: a short raw_data makes it
  // write through a null pointer. Inline data is checked here first.
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return success();
  std::optional<int64_t> count = getCheckedElementCount(tensor.dims());
  if (!count)
    return emitError(fileLoc) << what << " has invalid dimensions";
  if (tensor.data_type() == onnx::TensorProto::STRING)
    return success(); // never read as numbers
  std::optional<std::pair<int64_t, int64_t>> storage =
      getElementStorage(tensor.data_type());
  if (!storage)
    return emitError(fileLoc) << what << " has unknown data type "
                              << tensor.data_type();
  const auto [bytes, values] = *storage;
  // A raw_data field, even an empty one, is what ONNX reads.
  if (tensor.has_raw_data()) {
    if (int64_t(tensor.raw_data().size()) != *count * bytes)
      return emitError(fileLoc)
             << what << " holds " << tensor.raw_data().size()
             << " bytes of data, expected " << *count * bytes << " for "
             << *count << " elements";
    return success();
  }
  // ONNX reads one typed field per data type; values elsewhere leave it
  // empty, and its data propagation reads past it.
  const auto [stored, misplaced] = getTypedValueCounts(tensor);
  if (misplaced)
    return emitError(fileLoc)
           << what << " holds " << misplaced
           << " values in a field that its data type ("
           << onnx::TensorProto_DataType_Name(
                  static_cast<onnx::TensorProto_DataType>(tensor.data_type()))
           << ") does not use";
  // Large initializers arrive without their raw data (stripWeights): the
  // weights are read from the file where they are used.
  if (stored == 0 && isInitializer)
    return success();
  if (stored != *count * values)
    return emitError(fileLoc) << what << " holds " << stored
                              << " values, expected " << *count * values
                              << " for " << *count << " elements";
  return success();
}

LogicalResult Importer::checkTensorsStorage(const onnx::GraphProto &graph) {
  bool ok = true;
  for (const onnx::TensorProto &tensor : graph.initializer())
    ok &= succeeded(checkTensorStorage(
        tensor, "initializer '" + tensor.name() + "'", true));
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      auto what = [&] {
        return "attribute '" + attribute.name() + "' of node '" +
               (node.name().empty() ? node.output_size() ? node.output(0) : ""
                                    : node.name()) +
               "' (" + node.op_type() + ")";
      };
      if (attribute.has_t())
        ok &= succeeded(checkTensorStorage(attribute.t(), what(), false));
      for (const onnx::TensorProto &tensor : attribute.tensors())
        ok &= succeeded(checkTensorStorage(tensor, what(), false));
    }
  return success(ok);
}

void Importer::collectTypes(const onnx::GraphProto &graph) {
  for (const auto &list : {graph.input(), graph.value_info(), graph.output()})
    for (const onnx::ValueInfoProto &info : list)
      types[info.name()] = info.type();
}

//===----------------------------------------------------------------------===//
// Types and values
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::getElementType(int32_t onnxType, Location loc) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return Type(builder.getF32Type());
  case onnx::TensorProto::DOUBLE:
    return Type(builder.getF64Type());
  case onnx::TensorProto::FLOAT16:
    return Type(builder.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(builder.getBF16Type());
  case onnx::TensorProto::INT64:
    return Type(builder.getI64Type());
  case onnx::TensorProto::INT32:
    return Type(builder.getI32Type());
  case onnx::TensorProto::BOOL:
    return Type(builder.getI1Type());
  default:
    return emitError(loc) << "unsupported element type "
                          << onnx::TensorProto_DataType_Name(
                                 static_cast<onnx::TensorProto_DataType>(
                                     onnxType));
  }
}

FailureOr<RankedTensorType> Importer::getTensorType(const std::string &name,
                                                    Location loc,
                                                    bool allowSymbolic) {
  auto it = types.find(name);
  if (it == types.end() || !it->second.has_tensor_type() ||
      !it->second.tensor_type().has_shape())
    return emitError(loc) << "ONNX shape inference gave no shape for '"
                          << name << "'";
  const onnx::TypeProto_Tensor &tensor = it->second.tensor_type();
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto_Dimension &dim : tensor.shape().dim()) {
    if (!dim.has_dim_value()) {
      if (!allowSymbolic)
        return emitError(loc)
               << "'" << name << "' has a symbolic dimension ('"
               << dim.dim_param()
               << "') after binding the inputs: dtrain needs static shapes";
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    shape.push_back(dim.dim_value());
  }
  if (!getCheckedElementCount(llvm::make_filter_range(
          shape, [](int64_t dim) { return !ShapedType::isDynamic(dim); })))
    return emitError(loc) << "'" << name << "' has invalid dimensions";
  FailureOr<Type> elementType = getElementType(tensor.elem_type(), loc);
  if (failed(elementType))
    return failure();
  return RankedTensorType::get(shape, *elementType);
}

FailureOr<TensorType> Importer::getResultType(const std::string &name,
                                              Location loc) {
  auto it = types.find(name);
  if (it != types.end() && it->second.tensor_type().has_shape()) {
    FailureOr<RankedTensorType> type =
        getTensorType(name, loc, /*allowSymbolic=*/true);
    return failed(type) ? FailureOr<TensorType>(failure())
                        : FailureOr<TensorType>(*type);
  }
  // The op's inference replaces the element type too.
  Type elementType = builder.getF32Type();
  if (it != types.end() && it->second.tensor_type().has_elem_type()) {
    FailureOr<Type> onnxElementType =
        getElementType(it->second.tensor_type().elem_type(), loc);
    if (failed(onnxElementType))
      return failure();
    elementType = *onnxElementType;
  }
  return TensorType(UnrankedTensorType::get(elementType));
}

FailureOr<ConstantValue>
Importer::readConstant(const onnx::TensorProto &tensor, Location loc) {
  ConstantValue value;
  value.elemType = tensor.data_type();
  std::optional<int64_t> checkedCount = getCheckedElementCount(tensor.dims());
  if (!checkedCount)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' has invalid dimensions";
  value.shape.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t count = *checkedCount;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << "constant '" << tensor.name()
                          << "' stores its data externally; only parameters "
                             "may";
  const std::string &raw = tensor.raw_data();
  auto readRaw = [&](auto zero, auto &out) -> LogicalResult {
    using T = decltype(zero);
    if (raw.size() != count * sizeof(T))
      return emitError(loc) << "tensor '" << tensor.name() << "' holds "
                            << raw.size() << " bytes, expected "
                            << count * sizeof(T);
    for (int64_t i = 0; i < count; ++i) {
      T element;
      std::memcpy(&element, raw.data() + i * sizeof(T), sizeof(T));
      out.push_back(element);
    }
    return success();
  };
  LogicalResult read = success();
  switch (value.elemType) {
  case onnx::TensorProto::INT64:
    read = raw.empty() ? (value.ints.assign(tensor.int64_data().begin(),
                                            tensor.int64_data().end()),
                          success())
                       : readRaw(int64_t(), value.ints);
    break;
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::BOOL:
    read = raw.empty() ? (value.ints.assign(tensor.int32_data().begin(),
                                            tensor.int32_data().end()),
                          success())
           : value.elemType == onnx::TensorProto::BOOL
               ? readRaw(uint8_t(), value.ints)
               : readRaw(int32_t(), value.ints);
    break;
  case onnx::TensorProto::FLOAT: {
    SmallVector<float> floats;
    read = raw.empty() ? (floats.assign(tensor.float_data().begin(),
                                        tensor.float_data().end()),
                          success())
                       : readRaw(float(), floats);
    llvm::append_range(value.floats, llvm::map_range(floats, widenFloat));
    break;
  }
  case onnx::TensorProto::DOUBLE:
    read = raw.empty() ? (value.floats.assign(tensor.double_data().begin(),
                                              tensor.double_data().end()),
                          success())
                       : readRaw(double(), value.floats);
    break;
  default:
    return emitError(loc) << "constant '" << tensor.name()
                          << "' has an unsupported element type "
                          << onnx::TensorProto_DataType_Name(
                                 static_cast<onnx::TensorProto_DataType>(
                                     value.elemType));
  }
  if (failed(read))
    return failure();
  int64_t got = value.isInteger() ? value.ints.size() : value.floats.size();
  if (got != count)
    return emitError(loc) << "tensor '" << tensor.name() << "' has " << got
                          << " values for " << count << " elements";
  return value;
}

Value Importer::materialize(const ConstantValue &constant, Type elementType) {
  auto type = RankedTensorType::get(constant.shape, elementType);
  DenseElementsAttr attr;
  if (isa<FloatType>(elementType)) {
    SmallVector<APFloat> elements;
    for (double v : constant.isInteger()
                        ? SmallVector<double>(constant.ints.begin(),
                                              constant.ints.end())
                        : constant.floats) {
      APFloat f(v);
      bool lost;
      f.convert(cast<FloatType>(elementType).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      elements.push_back(f);
    }
    attr = DenseElementsAttr::get(type, elements);
  } else {
    SmallVector<APInt> elements;
    // Booleans are 0 or 1, which a signed 1-bit APInt cannot hold.
    for (int64_t v : constant.ints)
      elements.push_back(elementType.isInteger(1)
                             ? APInt(1, v != 0)
                             : APInt(elementType.getIntOrFloatBitWidth(), v,
                                     /*isSigned=*/true));
    attr = DenseElementsAttr::get(type, elements);
  }
  return arith::ConstantOp::create(builder, fileLoc, attr);
}

Value Importer::scalarConstant(double value, Type elementType) {
  ConstantValue constant;
  constant.elemType = onnx::TensorProto::DOUBLE;
  constant.floats = {value};
  return materialize(constant, elementType);
}

const ConstantValue *Importer::getIntConstant(const onnx::NodeProto &node,
                                              int index) {
  const ConstantValue *constant = getConstant(node, index);
  return constant && constant->isInteger() ? constant : nullptr;
}

const ConstantValue *Importer::getConstant(const onnx::NodeProto &node,
                                           int index) {
  if (!hasInput(node, index))
    return nullptr;
  auto it = constants.find(node.input(index));
  return it == constants.end() ? nullptr : &it->second;
}

FailureOr<Value> Importer::getValue(const onnx::NodeProto &node, int index) {
  if (!hasInput(node, index))
    return nodeError(node) << "input #" << index << " is missing";
  const std::string &name = node.input(index);
  if (Value value = values.lookup(name))
    return value;
  if (const ConstantValue *constant = getConstant(node, index)) {
    FailureOr<Type> elementType =
        getElementType(constant->elemType, nodeLoc(node));
    if (failed(elementType))
      return failure();
    Value value = materialize(*constant, *elementType);
    values[name] = value;
    return value;
  }
  return nodeError(node) << "input '" << name
                         << "' is neither a graph input, an initializer nor "
                            "an output of an earlier node";
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

FailureOr<Operation *> Importer::createOp(const onnx::NodeProto &node,
                                          StringRef opName,
                                          ValueRange operands,
                                          ArrayRef<NamedAttribute> attrs,
                                          ArrayRef<Type> resultTypes) {
  OperationState state(nodeLoc(node), opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(resultTypes);
  Operation *op = builder.create(state);
  // Where ONNX left a dimension symbolic, the op's own inference decides.
  bool refine = llvm::any_of(resultTypes, [](Type type) {
    return !cast<ShapedType>(type).hasStaticShape();
  });
  if (auto inferable = dyn_cast<InferTypeOpInterface>(op); refine && inferable) {
    SmallVector<Type> inferred;
    if (failed(inferable.inferReturnTypes(
            ctx, op->getLoc(), op->getOperands(), op->getAttrDictionary(),
            op->getPropertiesStorage(), op->getRegions(), inferred)))
      return failure();
    for (auto [result, type] : llvm::zip(op->getResults(), inferred))
      result.setType(type);
  }
  for (auto [index, type] : llvm::enumerate(op->getResultTypes())) {
    if (!cast<ShapedType>(type).hasRank())
      return nodeError(node)
             << "ONNX shape inference gave no shape for output #" << index
             << " and " << opName << " does not infer one";
    if (!cast<ShapedType>(type).hasStaticShape())
      return nodeError(node) << "no static shape for output #" << index
                             << " (" << type << ")";
  }
  if (failed(verify(op, /*verifyRecursively=*/false)))
    return failure();
  return op;
}

LogicalResult Importer::emitSingle(const onnx::NodeProto &node,
                                   StringRef opName, ValueRange operands,
                                   ArrayRef<NamedAttribute> attrs,
                                   TensorType resultType) {
  if (!resultType) {
    FailureOr<TensorType> type = getResultType(node.output(0), nodeLoc(node));
    if (failed(type))
      return failure();
    resultType = *type;
  }
  FailureOr<Operation *> op =
      createOp(node, opName, operands, attrs, {resultType});
  if (failed(op))
    return failure();
  values[node.output(0)] = (*op)->getResult(0);
  return success();
}

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  bool folded = false;
  if (failed(foldNode(node, folded)))
    return failure();
  if (folded)
    return success();

  StringRef type = node.op_type();
  auto unary = [&](StringRef opName,
                   ArrayRef<NamedAttribute> attrs = {}) -> LogicalResult {
    FailureOr<Value> x = getValue(node, 0);
    return failed(x) ? failure() : emitSingle(node, opName, {*x}, attrs);
  };
  auto binary = [&](StringRef opName) -> LogicalResult {
    FailureOr<Value> lhs = getValue(node, 0), rhs = getValue(node, 1);
    if (failed(lhs) || failed(rhs))
      return failure();
    return emitSingle(node, opName, {*lhs, *rhs});
  };

  if (type == "Identity") {
    FailureOr<Value> x = getValue(node, 0);
    if (failed(x))
      return failure();
    values[node.output(0)] = *x;
    return success();
  }
  if (type == "Relu")
    return unary("nn.relu");
  if (type == "Sigmoid")
    return unary("nn.sigmoid");
  if (type == "Tanh")
    return unary("nn.tanh");
  if (type == "Sqrt")
    return unary("nn.sqrt");
  if (type == "Exp")
    return unary("nn.exp");
  if (type == "Log")
    return unary("nn.log");
  if (type == "Erf")
    return unary("nn.erf");
  if (type == "Pow")
    return importPow(node);
  if (type == "Cast")
    return importCast(node);
  if (type == "Expand")
    return importExpand(node);
  if (type == "Unsqueeze" || type == "Squeeze")
    return importReshape(node);
  if (type == "Gather")
    return importGather(node);
  if (type == "LeakyRelu")
    return unary("nn.leaky_relu",
                 {builder.getNamedAttr(
                     "alpha", builder.getF64FloatAttr(
                                  getFloatAttr(node, "alpha", 0.01)))});
  if (type == "Add")
    return binary("nn.add");
  if (type == "Sub")
    return binary("nn.sub");
  if (type == "Mul")
    return binary("nn.mul");
  if (type == "Div")
    return binary("nn.div");
  if (type == "MatMul")
    return importMatMul(node);
  if (type == "Transpose") {
    FailureOr<Value> x = getValue(node, 0);
    if (failed(x))
      return failure();
    int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
    SmallVector<int64_t> reversed(llvm::reverse(llvm::seq<int64_t>(0, rank)));
    return emitSingle(node, "nn.transpose", {*x},
                      {builder.getNamedAttr(
                          "permutation", builder.getDenseI64ArrayAttr(
                                             getIntsAttr(node, "perm",
                                                         reversed)))});
  }
  if (type == "Concat") {
    SmallVector<Value> operands;
    for (int i = 0; i < node.input_size(); ++i) {
      FailureOr<Value> value = getValue(node, i);
      if (failed(value))
        return failure();
      operands.push_back(*value);
    }
    int64_t rank = cast<RankedTensorType>(operands[0].getType()).getRank();
    int64_t axis = getIntAttr(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    return emitSingle(node, "nn.concat", operands,
                      {builder.getNamedAttr("axis",
                                            builder.getI64IntegerAttr(axis))});
  }
  if (type == "GlobalAveragePool")
    return unary("nn.global_avg_pool2d");
  if (type == "Gemm")
    return importGemm(node);
  if (type == "Flatten")
    return importFlatten(node);
  if (type == "Reshape")
    return importReshape(node);
  if (type == "Clip")
    return importClip(node);
  if (type == "HardSigmoid" || type == "HardSwish" || type == "Abs" ||
      type == "Softplus" || type == "Elu" || type == "Selu" || type == "Celu" ||
      type == "Neg" || type == "Reciprocal")
    return importActivation(node);
  if (type == "Softmax")
    return importSoftmax(node, "nn.softmax");
  if (type == "LogSoftmax")
    return importSoftmax(node, "nn.log_softmax");
  if (type == "ReduceMean")
    return importReduce(node, "nn.reduce_mean");
  if (type == "ReduceSum")
    return importReduce(node, "nn.reduce_sum");
  if (type == "Conv")
    return importConv(node);
  if (type == "MaxPool" || type == "AveragePool")
    return importPool(node);
  if (type == "BatchNormalization")
    return importBatchNorm(node);
  if (type == "Dropout")
    return importDropout(node);
  if (type == "Pad")
    return importPad(node);
  if (type == "Slice")
    return importSlice(node);
  if (type == "Split")
    return importSplit(node);
  if (type == "LayerNormalization")
    return importLayerNorm(node);
  if (std::optional<nn::ComparePredicate> predicate = getComparePredicate(type))
    return importCompare(node, *predicate);
  if (type == "Not")
    return unary("nn.not");
  if (type == "And" || type == "Or" || type == "Xor")
    return importLogical(node);
  if (type == "Max" || type == "Min")
    return importExtremum(node);
  if (type == "Where") {
    // A mask on run-time values (masked_fill): a constant condition, or one
    // computed from run-time data (nn.compare eq of a mask of token flags).
    FailureOr<Value> condition = getValue(node, 0), lhs = getValue(node, 1),
                     rhs = getValue(node, 2);
    if (failed(condition) || failed(lhs) || failed(rhs))
      return failure();
    return emitSingle(node, "nn.select", {*condition, *lhs, *rhs});
  }
  return nodeError(node)
         << "cannot import this operator on non-constant inputs (it is "
            "evaluated at import; where an input derives from a buffer "
            "such as a mask, --frozen=NAME makes that initializer constant)";
}

//===----------------------------------------------------------------------===//
// Folding of shape arithmetic
//===----------------------------------------------------------------------===//

/// Normalizes a possibly negative axis into [0, rank).
static std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<int64_t> Importer::getAxisAttr(const onnx::NodeProto &node,
                                         int64_t defaultAxis, int64_t rank) {
  int64_t axis = getIntAttr(node, "axis", defaultAxis);
  if (std::optional<int64_t> normalized = normalizeAxis(axis, rank))
    return *normalized;
  return nodeError(node) << "axis " << axis << " is out of range for rank "
                         << rank;
}

/// ScatterND of constants: DATA with the slices that the last dimension of
/// the indices addresses replaced by (or, with reduction add or mul,
/// combined with) the updates. PyTorch exports a slice assignment such as
/// Swin's `mask[h0:h1, w0:w1] = count` this way.
FailureOr<ConstantValue> Importer::foldScatterND(const onnx::NodeProto &node,
                                                 const ConstantValue &data) {
  const ConstantValue *indices = getIntConstant(node, 1);
  const ConstantValue *updates = getConstant(node, 2);
  if (!indices || !updates)
    return nodeError(node) << "needs integer indices and updates";
  if (updates->isInteger() != data.isInteger())
    return nodeError(node) << "the updates' element type differs from the "
                              "data's";
  std::string reduction = getStringAttr(node, "reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return nodeError(node) << "reduction '" << reduction
                           << "' (accepted: none, add, mul)";
  ArrayRef<int64_t> dataShape = data.shape, indexShape = indices->shape;
  if (indexShape.empty() || indexShape.back() > int64_t(dataShape.size()))
    return nodeError(node) << "the indices' last dimension must index at "
                              "most the data's "
                           << dataShape.size() << " dimensions";
  const int64_t depth = indexShape.back();
  SmallVector<int64_t> updateShape(indexShape.drop_back());
  llvm::append_range(updateShape, dataShape.drop_front(depth));
  if (ArrayRef<int64_t>(updates->shape) != ArrayRef<int64_t>(updateShape))
    return nodeError(node) << "the updates have shape ["
                           << llvm::interleaved(updates->shape) << "], not ["
                           << llvm::interleaved(updateShape) << "]";
  int64_t sliceSize = 1;
  for (int64_t dim : dataShape.drop_front(depth))
    sliceSize *= dim;
  ConstantValue value = data;
  const int64_t slices = depth ? indices->numElements() / depth : 0;
  for (int64_t n = 0; n < slices; ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < depth; ++d) {
      int64_t index = indices->ints[n * depth + d];
      std::optional<int64_t> normalized = normalizeAxis(index, dataShape[d]);
      if (!normalized)
        return nodeError(node)
               << "index " << index << " is out of range for "
               << "dimension " << d << " of size " << dataShape[d];
      offset = offset * dataShape[d] + *normalized;
    }
    offset *= sliceSize;
    for (int64_t e = 0; e < sliceSize; ++e) {
      auto combine = [&](auto &to, const auto &from) {
        auto &element = to[offset + e];
        auto update = from[n * sliceSize + e];
        element = reduction == "add"   ? element + update
                  : reduction == "mul" ? element * update
                                       : update;
      };
      if (value.isInteger())
        combine(value.ints, updates->ints);
      else
        combine(value.floats, updates->floats);
    }
  }
  return value;
}

LogicalResult Importer::foldNode(const onnx::NodeProto &node, bool &folded) {
  StringRef type = node.op_type();
  Location loc = nodeLoc(node);
  auto define = [&](ConstantValue value) {
    constants[node.output(0)] = std::move(value);
    folded = true;
    return success();
  };

  if (type == "Constant") {
    ConstantValue value;
    if (const onnx::AttributeProto *attr = findAttr(node, "value")) {
      FailureOr<ConstantValue> read = readConstant(attr->t(), loc);
      if (failed(read))
        return failure();
      return define(*read);
    }
    if (const onnx::AttributeProto *attr = findAttr(node, "value_float")) {
      value.elemType = onnx::TensorProto::FLOAT;
      value.floats = {widenFloat(attr->f())};
    } else if (const onnx::AttributeProto *attr =
                   findAttr(node, "value_floats")) {
      value.elemType = onnx::TensorProto::FLOAT;
      llvm::append_range(value.floats,
                         llvm::map_range(attr->floats(), widenFloat));
      value.shape = {static_cast<int64_t>(value.floats.size())};
    } else if (const onnx::AttributeProto *attr = findAttr(node, "value_int")) {
      value.ints = {attr->i()};
    } else if (const onnx::AttributeProto *attr =
                   findAttr(node, "value_ints")) {
      value.ints.assign(attr->ints().begin(), attr->ints().end());
      value.shape = {static_cast<int64_t>(value.ints.size())};
    } else {
      return nodeError(node) << "has no value attribute dtrain can read "
                                "(value, value_float(s), value_int(s))";
    }
    return define(value);
  }

  if (type == "Shape") {
    // The shape of any tensor whose type is static is a constant.
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    auto inputType = cast<RankedTensorType>(input->getType());
    if (!inputType.hasStaticShape())
      return nodeError(node) << "the input shape " << inputType
                             << " is not static";
    ArrayRef<int64_t> dims = inputType.getShape();
    int64_t rank = dims.size();
    int64_t start = getIntAttr(node, "start", 0);
    int64_t end = getIntAttr(node, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    ConstantValue value;
    value.ints.assign(dims.begin() + start,
                      dims.begin() + std::max(start, end));
    value.shape = {static_cast<int64_t>(value.ints.size())};
    return define(value);
  }

  // The other foldable ops need every input to be a constant.
  for (int i = 0; i < node.input_size(); ++i)
    if (hasInput(node, i) && !getConstant(node, i))
      return success();
  const ConstantValue *data = getConstant(node, 0);
  if (!data)
    return success();

  if (type == "Identity")
    return define(*data);

  if (type == "Cast") {
    ConstantValue value = *data;
    value.elemType = getIntAttr(node, "to", onnx::TensorProto::FLOAT);
    if (value.isInteger() && !data->isInteger()) {
      value.ints.clear();
      for (double v : data->floats)
        value.ints.push_back(static_cast<int64_t>(v));
      value.floats.clear();
    } else if (!value.isInteger() && data->isInteger()) {
      value.floats.assign(data->ints.begin(), data->ints.end());
      value.ints.clear();
    }
    return define(value);
  }

  if (type == "Unsqueeze" || type == "Squeeze") {
    FailureOr<SmallVector<int64_t>> shape = getSqueezeTarget(node, data->shape);
    if (failed(shape))
      return failure();
    ConstantValue value = *data;
    value.shape = *shape;
    return define(value);
  }

  if (type == "Reshape") {
    FailureOr<SmallVector<int64_t>> shape = getReshapeTarget(node, data->shape);
    if (failed(shape))
      return failure();
    ConstantValue value = *data;
    value.shape = *shape;
    return define(value);
  }

  if (type == "ConstantOfShape") {
    // PyTorch's expand(-1, ...) builds a vector of ones this way.
    if (!data->isInteger() || data->shape.size() != 1)
      return nodeError(node) << "the shape input must be a 1-d integer "
                                "constant";
    std::optional<int64_t> count = getCheckedElementCount(data->ints);
    if (!count || *count > kMaxFoldedElements)
      return nodeError(node) << "makes more than " << kMaxFoldedElements
                             << " elements, or a negative dimension";
    ConstantValue fill;
    fill.elemType = onnx::TensorProto::FLOAT;
    fill.floats = {0.0};
    if (const onnx::AttributeProto *attr = findAttr(node, "value")) {
      FailureOr<ConstantValue> read = readConstant(attr->t(), loc);
      if (failed(read))
        return failure();
      if (read->numElements() != 1)
        return nodeError(node) << "the value attribute must hold one "
                                  "element";
      fill = *read;
    }
    ConstantValue value;
    value.elemType = fill.elemType;
    value.shape.assign(data->ints.begin(), data->ints.end());
    if (fill.isInteger())
      value.ints.assign(*count, fill.ints[0]);
    else
      value.floats.assign(*count, fill.floats[0]);
    return define(value);
  }

  if (type == "ScatterND") {
    FailureOr<ConstantValue> value = foldScatterND(node, *data);
    return failed(value) ? failure() : define(std::move(*value));
  }

  // Element-wise ops on constants, with NumPy broadcasting: shape
  // arithmetic, Mod of it (Swin's window padding), and masks (PyTorch's
  // masked_fill of a buffer == 0).
  const std::optional<nn::ComparePredicate> comparison =
      getComparePredicate(type);
  const bool logical = type == "And" || type == "Or" || type == "Xor";
  // Max and Min of two constants (of more: nn ops).
  const bool extremum =
      (type == "Max" || type == "Min") && node.input_size() == 2;
  if (type == "Add" || type == "Sub" || type == "Mul" || type == "Div" ||
      type == "Mod" || comparison || logical || extremum || type == "Where") {
    SmallVector<const ConstantValue *> operands;
    for (int i = 0; i < node.input_size(); ++i) {
      const ConstantValue *operand = getConstant(node, i);
      if (!operand)
        return nodeError(node) << "input #" << i << " is missing";
      operands.push_back(operand);
    }
    if (operands.size() != (type == "Where" ? 3u : 2u))
      return nodeError(node) << "has " << operands.size() << " inputs";
    SmallVector<int64_t> shape;
    for (const ConstantValue *operand : operands)
      if (!OpTrait::util::getBroadcastedShape(SmallVector<int64_t>(shape),
                                              operand->shape, shape))
        return nodeError(node) << "operand shapes do not broadcast";
    std::optional<int64_t> count = getCheckedElementCount(shape);
    if (!count || *count > kMaxFoldedElements) {
      if (comparison || logical || type == "Where")
        return nodeError(node) << "folds at most " << kMaxFoldedElements
                               << " elements at import";
      return success(); // arithmetic on large constants runs as nn ops
    }
    auto indexIn = [&](const ConstantValue *operand, int64_t i) {
      return getBroadcastSource(shape, operand->shape, i);
    };
    // Integers stay exact (shape values reach INT64_MAX); floats are doubles.
    auto intAt = [&](const ConstantValue *operand, int64_t i) {
      int64_t k = indexIn(operand, i);
      return operand->isInteger() ? operand->ints[k]
                                  : int64_t(operand->floats[k]);
    };
    auto floatAt = [&](const ConstantValue *operand, int64_t i) {
      int64_t k = indexIn(operand, i);
      return operand->isInteger() ? double(operand->ints[k])
                                  : operand->floats[k];
    };
    // Where's result has its second and third inputs' type.
    const ConstantValue &typed = type == "Where" ? *operands[1] : *data;
    const bool fmod = getIntAttr(node, "fmod", 0);
    if (type == "Mod" && !typed.isInteger() && !fmod)
      return nodeError(node) << "Mod of floats needs fmod = 1";
    ConstantValue value;
    value.elemType =
        comparison ? int32_t(onnx::TensorProto::BOOL) : typed.elemType;
    value.shape = shape;
    for (int64_t i = 0; i < *count; ++i) {
      if (type == "Where") {
        const ConstantValue *chosen =
            intAt(operands[0], i) ? operands[1] : operands[2];
        if (value.isInteger())
          value.ints.push_back(intAt(chosen, i));
        else
          value.floats.push_back(floatAt(chosen, i));
      } else if (logical) {
        bool a = intAt(operands[0], i), b = intAt(operands[1], i);
        value.ints.push_back(type == "And"  ? a && b
                             : type == "Or" ? a || b
                                            : a != b);
      } else if (comparison) {
        bool integers = operands[0]->isInteger() && operands[1]->isInteger();
        value.ints.push_back(
            integers ? compareValues(*comparison, intAt(operands[0], i),
                                     intAt(operands[1], i))
                     : compareValues(*comparison, floatAt(operands[0], i),
                                     floatAt(operands[1], i)));
      } else if (value.isInteger()) {
        int64_t a = intAt(operands[0], i), b = intAt(operands[1], i);
        if ((type == "Div" || type == "Mod") && b == 0)
          return nodeError(node) << "divides a shape value by zero";
        if (extremum) {
          value.ints.push_back(type == "Max" ? std::max(a, b) : std::min(a, b));
          continue;
        }
        if (type == "Mod") {
          // fmod = 0: the remainder takes the divisor's sign (Python's %).
          int64_t r = b == -1 ? 0 : a % b;
          if (!fmod && r != 0 && (r < 0) != (b < 0))
            r += b;
          value.ints.push_back(r);
          continue;
        }
        int64_t result = 0;
        bool overflow = type == "Add"   ? llvm::AddOverflow(a, b, result)
                        : type == "Sub" ? llvm::SubOverflow(a, b, result)
                        : type == "Mul" ? llvm::MulOverflow(a, b, result)
                                        : (a == INT64_MIN && b == -1);
        if (overflow)
          return nodeError(node)
                 << "overflows int64 (" << a << " and " << b << ")";
        value.ints.push_back(type == "Div" ? a / b : result);
      } else {
        double a = floatAt(operands[0], i), b = floatAt(operands[1], i);
        if (extremum) {
          // NaN if either is, as at run time.
          value.floats.push_back(std::isnan(a) || std::isnan(b) ? a + b
                                 : type == "Max"                ? std::max(a, b)
                                                 : std::min(a, b));
          continue;
        }
        value.floats.push_back(type == "Add"   ? a + b
                               : type == "Sub" ? a - b
                               : type == "Mul" ? a * b
                               : type == "Div" ? a / b
                                               : std::fmod(a, b));
      }
    }
    return define(value);
  }

  if (type == "Range") {
    // torch.arange of the sequence length: positions.
    SmallVector<const ConstantValue *> bounds;
    for (int i = 0; i < 3; ++i) {
      const ConstantValue *bound = getConstant(node, i);
      if (!bound || bound->numElements() != 1)
        return nodeError(node) << "input #" << i << " must be a scalar";
      bounds.push_back(bound);
    }
    auto at = [&](int i) {
      return bounds[i]->isInteger() ? double(bounds[i]->ints[0])
                                    : bounds[i]->floats[0];
    };
    double start = at(0), limit = at(1), delta = at(2);
    if (delta == 0)
      return nodeError(node) << "delta 0 makes no range";
    double count = std::max(std::ceil((limit - start) / delta), 0.0);
    if (!(count <= double(kMaxFoldedElements))) // NaN bounds too
      return nodeError(node) << "makes more than " << kMaxFoldedElements
                             << " elements, or has a NaN bound";
    ConstantValue value;
    value.elemType = data->elemType;
    value.shape = {int64_t(count)};
    for (int64_t i = 0; i < int64_t(count); ++i) {
      if (value.isInteger())
        value.ints.push_back(int64_t(start) + i * int64_t(delta));
      else
        value.floats.push_back(start + double(i) * delta);
    }
    return define(value);
  }

  // A box of a constant of more dimensions, or of floats (a causal mask
  // cut to the sequence length).
  if (type == "Slice" && (data->shape.size() > 1 || !data->isInteger())) {
    FailureOr<SliceBox> box =
        getSliceBox(node, data->shape, /*negativeSteps=*/true);
    if (failed(box))
      return failure();
    std::optional<int64_t> count = getCheckedElementCount(box->sizes);
    if (!count || *count > kMaxFoldedElements)
      return success(); // a slice of a large constant runs as nn.slice
    ConstantValue value;
    value.elemType = data->elemType;
    value.shape = box->sizes;
    int64_t rank = data->shape.size();
    for (int64_t i = 0; i < *count; ++i) {
      int64_t source = 0, stride = 1;
      for (int64_t d = rank - 1, rest = i; d >= 0; --d) {
        int64_t position = rest % box->sizes[d];
        rest /= box->sizes[d];
        source += (box->starts[d] + position * box->steps[d]) * stride;
        stride *= data->shape[d];
      }
      value.appendElement(*data, source);
    }
    return define(value);
  }

  // Expand of a constant (Swin's attention mask, a difference of window
  // ids broadcast to pairs).
  if (type == "Expand") {
    const ConstantValue *target = getIntConstant(node, 1);
    if (!target || target->shape.size() != 1)
      return nodeError(node) << "the shape input must be a 1-d integer "
                                "constant";
    SmallVector<int64_t> shape;
    if (!OpTrait::util::getBroadcastedShape(data->shape, target->ints, shape))
      return nodeError(node) << "shape [" << llvm::interleaved(target->ints)
                             << "] does not broadcast with the input's ["
                             << llvm::interleaved(data->shape) << "]";
    std::optional<int64_t> count = getCheckedElementCount(shape);
    if (!count || *count > kMaxFoldedElements)
      return success(); // a large broadcast runs as nn.broadcast
    ConstantValue value;
    value.elemType = data->elemType;
    value.shape = shape;
    for (int64_t i = 0; i < *count; ++i) {
      int64_t source = getBroadcastSource(shape, data->shape, i);
      value.appendElement(*data, source);
    }
    return define(value);
  }

  // Concat of constants of any rank (Swin's relative coordinates).
  if (type == "Concat" && (data->shape.size() > 1 || !data->isInteger())) {
    const int64_t rank = data->shape.size();
    FailureOr<int64_t> axis = getAxisAttr(node, 0, rank);
    if (failed(axis))
      return failure();
    ConstantValue value;
    value.elemType = data->elemType;
    value.shape = data->shape;
    value.shape[*axis] = 0;
    SmallVector<const ConstantValue *> parts;
    for (int i = 0; i < node.input_size(); ++i) {
      const ConstantValue *part = getConstant(node, i);
      if (!part || part->shape.size() != data->shape.size() ||
          part->isInteger() != data->isInteger())
        return nodeError(node)
               << "input #" << i << " differs from input #0 in rank or type";
      for (int64_t d = 0; d < rank; ++d)
        if (d != *axis && part->shape[d] != data->shape[d])
          return nodeError(node)
                 << "input #" << i << " has shape ["
                 << llvm::interleaved(part->shape)
                 << "], which does not match input #0's ["
                 << llvm::interleaved(data->shape) << "] off axis " << *axis;
      value.shape[*axis] += part->shape[*axis];
      parts.push_back(part);
    }
    std::optional<int64_t> count = getCheckedElementCount(value.shape);
    if (!count || *count > kMaxFoldedElements)
      return success(); // a large concatenation runs as nn.concat
    // Row-major: each part contributes a block of its inner size per outer
    // index.
    int64_t outer = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= data->shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const ConstantValue *part : parts) {
        const int64_t block = outer ? part->numElements() / outer : 0;
        if (value.isInteger())
          value.ints.append(part->ints.begin() + o * block,
                            part->ints.begin() + (o + 1) * block);
        else
          value.floats.append(part->floats.begin() + o * block,
                              part->floats.begin() + (o + 1) * block);
      }
    return define(value);
  }

  // Transpose of a constant: PyTorch's F.pad with pads computed from shapes
  // (Swin's window padding) reverses and transposes them as a 2-d tensor.
  if (type == "Transpose" && data->numElements() <= kMaxFoldedElements) {
    const int64_t rank = data->shape.size();
    SmallVector<int64_t> permutation = getIntsAttr(
        node, "perm",
        llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank))));
    SmallVector<int64_t> sorted(permutation);
    llvm::sort(sorted);
    if (sorted != llvm::to_vector(llvm::seq<int64_t>(0, rank)))
      return nodeError(node)
             << "perm [" << llvm::interleaved(permutation)
             << "] is no permutation of the " << rank << " dimensions";
    ConstantValue value;
    value.elemType = data->elemType;
    for (int64_t d : permutation)
      value.shape.push_back(data->shape[d]);
    // The strides of the input, in the result's dimension order.
    SmallVector<int64_t> strides(rank, 1), permuted(rank);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * data->shape[d + 1];
    for (int64_t d = 0; d < rank; ++d)
      permuted[d] = strides[permutation[d]];
    for (int64_t i = 0, n = data->numElements(); i < n; ++i) {
      int64_t source = 0;
      for (int64_t d = rank - 1, rest = i; d >= 0; --d) {
        source += (rest % value.shape[d]) * permuted[d];
        rest /= value.shape[d];
      }
      value.appendElement(*data, source);
    }
    return define(value);
  }

  // Gather, Concat, Slice and arithmetic on shape vectors: rank <= 1.
  if (data->shape.size() > 1 || !data->isInteger())
    return success();

  if (type == "Gather") {
    const ConstantValue *indices = getIntConstant(node, 1);
    if (!indices)
      return nodeError(node) << "needs integer indices as input #1";
    ConstantValue value;
    value.elemType = data->elemType;
    value.shape = indices->shape;
    int64_t size = data->numElements();
    for (int64_t index : indices->ints) {
      std::optional<int64_t> i = normalizeAxis(index, size);
      if (!i)
        return nodeError(node) << "index " << index
                               << " is out of range for " << size
                               << " elements";
      value.ints.push_back(data->ints[*i]);
    }
    return define(value);
  }

  if (type == "Concat") {
    ConstantValue value;
    value.elemType = data->elemType;
    for (int i = 0; i < node.input_size(); ++i) {
      const ConstantValue *part = getConstant(node, i);
      if (!part)
        return nodeError(node) << "input #" << i << " is missing";
      if (part->shape.size() != 1 || !part->isInteger())
        return success();
      value.ints.append(part->ints.begin(), part->ints.end());
    }
    value.shape = {static_cast<int64_t>(value.ints.size())};
    return define(value);
  }

  if (type == "Slice") {
    auto ints = [&](int index, StringRef attr) {
      if (const ConstantValue *c = getIntConstant(node, index))
        return SmallVector<int64_t>(c->ints);
      return getIntsAttr(node, attr);
    };
    SmallVector<int64_t> starts = ints(1, "starts"), ends = ints(2, "ends"),
                         steps = ints(4, "steps");
    int64_t size = data->numElements();
    if (starts.size() != 1 || ends.size() != 1 || steps.size() > 1)
      return nodeError(node) << "slices a shape vector along more than one "
                                "axis";
    int64_t step = steps.empty() ? 1 : steps[0];
    if (step == 0)
      return nodeError(node) << "step 0 is not allowed";
    auto clampIndex = [&](int64_t i, int64_t lo, int64_t hi) {
      if (i < 0)
        i += size;
      return std::clamp(i, lo, hi);
    };
    int64_t start = step > 0 ? clampIndex(starts[0], 0, size)
                             : clampIndex(starts[0], -1, size - 1);
    int64_t end = step > 0 ? clampIndex(ends[0], 0, size)
                           : clampIndex(ends[0], -1, size - 1);
    ConstantValue value;
    value.elemType = data->elemType;
    for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
      value.ints.push_back(data->ints[i]);
    value.shape = {static_cast<int64_t>(value.ints.size())};
    return define(value);
  }

  return success();
}

//===----------------------------------------------------------------------===//
// Operators with attributes
//===----------------------------------------------------------------------===//

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  FailureOr<Value> a = getValue(node, 0), b = getValue(node, 1);
  if (failed(a) || failed(b))
    return failure();
  Location loc = nodeLoc(node);
  FailureOr<TensorType> resultType = getResultType(node.output(0), loc);
  if (failed(resultType))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (getIntAttr(node, "transA", 0))
    attrs.push_back(builder.getNamedAttr("transpose_lhs", builder.getUnitAttr()));
  if (getIntAttr(node, "transB", 0))
    attrs.push_back(builder.getNamedAttr("transpose_rhs", builder.getUnitAttr()));
  FailureOr<Operation *> product =
      createOp(node, "nn.matmul", {*a, *b}, attrs, {*resultType});
  if (failed(product))
    return failure();
  Value result = (*product)->getResult(0);
  Type elementType = cast<ShapedType>(result.getType()).getElementType();
  double alpha = getFloatAttr(node, "alpha", 1.0);
  if (alpha != 1.0) {
    FailureOr<Operation *> scaled =
        createOp(node, "nn.mul", {result, scalarConstant(alpha, elementType)},
                 {}, {*resultType});
    if (failed(scaled))
      return failure();
    result = (*scaled)->getResult(0);
  }
  if (hasInput(node, 2)) {
    FailureOr<Value> c = getValue(node, 2);
    if (failed(c))
      return failure();
    Value bias = *c;
    double beta = getFloatAttr(node, "beta", 1.0);
    if (beta != 1.0) {
      FailureOr<Operation *> scaledBias =
          createOp(node, "nn.mul", {bias, scalarConstant(beta, elementType)},
                   {}, {bias.getType()});
      if (failed(scaledBias))
        return failure();
      bias = (*scaledBias)->getResult(0);
    }
    FailureOr<Operation *> sum =
        createOp(node, "nn.add", {result, bias}, {}, {*resultType});
    if (failed(sum))
      return failure();
    result = (*sum)->getResult(0);
  }
  values[node.output(0)] = result;
  return success();
}

/// Creates nn.reshape of `x` to `shape`: the importer computes reshape
/// targets itself (ONNX's data propagation does not always reach them) and
/// checks ONNX's result type when it has a static one.
LogicalResult Importer::emitReshape(const onnx::NodeProto &node, Value x,
                                    ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  auto it = types.find(node.output(0));
  bool onnxStatic =
      it != types.end() && it->second.tensor_type().has_shape() &&
      llvm::all_of(it->second.tensor_type().shape().dim(),
                   [](const auto &dim) { return dim.has_dim_value(); });
  if (onnxStatic) {
    FailureOr<RankedTensorType> onnxType =
        getTensorType(node.output(0), nodeLoc(node));
    if (failed(onnxType))
      return failure();
    if (*onnxType != type)
      return nodeError(node) << "ONNX infers " << *onnxType
                             << " but the target shape gives " << type;
  }
  if (x.getType() == type) {
    values[node.output(0)] = x;
    return success();
  }
  return emitSingle(node, "nn.reshape", {x}, {}, type);
}

LogicalResult Importer::importFlatten(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> dims = cast<RankedTensorType>(x->getType()).getShape();
  int64_t rank = dims.size();
  int64_t axis = getIntAttr(node, "axis", 1);
  if (axis < -rank || axis > rank)
    return nodeError(node) << "axis " << axis << " is out of range for rank "
                           << rank;
  if (axis < 0)
    axis += rank;
  auto product = [](ArrayRef<int64_t> range) {
    return std::accumulate(range.begin(), range.end(), int64_t(1),
                           std::multiplies<int64_t>());
  };
  return emitReshape(node, *x,
                     {product(dims.take_front(axis)),
                      product(dims.drop_front(axis))});
}

FailureOr<SmallVector<int64_t>>
Importer::getReshapeTarget(const onnx::NodeProto &node,
                           ArrayRef<int64_t> dims) {
  const ConstantValue *target = getIntConstant(node, 1);
  if (!target)
    return nodeError(node) << "the integer target shape '"
                           << (hasInput(node, 1) ? node.input(1) : "")
                           << "' is computed at run time; dtrain needs it "
                              "constant at import";
  int64_t elements = std::accumulate(dims.begin(), dims.end(), int64_t(1),
                                     std::multiplies<int64_t>());
  bool allowZero = getIntAttr(node, "allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  int64_t known = 1, inferred = -1;
  for (auto [i, targetSize] : llvm::enumerate(target->ints)) {
    int64_t size = targetSize;
    if (size == 0 && !allowZero) {
      if (i >= dims.size())
        return nodeError(node) << "target dimension " << i
                               << " copies a dimension the input lacks";
      size = dims[i];
    }
    if (size == -1) {
      if (inferred >= 0)
        return nodeError(node) << "the target shape has more than one -1";
      inferred = i;
    } else if (size < 0) {
      return nodeError(node) << "target dimension " << i << " is " << size;
    } else {
      known *= size;
    }
    shape.push_back(size);
  }
  if (inferred >= 0) {
    if (known == 0 || elements % known != 0)
      return nodeError(node) << "cannot reshape " << elements
                             << " elements into the target shape";
    shape[inferred] = elements / known;
  } else if (known != elements) {
    return nodeError(node) << "cannot reshape " << elements
                           << " elements into " << known;
  }
  return shape;
}

FailureOr<SmallVector<int64_t>>
Importer::getSqueezeTarget(const onnx::NodeProto &node,
                           ArrayRef<int64_t> dims) {
  SmallVector<int64_t> axes = getIntsAttr(node, "axes");
  if (hasInput(node, 1)) {
    const ConstantValue *axesInput = getIntConstant(node, 1);
    if (!axesInput)
      return nodeError(node) << "the axes (input #1) must be an integer "
                                "constant at import";
    axes.assign(axesInput->ints.begin(), axesInput->ints.end());
  }
  bool unsqueeze = node.op_type() == "Unsqueeze";
  int64_t rank = dims.size() + (unsqueeze ? axes.size() : 0);
  for (int64_t &axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return nodeError(node)
             << "axis " << axis << " is out of range for rank " << rank;
    axis = *normalized;
  }
  llvm::sort(axes);
  if (auto repeated = llvm::adjacent_find(axes); repeated != axes.end())
    return nodeError(node) << "axis " << *repeated << " is given twice";
  SmallVector<int64_t> shape;
  if (unsqueeze) {
    shape.assign(dims.begin(), dims.end());
    for (int64_t axis : axes)
      shape.insert(shape.begin() + axis, 1);
    return shape;
  }
  for (auto [d, size] : llvm::enumerate(dims)) {
    bool squeezed =
        axes.empty() ? size == 1 : llvm::is_contained(axes, int64_t(d));
    if (squeezed && size != 1)
      return nodeError(node)
             << "squeezes dimension " << d << " of size " << size;
    if (!squeezed)
      shape.push_back(size);
  }
  return shape;
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> dims = cast<RankedTensorType>(x->getType()).getShape();
  FailureOr<SmallVector<int64_t>> shape = node.op_type() == "Reshape"
                                              ? getReshapeTarget(node, dims)
                                              : getSqueezeTarget(node, dims);
  if (failed(shape))
    return failure();
  return emitReshape(node, *x, *shape);
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  FailureOr<Value> lhs = getValue(node, 0), rhs = getValue(node, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto lhsType = cast<RankedTensorType>(lhs->getType());
  auto rhsType = cast<RankedTensorType>(rhs->getType());
  if (lhsType.getRank() == 2 && rhsType.getRank() == 2)
    return emitSingle(node, "nn.matmul", {*lhs, *rhs});
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return nodeError(node) << "multiplies a scalar (" << lhsType << " and "
                           << rhsType << ")";
  auto reshape = [&](Value x, ArrayRef<int64_t> shape) -> FailureOr<Value> {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getShape() == shape)
      return x;
    FailureOr<Operation *> op =
        createOp(node, "nn.reshape", {x}, {}, {type.clone(shape)});
    if (failed(op))
      return failure();
    return (*op)->getResult(0);
  };
  // NumPy's rules: a 1-d lhs is one row and a 1-d rhs one column, which
  // the result drops; the dimensions before the last two broadcast.
  SmallVector<int64_t> a(lhsType.getShape()), b(rhsType.getShape());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k)
    return nodeError(node) << "contraction sizes differ: " << lhsType << " and "
                           << rhsType;
  ArrayRef<int64_t> lhsBatch = ArrayRef(a).drop_back(2),
                    rhsBatch = ArrayRef(b).drop_back(2);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(lhsBatch, rhsBatch, batch))
    return nodeError(node) << "batch dimensions of " << lhsType << " and "
                           << rhsType << " do not broadcast";
  int64_t batchSize = std::accumulate(batch.begin(), batch.end(), int64_t(1),
                                      std::multiplies<int64_t>());
  SmallVector<int64_t> shape(batch);
  if (!lhsVector)
    shape.push_back(m);
  if (!rhsVector)
    shape.push_back(n);

  FailureOr<Operation *> product;
  if (rhsBatch.empty()) {
    // One matrix on the right: the lhs's rows, all batches, in one product.
    FailureOr<Value> rows = reshape(*lhs, {batchSize * m, k});
    FailureOr<Value> columns = reshape(*rhs, {k, n});
    if (failed(rows) || failed(columns))
      return failure();
    product = createOp(node, "nn.matmul", {*rows, *columns}, {},
                       {lhsType.clone({batchSize * m, n})});
  } else {
    // A batched product of 3-d operands, each broadcast to every batch.
    auto batched = [&](Value x, ArrayRef<int64_t> own, int64_t rows,
                       int64_t columns) -> FailureOr<Value> {
      auto type = cast<RankedTensorType>(x.getType());
      if (own != ArrayRef<int64_t>(batch)) {
        // Its own batch dimensions, 1-d vectors made matrices, stretched.
        SmallVector<int64_t> matrices(own), full(batch);
        matrices.append({rows, columns});
        full.append({rows, columns});
        FailureOr<Value> stacked = reshape(x, matrices);
        if (failed(stacked))
          return failure();
        FailureOr<Operation *> stretched =
            createOp(node, "nn.broadcast", {*stacked}, {}, {type.clone(full)});
        if (failed(stretched))
          return failure();
        x = (*stretched)->getResult(0);
      }
      return reshape(x, {batchSize, rows, columns});
    };
    FailureOr<Value> left = batched(*lhs, lhsBatch, m, k);
    FailureOr<Value> right = batched(*rhs, rhsBatch, k, n);
    if (failed(left) || failed(right))
      return failure();
    product = createOp(node, "nn.matmul", {*left, *right}, {},
                       {lhsType.clone({batchSize, m, n})});
  }
  if (failed(product))
    return failure();
  return emitReshape(node, (*product)->getResult(0), shape);
}

/// A Cast of a run-time tensor between float types (mixed-precision models
/// exported with explicit casts): nn.cast, whose gradient casts back; from
/// integers or booleans to a float type (a mask given as token flags):
/// nn.to_float; to bool (`mask.bool()`): x != 0, as nn.not of nn.compare eq.
/// Casts of constants, which shape arithmetic uses, are folded at import.
LogicalResult Importer::importCast(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  FailureOr<TensorType> resultType =
      getResultType(node.output(0), nodeLoc(node));
  if (failed(resultType))
    return failure();
  Type from = cast<TensorType>(x->getType()).getElementType();
  Type to = resultType->getElementType();
  if (from == to) {
    values[node.output(0)] = *x;
    return success();
  }
  if (to.isInteger(1)) {
    if (failed(checkNotTrained(node, *x)))
      return failure();
    Location loc = nodeLoc(node);
    auto scalar = RankedTensorType::get({}, from);
    Attribute zero = isa<FloatType>(from)
                         ? Attribute(builder.getFloatAttr(from, 0.0))
                         : builder.getIntegerAttr(from, 0);
    Value isZero = nn::CompareOp::create(
        builder, loc, nn::ComparePredicate::eq, *x,
        arith::ConstantOp::create(builder, loc,
                                  DenseElementsAttr::get(scalar, zero)));
    values[node.output(0)] = nn::NotOp::create(builder, loc, isZero);
    return success();
  }
  if (!isa<FloatType>(to))
    return nodeError(node) << "a Cast of a run-time tensor from " << from
                           << " to " << to
                           << " (only to float types and bool; casts to "
                              "integers are evaluated at import, on "
                              "constants)";
  if (!isa<FloatType>(from))
    return emitSingle(node, "nn.to_float", {*x}, {}, *resultType);
  return emitSingle(node, "nn.cast", {*x}, {}, *resultType);
}

/// The trainable initializer (an argument marked train.param) that VALUE is
/// computed from, if any.
static std::optional<StringRef> getTrainedSource(Value value) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(current)) {
      auto function = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (auto name = function ? function.getArgAttrOfType<StringAttr>(
                                     arg.getArgNumber(),
                                     train::TrainDialect::kParamAttrName)
                               : StringAttr())
        return name.getValue();
      continue;
    }
    llvm::append_range(worklist, current.getDefiningOp()->getOperands());
  }
  return std::nullopt;
}

/// Booleans made of what a trainable initializer computes are an error: that
/// initializer is a mask kept in a buffer, which training would change, so
/// it must be frozen (then what NODE computes folds at import).
LogicalResult Importer::checkNotTrained(const onnx::NodeProto &node,
                                        Value operand) {
  if (std::optional<StringRef> param = getTrainedSource(operand))
    return nodeError(node)
           << "makes booleans of values computed from the trainable "
              "initializer '"
           << *param
           << "': a mask kept in a buffer would be trained (--frozen=" << *param
           << " keeps it constant)";
  return success();
}

/// Max and Min of any number of run-time tensors: nn.maximum or nn.minimum
/// of the first two, then of that and the next.
LogicalResult Importer::importExtremum(const onnx::NodeProto &node) {
  StringRef opName = node.op_type() == "Max" ? "nn.maximum" : "nn.minimum";
  FailureOr<Value> result = getValue(node, 0);
  if (failed(result))
    return failure();
  for (int i = 1; i < node.input_size(); ++i) {
    FailureOr<Value> next = getValue(node, i);
    if (failed(next))
      return failure();
    SmallVector<int64_t> shape;
    if (!OpTrait::util::getBroadcastedShape(
            cast<RankedTensorType>(result->getType()).getShape(),
            cast<RankedTensorType>(next->getType()).getShape(), shape))
      return nodeError(node) << "operand shapes do not broadcast";
    FailureOr<Operation *> op = createOp(
        node, opName, {*result, *next}, {},
        {RankedTensorType::get(
            shape, cast<TensorType>(next->getType()).getElementType())});
    if (failed(op))
      return failure();
    result = (*op)->getResult(0);
  }
  values[node.output(0)] = *result;
  return success();
}

/// And, Or and Xor of run-time booleans (a causal mask combined with a
/// padding mask), as the nn ops they are made of: a and b is
/// select(a, b, false), a or b select(a, true, b), a xor b not(a == b).
LogicalResult Importer::importLogical(const onnx::NodeProto &node) {
  FailureOr<Value> lhs = getValue(node, 0), rhs = getValue(node, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  StringRef type = node.op_type();
  if (type == "Xor") {
    FailureOr<TensorType> resultType =
        getResultType(node.output(0), nodeLoc(node));
    if (failed(resultType))
      return failure();
    FailureOr<Operation *> same = createOp(
        node, "nn.compare", {*lhs, *rhs},
        {builder.getNamedAttr(
            "predicate", nn::ComparePredicateAttr::get(
                             builder.getContext(), nn::ComparePredicate::eq))},
        {*resultType});
    if (failed(same))
      return failure();
    return emitSingle(node, "nn.not", {(*same)->getResult(0)});
  }
  Value constant = materialize(
      ConstantValue{{}, {type == "Or" ? 1 : 0}, {}, onnx::TensorProto::BOOL},
      builder.getI1Type());
  if (type == "And")
    return emitSingle(node, "nn.select", {*lhs, *rhs, constant});
  return emitSingle(node, "nn.select", {*lhs, constant, *rhs});
}

/// Equal, Less, LessOrEqual, Greater and GreaterOrEqual of run-time data
/// (the `mask == 0` of a mask of token flags, `x > 0`): nn.compare, whose
/// booleans have no gradient.
LogicalResult Importer::importCompare(const onnx::NodeProto &node,
                                      nn::ComparePredicate predicate) {
  FailureOr<Value> lhs = getValue(node, 0), rhs = getValue(node, 1);
  if (failed(lhs) || failed(rhs) || failed(checkNotTrained(node, *lhs)) ||
      failed(checkNotTrained(node, *rhs)))
    return failure();
  return emitSingle(node, "nn.compare", {*lhs, *rhs},
                    {builder.getNamedAttr(
                        "predicate", nn::ComparePredicateAttr::get(
                                         builder.getContext(), predicate))});
}

LogicalResult Importer::importPow(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  const ConstantValue *exponent = getConstant(node, 1);
  if (!exponent || exponent->numElements() != 1)
    return nodeError(node) << "the exponent (input #1) must be a constant "
                              "with one element";
  double value =
      exponent->isInteger() ? double(exponent->ints[0]) : exponent->floats[0];
  return emitSingle(
      node, "nn.pow", {*x},
      {builder.getNamedAttr("exponent", builder.getF64FloatAttr(value))});
}

LogicalResult Importer::importExpand(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  const ConstantValue *target = getIntConstant(node, 1);
  if (!target || target->shape.size() != 1)
    return nodeError(node) << "the shape (input #1) must be a 1-d integer "
                              "constant at import";
  // ONNX broadcasts both ways: the result is the broadcast of the input's
  // shape and the target, which may be smaller.
  auto type = cast<RankedTensorType>(x->getType());
  SmallVector<int64_t> shape(type.getShape());
  ArrayRef<int64_t> wanted = target->ints;
  if (wanted.size() > shape.size())
    shape.insert(shape.begin(), wanted.size() - shape.size(), 1);
  for (auto [i, size] : llvm::enumerate(wanted)) {
    int64_t &dim = shape[shape.size() - wanted.size() + i];
    if (size != dim && size != 1 && dim != 1)
      return nodeError(node) << "cannot expand " << type << " to ["
                             << llvm::interleaved(wanted) << "]";
    if (dim == 1)
      dim = size;
  }
  if (llvm::any_of(shape, [](int64_t dim) { return dim < 0; }))
    return nodeError(node) << "the shape [" << llvm::interleaved(wanted)
                           << "] has a negative dimension";
  if (ArrayRef<int64_t>(shape) == type.getShape()) {
    values[node.output(0)] = *x;
    return success();
  }
  return emitSingle(node, "nn.broadcast", {*x}, {}, type.clone(shape));
}

LogicalResult Importer::importGather(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = getAxisAttr(node, 0, type.getRank());
  if (failed(axis))
    return failure();
  const ConstantValue *indices = getIntConstant(node, 1);
  if (!indices) {
    // Run-time indices: rows of a table, as an embedding looks up tokens.
    if (*axis != 0)
      return nodeError(node) << "run-time indices (input #1) gather on axis "
                                "0 only (an embedding lookup), not axis "
                             << *axis;
    FailureOr<Value> runTimeIndices = getValue(node, 1);
    if (failed(runTimeIndices))
      return failure();
    return emitSingle(node, "nn.embedding", {*x, *runTimeIndices});
  }
  int64_t size = type.getDimSize(*axis);
  if (indices->ints.empty())
    return nodeError(node) << "gathers no element";
  // One slice of the axis for each run of consecutive indices, joined.
  SmallVector<Value> pieces;
  auto addSlice = [&](int64_t start, int64_t count) -> LogicalResult {
    FailureOr<Value> slice = createAxisSlice(node, *x, *axis, start, count);
    if (failed(slice))
      return failure();
    pieces.push_back(*slice);
    return success();
  };
  int64_t runStart = -1, runLength = 0;
  for (int64_t index : indices->ints) {
    std::optional<int64_t> i = normalizeAxis(index, size);
    if (!i)
      return nodeError(node) << "index " << index << " is out of range for "
                             << size << " elements";
    if (runLength && *i == runStart + runLength) {
      ++runLength;
      continue;
    }
    if (runLength && failed(addSlice(runStart, runLength)))
      return failure();
    runStart = *i;
    runLength = 1;
  }
  if (failed(addSlice(runStart, runLength)))
    return failure();
  Value gathered = pieces.front();
  if (pieces.size() > 1) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = indices->numElements();
    FailureOr<Operation *> concat = createOp(
        node, "nn.concat", pieces,
        {builder.getNamedAttr("axis", builder.getI64IntegerAttr(*axis))},
        {type.clone(shape)});
    if (failed(concat))
      return failure();
    gathered = (*concat)->getResult(0);
  }
  // The axis becomes the indices' dimensions.
  SmallVector<int64_t> shape(type.getShape().take_front(*axis));
  llvm::append_range(shape, indices->shape);
  llvm::append_range(shape, type.getShape().drop_front(*axis + 1));
  return emitReshape(node, gathered, shape);
}

LogicalResult Importer::importClip(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  auto bound = [&](int index, StringRef name) -> LogicalResult {
    std::optional<double> value;
    if (opset < 11) {
      if (findAttr(node, name))
        value = getFloatAttr(node, name, 0.0);
    } else if (hasInput(node, index)) {
      const ConstantValue *c = getConstant(node, index);
      if (!c || c->numElements() != 1)
        return nodeError(node) << "the " << name
                               << " bound must be a constant scalar";
      value = c->isInteger() ? double(c->ints[0]) : c->floats[0];
    }
    if (value)
      attrs.push_back(
          builder.getNamedAttr(name, builder.getF64FloatAttr(*value)));
    return success();
  };
  if (failed(bound(1, "min")) || failed(bound(2, "max")))
    return failure();
  return emitSingle(node, "nn.clip", {*x}, attrs);
}

/// Activations made of nn ops, whose gradients give theirs:
/// - HardSigmoid: clip(alpha * x + beta, 0, 1); HardSwish: x times that
///   with alpha = 1/6, beta = 1/2 (MobileNetV3's); the clip's gradient is
///   PyTorch's, zero outside the linear part.
/// - Neg: x * -1; Reciprocal: 1 / x.
/// - Abs: max(x, -x) (the gradient 0 at 0, half of each side's).
/// - Softplus: max(x, 0) + log(1 + exp(-|x|)), which does not overflow.
/// - Elu: x > 0 ? x : alpha * (exp(min(x, 0)) - 1), exp of at most 0 so
///   that the branch not taken has no infinite gradient; Selu: gamma times
///   that; Celu: max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0), with
///   min(x, 0) in the exp.
LogicalResult Importer::importActivation(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  Value x = *input;
  auto type = cast<RankedTensorType>(x.getType());
  if (!isa<FloatType>(type.getElementType()))
    return nodeError(node) << "of a run-time " << type.getElementType()
                           << " tensor (only float ones)";
  // Each op has X's type; a failure (reported at NODE) yields X so that
  // the rest builds, and the import fails at the end.
  bool failedOp = false;
  auto op = [&](StringRef name, ValueRange operands,
                ArrayRef<NamedAttribute> attrs = {}) -> Value {
    FailureOr<Operation *> created =
        createOp(node, name, operands, attrs, {type});
    failedOp |= failed(created);
    return failed(created) ? x : (*created)->getResult(0);
  };
  auto constant = [&](double value) {
    return scalarConstant(value, type.getElementType());
  };
  auto mul = [&](Value v, double factor) {
    return op("nn.mul", {v, constant(factor)});
  };
  auto bounds = [&](std::optional<double> min, std::optional<double> max) {
    SmallVector<NamedAttribute> attrs;
    if (min)
      attrs.push_back(
          builder.getNamedAttr("min", builder.getF64FloatAttr(*min)));
    if (max)
      attrs.push_back(
          builder.getNamedAttr("max", builder.getF64FloatAttr(*max)));
    return attrs;
  };
  auto magnitude = [&] { return op("nn.maximum", {x, mul(x, -1.0)}); };
  // alpha * (exp(min(v, 0)) - 1): an ELU's negative side.
  auto expm1OfNegative = [&](Value v, double alpha) {
    Value e = op("nn.exp", {op("nn.clip", {v}, bounds(std::nullopt, 0.0))});
    return mul(op("nn.sub", {e, constant(1.0)}), alpha);
  };
  auto elu = [&](double alpha) {
    FailureOr<Operation *> positive = createOp(
        node, "nn.compare", {x, constant(0.0)},
        {builder.getNamedAttr(
            "predicate", nn::ComparePredicateAttr::get(
                             builder.getContext(), nn::ComparePredicate::gt))},
        {type.clone(builder.getI1Type())});
    if (failed(positive)) {
      failedOp = true;
      return x;
    }
    return op("nn.select",
              {(*positive)->getResult(0), x, expm1OfNegative(x, alpha)});
  };

  StringRef kind = node.op_type();
  Value result;
  if (kind == "HardSigmoid" || kind == "HardSwish") {
    const bool swish = kind == "HardSwish";
    const double alpha = swish ? 1.0 / 6 : getFloatAttr(node, "alpha", 0.2);
    const double beta = swish ? 0.5 : getFloatAttr(node, "beta", 0.5);
    result = op("nn.clip", {op("nn.add", {mul(x, alpha), constant(beta)})},
                bounds(0.0, 1.0));
    if (swish)
      result = op("nn.mul", {x, result});
  } else if (kind == "Neg") {
    result = mul(x, -1.0);
  } else if (kind == "Reciprocal") {
    result = op("nn.div", {constant(1.0), x});
  } else if (kind == "Abs") {
    result = magnitude();
  } else if (kind == "Softplus") {
    Value tail =
        op("nn.log", {op("nn.add", {constant(1.0),
                                    op("nn.exp", {mul(magnitude(), -1.0)})})});
    result =
        op("nn.add", {op("nn.clip", {x}, bounds(0.0, std::nullopt)), tail});
  } else if (kind == "Elu") {
    result = elu(getFloatAttr(node, "alpha", 1.0));
  } else if (kind == "Selu") {
    result = mul(elu(getFloatAttr(node, "alpha", 1.67326319217681884765625)),
                 getFloatAttr(node, "gamma", 1.05070102214813232421875));
  } else {
    assert(kind == "Celu" && "unknown activation");
    const double alpha = getFloatAttr(node, "alpha", 1.0);
    if (alpha == 0)
      return nodeError(node) << "alpha must not be 0";
    result = op("nn.add", {op("nn.clip", {x}, bounds(0.0, std::nullopt)),
                           expm1OfNegative(mul(x, 1.0 / alpha), alpha)});
  }
  if (failedOp)
    return failure();
  values[node.output(0)] = result;
  return success();
}

LogicalResult Importer::importSoftmax(const onnx::NodeProto &node,
                                      StringRef opName) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  FailureOr<int64_t> normalized = getAxisAttr(node, opset < 13 ? 1 : -1, rank);
  if (failed(normalized))
    return failure();
  // Before opset 13 the input is coerced to 2-d at `axis`; that is the
  // same as a softmax over one axis only when it is the last one.
  if (opset < 13 && *normalized != rank - 1)
    return nodeError(node) << "axis " << getIntAttr(node, "axis", 1)
                           << " with opset < 13 normalizes over all "
                              "trailing dimensions, which dtrain does not "
                              "support; re-export with opset >= 13";
  return emitSingle(node, opName, {*x},
                    {builder.getNamedAttr(
                        "axis", builder.getI64IntegerAttr(*normalized))});
}

LogicalResult Importer::importReduce(const onnx::NodeProto &node,
                                     StringRef opName) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  SmallVector<int64_t> axes = getIntsAttr(node, "axes");
  if (hasInput(node, 1)) {
    const ConstantValue *c = getIntConstant(node, 1);
    if (!c)
      return nodeError(node) << "the axes must be an integer constant";
    axes.assign(c->ints.begin(), c->ints.end());
  }
  if (axes.empty()) {
    if (getIntAttr(node, "noop_with_empty_axes", 0)) {
      values[node.output(0)] = *x;
      return success();
    }
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  for (int64_t &axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return nodeError(node) << "axis " << axis << " is out of range for rank "
                             << rank;
    axis = *normalized;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("dims", builder.getDenseI64ArrayAttr(axes))};
  if (getIntAttr(node, "keepdims", 1))
    attrs.push_back(builder.getNamedAttr("keep_dims", builder.getUnitAttr()));
  return emitSingle(node, opName, {*x}, attrs);
}

FailureOr<SmallVector<int64_t>>
Importer::getPadding2d(const onnx::NodeProto &node, ArrayRef<int64_t> inputHW,
                       ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> dilations) {
  std::string autoPad = getStringAttr(node, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads = getIntsAttr(node, "pads", {0, 0, 0, 0});
    if (pads.size() != 4)
      return nodeError(node) << "pads has " << pads.size()
                             << " values; a 2-d window takes 4";
    // ONNX orders [top, left, bottom, right] as nn does.
    return pads;
  }
  if (autoPad == "VALID")
    return SmallVector<int64_t>{0, 0, 0, 0};
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return nodeError(node) << "auto_pad '" << autoPad
                           << "' is not one of NOTSET, VALID, SAME_UPPER, "
                              "SAME_LOWER";
  SmallVector<int64_t> pads(4);
  for (int d = 0; d < 2; ++d) {
    int64_t out = (inputHW[d] + strides[d] - 1) / strides[d];
    int64_t extent = dilations[d] * (kernel[d] - 1) + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[d] + extent - inputHW[d]);
    int64_t small = total / 2, large = total - small;
    pads[d] = autoPad == "SAME_UPPER" ? small : large;
    pads[d + 2] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

LogicalResult Importer::importConv(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0), w = getValue(node, 1);
  if (failed(x) || failed(w))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  auto wType = cast<RankedTensorType>(w->getType());
  if (xType.getRank() != 4 || wType.getRank() != 4)
    return nodeError(node) << "only 2-d convolutions (rank-4 input and "
                              "weights) are supported, got "
                           << xType << " and " << wType;
  SmallVector<int64_t> strides = getIntsAttr(node, "strides", {1, 1});
  SmallVector<int64_t> dilations = getIntsAttr(node, "dilations", {1, 1});
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  FailureOr<SmallVector<int64_t>> pads = getPadding2d(
      node, xType.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  SmallVector<Value> operands = {*x, *w};
  if (hasInput(node, 2)) {
    FailureOr<Value> b = getValue(node, 2);
    if (failed(b))
      return failure();
    operands.push_back(*b);
  }
  return emitSingle(
      node, "nn.conv2d", operands,
      {builder.getNamedAttr("strides", builder.getDenseI64ArrayAttr(strides)),
       builder.getNamedAttr("dilations",
                            builder.getDenseI64ArrayAttr(dilations)),
       builder.getNamedAttr("padding", builder.getDenseI64ArrayAttr(*pads)),
       builder.getNamedAttr("groups", builder.getI64IntegerAttr(
                                          getIntAttr(node, "group", 1)))});
}

LogicalResult Importer::importPool(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  if (isOutputUsed(node, 1))
    return nodeError(node) << "the Indices output of MaxPool is not "
                              "supported";
  auto xType = cast<RankedTensorType>(x->getType());
  if (xType.getRank() != 4)
    return nodeError(node) << "only 2-d pooling (rank-4 input) is "
                              "supported, got "
                           << xType;
  bool isMax = node.op_type() == "MaxPool";
  SmallVector<int64_t> kernel = getIntsAttr(node, "kernel_shape");
  if (kernel.size() != 2)
    return nodeError(node) << "kernel_shape must have 2 values";
  SmallVector<int64_t> strides = getIntsAttr(node, "strides", {1, 1});
  SmallVector<int64_t> dilations = getIntsAttr(node, "dilations", {1, 1});
  FailureOr<SmallVector<int64_t>> pads = getPadding2d(
      node, xType.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("kernel", builder.getDenseI64ArrayAttr(kernel)),
      builder.getNamedAttr("strides", builder.getDenseI64ArrayAttr(strides)),
      builder.getNamedAttr("padding", builder.getDenseI64ArrayAttr(*pads))};
  if (isMax)
    attrs.push_back(builder.getNamedAttr(
        "dilations", builder.getDenseI64ArrayAttr(dilations)));
  if (getIntAttr(node, "ceil_mode", 0))
    attrs.push_back(builder.getNamedAttr("ceil_mode", builder.getUnitAttr()));
  if (!isMax && getIntAttr(node, "count_include_pad", 0))
    attrs.push_back(
        builder.getNamedAttr("count_include_pad", builder.getUnitAttr()));
  return emitSingle(node, isMax ? "nn.max_pool2d" : "nn.avg_pool2d", {*x},
                    attrs);
}

LogicalResult Importer::importBatchNorm(const onnx::NodeProto &node) {
  SmallVector<Value> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> value = getValue(node, i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  NamedAttribute epsilon = builder.getNamedAttr(
      "epsilon", builder.getF64FloatAttr(getFloatAttr(node, "epsilon", 1e-5)));
  bool training = getIntAttr(node, "training_mode", 0) != 0 ||
                  (opset < 14 && node.output_size() > 1);
  if (!training)
    return emitSingle(node, "nn.batch_norm", operands, {epsilon});

  // Training: normalize with the batch statistics; the running statistics
  // are the momentum-weighted mix that ONNX outputs 1 and 2 name, with the
  // biased batch variance as ONNX defines it (PyTorch's own training mixes
  // in the unbiased one).
  Location loc = nodeLoc(node);
  FailureOr<TensorType> yType = getResultType(node.output(0), loc);
  if (failed(yType))
    return failure();
  auto statType = cast<RankedTensorType>(operands[3].getType());
  FailureOr<Operation *> op =
      createOp(node, "nn.batch_norm_train",
               {operands[0], operands[1], operands[2]}, {epsilon},
               {*yType, statType, statType});
  if (failed(op))
    return failure();
  values[node.output(0)] = (*op)->getResult(0);
  double momentum = getFloatAttr(node, "momentum", 0.9);
  Type elementType = statType.getElementType();
  for (int i = 1; i <= 2; ++i) {
    Value running = operands[2 + i];
    auto runningArg = dyn_cast<BlockArgument>(running);
    bool isBuffer =
        runningArg && isa<func::FuncOp>(runningArg.getOwner()->getParentOp()) &&
        cast<func::FuncOp>(runningArg.getOwner()->getParentOp())
            .getArgAttr(runningArg.getArgNumber(),
                        train::TrainDialect::kBufferAttrName);
    bool named = node.output_size() > i && !node.output(i).empty();
    if (!named && !isBuffer)
      continue;
    // running' = momentum * running + (1 - momentum) * batch
    Value batch = (*op)->getResult(i);
    FailureOr<Operation *> keep = createOp(
        node, "nn.mul", {running, scalarConstant(momentum, elementType)}, {},
        {statType});
    FailureOr<Operation *> take =
        failed(keep) ? keep
                     : createOp(node, "nn.mul",
                                {batch, scalarConstant(1.0 - momentum,
                                                       elementType)},
                                {}, {statType});
    if (failed(take))
      return failure();
    FailureOr<Operation *> mixed =
        createOp(node, "nn.add",
                 {(*keep)->getResult(0), (*take)->getResult(0)}, {},
                 {statType});
    if (failed(mixed))
      return failure();
    if (named)
      values[node.output(i)] = (*mixed)->getResult(0);
    if (isBuffer)
      bufferUpdates.emplace_back(runningArg, (*mixed)->getResult(0));
  }
  return success();
}

LogicalResult Importer::importDropout(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  if (isOutputUsed(node, 1))
    return nodeError(node) << "the mask output of Dropout is not supported";
  double ratio = getFloatAttr(node, "ratio", 0.5);
  if (const ConstantValue *c = getConstant(node, 1);
      c && c->numElements() == 1)
    ratio = c->isInteger() ? double(c->ints[0]) : c->floats[0];
  else if (hasInput(node, 1))
    return nodeError(node) << "the ratio must be a constant scalar";
  return emitSingle(node, "nn.dropout", {*x},
                    {builder.getNamedAttr("ratio",
                                          builder.getF64FloatAttr(ratio))});
}

/// Slice of a tensor, its bounds constants (inputs from opset 10,
/// attributes before): resolved here as ONNX defines them (negative indices
/// from the end, clamped to the dimension: to [0, dim] for positive steps,
/// to [-1, dim - 1] for negative ones).
FailureOr<Importer::SliceBox> Importer::getSliceBox(const onnx::NodeProto &node,
                                                    ArrayRef<int64_t> dims,
                                                    bool negativeSteps) {
  int64_t rank = dims.size();
  auto ints = [&](int index, StringRef attr,
                  std::optional<SmallVector<int64_t>> absent)
      -> FailureOr<SmallVector<int64_t>> {
    if (opset < 10)
      return getIntsAttr(node, attr, absent.value_or(SmallVector<int64_t>{}));
    if (!hasInput(node, index)) {
      if (absent)
        return *absent;
      return nodeError(node) << "input #" << index << " is missing";
    }
    const ConstantValue *c = getIntConstant(node, index);
    if (!c)
      return nodeError(node) << "input #" << index
                             << " must be an integer constant";
    return SmallVector<int64_t>(c->ints);
  };
  FailureOr<SmallVector<int64_t>> starts = ints(1, "starts", std::nullopt),
                                  ends = ints(2, "ends", std::nullopt);
  if (failed(starts) || failed(ends))
    return failure();
  FailureOr<SmallVector<int64_t>> axes =
      ints(3, "axes", llvm::to_vector(llvm::seq<int64_t>(0, starts->size())));
  FailureOr<SmallVector<int64_t>> steps =
      ints(4, "", SmallVector<int64_t>(starts->size(), 1));
  if (failed(axes) || failed(steps))
    return failure();
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return nodeError(node) << "starts, ends, axes and steps differ in length";
  SliceBox box;
  box.starts.assign(rank, 0);
  box.sizes.assign(dims.begin(), dims.end());
  box.steps.assign(rank, 1);
  for (auto [start, end, axis, step] :
       llvm::zip_equal(*starts, *ends, *axes, *steps)) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return nodeError(node) << "axis " << axis << " is out of range";
    if (step == 0)
      return nodeError(node) << "step 0 is not allowed";
    if (step < 0 && !negativeSteps)
      return nodeError(node) << "step " << step
                             << " of a run-time tensor is not supported (only "
                                "positive steps; constants are reversed at "
                                "import)";
    int64_t dim = dims[axis];
    if (ShapedType::isDynamic(dim))
      return nodeError(node) << "slices dimension " << axis
                             << ", whose size is not known at import";
    const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    auto clamp = [&](int64_t i) {
      return std::clamp(i < 0 ? i + dim : i, lo, hi);
    };
    int64_t begin = clamp(start), stop = clamp(end);
    // |step| without overflow: beyond the dimension any stride takes one.
    const int64_t stride = step > 0 ? step : -std::max(step, -dim - 1);
    const int64_t span = step > 0 ? stop - begin : begin - stop;
    const int64_t size = span > 0 ? (span - 1) / stride + 1 : 0;
    box.sizes[axis] = size;
    // An empty slice starts at 0: past the end is no offset of the input.
    box.starts[axis] = size ? begin : 0;
    box.steps[axis] = step;
  }
  return box;
}

LogicalResult Importer::importSlice(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  FailureOr<SliceBox> box =
      getSliceBox(node, cast<RankedTensorType>(x->getType()).getShape(),
                  /*negativeSteps=*/false);
  if (failed(box))
    return failure();
  return emitSingle(
      node, "nn.slice", {*x},
      {builder.getNamedAttr("starts",
                            builder.getDenseI64ArrayAttr(box->starts)),
       builder.getNamedAttr("sizes", builder.getDenseI64ArrayAttr(box->sizes)),
       builder.getNamedAttr("steps",
                            builder.getDenseI64ArrayAttr(box->steps))});
}

FailureOr<Value> Importer::createAxisSlice(const onnx::NodeProto &node, Value x,
                                           int64_t axis, int64_t start,
                                           int64_t count) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), sizes(type.getShape()),
      steps(type.getRank(), 1);
  starts[axis] = start;
  sizes[axis] = count;
  FailureOr<Operation *> slice = createOp(
      node, "nn.slice", {x},
      {builder.getNamedAttr("starts", builder.getDenseI64ArrayAttr(starts)),
       builder.getNamedAttr("sizes", builder.getDenseI64ArrayAttr(sizes)),
       builder.getNamedAttr("steps", builder.getDenseI64ArrayAttr(steps))},
      {type.clone(sizes)});
  if (failed(slice))
    return failure();
  return (*slice)->getResult(0);
}

/// Split of a run-time tensor: one nn.slice of the axis per output, the
/// sizes given (input #1 from opset 13, the `split` attribute before) or
/// equal.
LogicalResult Importer::importSplit(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = getAxisAttr(node, 0, type.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  int64_t parts = node.output_size();
  SmallVector<int64_t> sizes;
  if (opset >= 13 && hasInput(node, 1)) {
    const ConstantValue *split = getIntConstant(node, 1);
    if (!split)
      return nodeError(node) << "the sizes (input #1) must be an integer "
                                "constant at import";
    sizes.assign(split->ints.begin(), split->ints.end());
  } else if (opset < 13 && findAttr(node, "split")) {
    sizes = getIntsAttr(node, "split");
  } else {
    // Equal parts; the last one smaller where they do not divide (opset 18).
    int64_t part = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::clamp<int64_t>(dim - i * part, 0, part));
  }
  if (int64_t(sizes.size()) != parts ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim ||
      llvm::any_of(sizes, [](int64_t size) { return size < 0; }))
    return nodeError(node) << "sizes [" << llvm::interleaved(sizes)
                           << "] do not split dimension " << *axis << " of "
                           << type << " into " << parts << " parts";
  int64_t start = 0;
  for (auto [index, size] : llvm::enumerate(sizes)) {
    FailureOr<Value> slice = createAxisSlice(node, *x, *axis, start, size);
    if (failed(slice))
      return failure();
    values[node.output(index)] = *slice;
    start += size;
  }
  return success();
}

/// LayerNormalization (opset 17) as the nn ops that earlier opsets export
/// it as: the mean and the biased variance over the axes from `axis` on,
/// (x - mean) / sqrt(var + epsilon), times the scale, plus the bias; the
/// optional outputs are the mean and 1 / sqrt(var + epsilon).
LogicalResult Importer::importLayerNorm(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0), scale = getValue(node, 1);
  if (failed(x) || failed(scale))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = getAxisAttr(node, -1, rank);
  if (failed(axis))
    return failure();
  // The scale and bias apply to the normalized elements: they broadcast to
  // the input (checked first, as the builders below infer their types).
  for (int i = 1; i < std::min(node.input_size(), 3); ++i) {
    FailureOr<Value> operand = getValue(node, i);
    if (failed(operand))
      return failure();
    auto operandType = cast<RankedTensorType>(operand->getType());
    SmallVector<int64_t> shape;
    if (operandType.getElementType() != type.getElementType() ||
        !OpTrait::util::getBroadcastedShape(type.getShape(),
                                            operandType.getShape(), shape) ||
        ArrayRef<int64_t>(shape) != type.getShape())
      return nodeError(node) << "input #" << i << " of type " << operandType
                             << " does not apply to " << type;
  }
  Location loc = nodeLoc(node);
  Type element = type.getElementType();
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(*axis, rank));
  auto mean = [&](Value value) -> Value {
    return nn::ReduceMeanOp::create(builder, loc, value, dims,
                                    /*keep_dims=*/true);
  };
  auto constant = [&](double value) -> Value {
    auto scalarType = RankedTensorType::get({}, element);
    return arith::ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(scalarType,
                               builder.getFloatAttr(element, value)));
  };
  Value average = mean(*x);
  Value centered = nn::SubOp::create(builder, loc, *x, average);
  Value variance =
      mean(nn::MulOp::create(builder, loc, centered, centered).getResult());
  Value deviation = nn::SqrtOp::create(
      builder, loc,
      nn::AddOp::create(builder, loc, variance,
                        constant(getFloatAttr(node, "epsilon", 1e-5))));
  Value y = nn::MulOp::create(
      builder, loc, nn::DivOp::create(builder, loc, centered, deviation),
      *scale);
  if (hasInput(node, 2)) {
    FailureOr<Value> bias = getValue(node, 2);
    if (failed(bias))
      return failure();
    y = nn::AddOp::create(builder, loc, y, *bias);
  }
  values[node.output(0)] = y;
  if (node.output_size() > 1 && !node.output(1).empty())
    values[node.output(1)] = average;
  if (node.output_size() > 2 && !node.output(2).empty())
    values[node.output(2)] =
        nn::DivOp::create(builder, loc, constant(1.0), deviation);
  return success();
}

LogicalResult Importer::importPad(const onnx::NodeProto &node) {
  FailureOr<Value> x = getValue(node, 0);
  if (failed(x))
    return failure();
  std::string mode = getStringAttr(node, "mode", "constant");
  if (mode != "constant")
    return nodeError(node) << "mode '" << mode
                           << "' is not supported (only constant)";
  SmallVector<int64_t> pads = getIntsAttr(node, "pads");
  double value = getFloatAttr(node, "value", 0.0);
  if (opset >= 11) {
    const ConstantValue *p = getIntConstant(node, 1);
    if (!p)
      return nodeError(node) << "the pads must be an integer constant";
    pads.assign(p->ints.begin(), p->ints.end());
    if (hasInput(node, 2)) {
      const ConstantValue *v = getConstant(node, 2);
      if (!v || v->numElements() != 1)
        return nodeError(node) << "the padding value must be a constant "
                                  "scalar";
      value = v->isInteger() ? double(v->ints[0]) : v->floats[0];
    }
  }
  return emitSingle(
      node, "nn.pad", {*x},
      {builder.getNamedAttr("pads", builder.getDenseI64ArrayAttr(pads)),
       builder.getNamedAttr("value", builder.getF64FloatAttr(value))});
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// The initializers to keep constant: --frozen's and those the model's
/// `dtrain.frozen` metadata names, in that order.
static SmallVector<StringRef> getFrozenNames(const onnx::ModelProto &model,
                                             const ONNXImportOptions &options) {
  SmallVector<StringRef> names(options.frozen.begin(), options.frozen.end());
  for (const onnx::StringStringEntryProto &entry : model.metadata_props())
    if (entry.key() == "dtrain.frozen")
      StringRef(entry.value()).split(names, ',', -1, /*KeepEmpty=*/false);
  return names;
}

/// getFrozenNames, each of which must be an initializer (a misspelt
/// --frozen would otherwise train the tensor).
FailureOr<llvm::StringSet<>>
Importer::getFrozenInitializers(const onnx::ModelProto &model) {
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &tensor : model.graph().initializer())
    initializerNames.insert(tensor.name());
  llvm::StringSet<> frozen;
  for (StringRef name : getFrozenNames(model, options)) {
    if (!initializerNames.contains(name))
      return emitError(fileLoc)
             << "--frozen names '" << name
             << "', which is not an initializer of the model";
    frozen.insert(name);
  }
  return frozen;
}

OwningOpRef<ModuleOp> Importer::run(onnx::ModelProto &model) {
  if (failed(checkVersions(model)))
    return nullptr;
  onnx::GraphProto &graph = *model.mutable_graph();
  bool ok = succeeded(checkSupportedOps(graph));
  ok &= succeeded(checkDataflow(graph));
  ok &= succeeded(bindInputShapes(graph));
  for (const onnx::TensorProto &tensor : graph.initializer())
    ok &= succeeded(checkExternalData(tensor));
  ok &= succeeded(checkTensorsStorage(graph));
  if (!ok || failed(checkWindowOps(model)))
    return nullptr;

  try {
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(/*check_type=*/true, /*strict_mode=*/1,
                                    /*data_prop=*/true));
  } catch (const std::exception &e) {
    emitError(fileLoc) << "ONNX shape inference failed: " << e.what();
    return nullptr;
  }
  collectTypes(graph);

  // Parameters: float initializers with at least one element that nodes
  // read as data; the rest (integer shape tensors, scalars) are constants.
  // Batch-norm running statistics are buffers, not trained; initializers no
  // node reads are left out.
  llvm::StringSet<> buffers;
  FailureOr<llvm::StringSet<>> frozen = getFrozenInitializers(model);
  if (failed(frozen))
    return nullptr;
  for (const onnx::ValueInfoProto &output : graph.output())
    used.insert(output.name());
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &input : node.input())
      used.insert(input);
    if (node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        buffers.insert(node.input(i));
  }
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers[tensor.name()] = &tensor;
  SmallVector<const onnx::TensorProto *> params;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    if (!used.contains(tensor.name()))
      continue;
    if (isFloatDataType(tensor.data_type()) && tensor.dims_size() > 0 &&
        !frozen->contains(tensor.name())) {
      params.push_back(&tensor);
      continue;
    }
    FailureOr<ConstantValue> value = readConstant(tensor, fileLoc);
    if (failed(value))
      return nullptr;
    constants[tensor.name()] = *value;
  }

  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  SmallVector<std::string> argNames;
  for (const onnx::TensorProto *tensor : params) {
    if (!getCheckedElementCount(tensor->dims())) {
      emitError(fileLoc) << "initializer '" << tensor->name()
                         << "' has invalid dimensions";
      return nullptr;
    }
    FailureOr<Type> elementType = getElementType(tensor->data_type(), fileLoc);
    if (failed(elementType))
      return nullptr;
    argTypes.push_back(RankedTensorType::get(
        SmallVector<int64_t>(tensor->dims().begin(), tensor->dims().end()),
        *elementType));
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        buffers.contains(tensor->name()) ? train::TrainDialect::kBufferAttrName
                                         : train::TrainDialect::kParamAttrName,
        builder.getStringAttr(tensor->name()))));
    argNames.push_back(tensor->name());
  }
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    FailureOr<RankedTensorType> type = getTensorType(input.name(), fileLoc);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        train::TrainDialect::kInputAttrName,
        builder.getStringAttr(input.name()))));
    argNames.push_back(input.name());
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr("train.onnx_model", builder.getStringAttr(path));
  builder.setInsertionPointToEnd(module->getBody());
  // The result types are those of the returned values, known at the end.
  auto function = func::FuncOp::create(builder, fileLoc, "forward",
                                       builder.getFunctionType(argTypes, {}));
  function.setAllArgAttrs(argAttrs);
  Block *body = function.addEntryBlock();
  for (auto [name, arg] : llvm::zip(argNames, body->getArguments()))
    values[name] = arg;
  builder.setInsertionPointToEnd(body);

  for (auto [index, node] : llvm::enumerate(graph.node())) {
    nodeIndex = index;
    if (failed(importNode(node)))
      return nullptr;
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = values.lookup(output.name());
    if (!value) {
      if (auto it = constants.find(output.name()); it != constants.end()) {
        FailureOr<Type> elementType =
            getElementType(it->second.elemType, fileLoc);
        if (failed(elementType))
          return nullptr;
        value = materialize(it->second, *elementType);
      } else {
        emitError(fileLoc) << "graph output '" << output.name()
                           << "' is not computed by any node";
        return nullptr;
      }
    }
    results.push_back(value);
  }
  for (auto [arg, update] : bufferUpdates)
    results.push_back(update);
  func::ReturnOp::create(builder, fileLoc, results);
  function.setType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [index, output] : llvm::enumerate(graph.output()))
    function.setResultAttr(index, train::TrainDialect::kOutputAttrName,
                           builder.getStringAttr(output.name()));
  for (auto [index, update] : llvm::enumerate(bufferUpdates))
    function.setResultAttr(
        graph.output_size() + index, train::TrainDialect::kUpdatedAttrName,
        function.getArgAttr(update.first.getArgNumber(),
                            train::TrainDialect::kBufferAttrName));
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

//===----------------------------------------------------------------------===//
// Reading the protobuf without its weights
//===----------------------------------------------------------------------===//

// Field numbers of onnx.proto that lead to the weights.
constexpr uint32_t kModelGraphField = 7;
constexpr uint32_t kGraphInitializerField = 5;
constexpr uint32_t kTensorDataTypeField = 2;
constexpr uint32_t kTensorNameField = 8;
constexpr uint32_t kTensorRawDataField = 9;
/// Raw data of float initializers up to this size is kept: the small
/// constants that the importer folds. Other initializers (integer index
/// buffers, such as Swin's relative positions) are constants and kept whole.
constexpr size_t kMaxKeptRawData = 4096;

static void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

/// Copies the protobuf message `in` to `out` field by field; `rewrite` may
/// take over a length-delimited field (returning true) to drop or change it.
/// Returns false when `in` is not a well-formed message.
static bool rewriteMessage(
    StringRef in, std::string &out,
    llvm::function_ref<bool(uint32_t field, StringRef payload,
                            std::string &out)>
        rewrite) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(in.data()),
      static_cast<int>(in.size()));
  while (stream.CurrentPosition() < static_cast<int>(in.size())) {
    int start = stream.CurrentPosition();
    uint32_t tag = stream.ReadTag();
    uint32_t field = tag >> 3;
    bool ok = field != 0;
    switch (tag & 7) {
    case 0: { // varint
      uint64_t ignored;
      ok = ok && stream.ReadVarint64(&ignored);
      break;
    }
    case 1: // fixed64
      ok = ok && stream.Skip(8);
      break;
    case 5: // fixed32
      ok = ok && stream.Skip(4);
      break;
    case 2: { // length-delimited
      uint32_t length;
      ok = ok && stream.ReadVarint32(&length);
      int payloadStart = stream.CurrentPosition();
      ok = ok && stream.Skip(length);
      if (ok && rewrite(field, in.substr(payloadStart, length), out))
        continue;
      break;
    }
    default: // groups (deprecated) and invalid wire types
      ok = false;
    }
    if (!ok)
      return false;
    out.append(in.data() + start, stream.CurrentPosition() - start);
  }
  return true;
}

/// The name of the TensorProto message TENSOR, read without copying its
/// data.
static std::string getTensorName(StringRef tensor) {
  std::string name, rest;
  rewriteMessage(tensor, rest,
                 [&](uint32_t field, StringRef payload, std::string &) {
                   if (field == kTensorNameField)
                     name = payload.str();
                   return true; // no length-delimited field is copied
                 });
  return name;
}

/// The data_type of the TensorProto message TENSOR (0, UNDEFINED, when it
/// has none or is malformed), read without copying its data.
static int64_t getTensorDataType(StringRef tensor) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(tensor.data()),
      static_cast<int>(tensor.size()));
  int64_t dataType = 0;
  while (uint32_t tag = stream.ReadTag()) {
    bool ok = true;
    switch (tag & 7) {
    case 0: {
      uint64_t value;
      ok = stream.ReadVarint64(&value);
      if (ok && tag >> 3 == kTensorDataTypeField)
        dataType = int64_t(value);
      break;
    }
    case 1:
      ok = stream.Skip(8);
      break;
    case 5:
      ok = stream.Skip(4);
      break;
    case 2: {
      uint32_t length;
      ok = stream.ReadVarint32(&length) && stream.Skip(length);
      break;
    }
    default:
      ok = false;
    }
    if (!ok)
      return 0;
  }
  return dataType;
}

/// The model without the raw data of its large initializers but those
/// named in KEEP (frozen ones, which become constants): the importer needs
/// their names, types and shapes only, so a model of any size is read with
/// memory for its graph, not its weights (the trainer maps the weights from
/// the file itself).
static bool stripWeights(StringRef model, const llvm::StringSet<> &keep,
                         std::string &slim) {
  auto appendField = [](std::string &out, uint32_t field,
                        StringRef payload) {
    appendVarint(out, (field << 3) | 2);
    appendVarint(out, payload.size());
    out.append(payload.data(), payload.size());
  };
  bool wellFormed = true;
  bool ok = rewriteMessage(model, slim, [&](uint32_t field, StringRef graph,
                                            std::string &out) {
    if (field != kModelGraphField)
      return false;
    std::string slimGraph;
    wellFormed &= rewriteMessage(
        graph, slimGraph,
        [&](uint32_t field, StringRef tensor, std::string &out) {
          if (field != kGraphInitializerField)
            return false;
          if (!keep.empty() && keep.contains(getTensorName(tensor)))
            return false;
          const int64_t dataType = getTensorDataType(tensor);
          if (dataType != 0 && !isFloatDataType(dataType))
            return false;
          std::string slimTensor;
          wellFormed &= rewriteMessage(
              tensor, slimTensor,
              [](uint32_t field, StringRef data, std::string &) {
                return field == kTensorRawDataField &&
                       data.size() > kMaxKeptRawData;
              });
          appendField(out, field, slimTensor);
          return true;
        });
    appendField(out, field, slimGraph);
    return true;
  });
  return ok && wellFormed;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::dtrain::importONNX(const llvm::MemoryBuffer &buffer, MLIRContext *context,
                         const ONNXImportOptions &options) {
  context->loadDialect<arith::ArithDialect, func::FuncDialect, nn::NNDialect,
                       train::TrainDialect>();
  StringRef path = buffer.getBufferIdentifier();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  StringRef data = buffer.getBuffer();

  onnx::ModelProto model;
  if (data.ltrim().starts_with("<")) {
    // The ONNX text format, handy for tests. Its parser reports most errors
    // by status, some (malformed numbers) by throwing.
    std::string message;
    try {
      onnx::Common::Status status =
          onnx::OnnxParser::Parse(model, data.str().c_str());
      if (!status.IsOK())
        message = status.ErrorMessage();
    } catch (const std::exception &e) {
      message = e.what();
    }
    if (!message.empty()) {
      emitError(fileLoc) << "cannot parse the ONNX text format: " << message;
      return nullptr;
    }
  } else {
    if (data.size() > static_cast<size_t>(INT_MAX)) {
      emitError(fileLoc) << "the model is larger than protobuf's 2 GB "
                            "limit; store its weights as external data";
      return nullptr;
    }
    // Frozen initializers become constants, so their data is read; the
    // metadata naming some of them is known once the model is parsed.
    llvm::StringSet<> keep;
    for (const std::string &name : options.frozen)
      keep.insert(name);
    for (bool again = true; again;) {
      std::string slim;
      if (!stripWeights(data, keep, slim) || !model.ParseFromString(slim)) {
        emitError(fileLoc) << "not an ONNX model: the file does not parse "
                              "as an ONNX ModelProto (truncated, or another "
                              "format?)";
        return nullptr;
      }
      size_t kept = keep.size();
      for (StringRef name : getFrozenNames(model, options))
        keep.insert(name);
      again = keep.size() > kept;
    }
  }
  if (!model.has_graph()) {
    emitError(fileLoc) << "not an ONNX model: it has no graph";
    return nullptr;
  }
  Importer importer(context, path, options);
  return importer.run(model);
}

namespace {
struct ONNXImportCLOptions {
  llvm::cl::opt<int64_t> batchSize{
      "batch-size",
      llvm::cl::desc("ONNX import: bind dimension 0 of every data input "
                     "whose size is symbolic to N"),
      llvm::cl::value_desc("N"), llvm::cl::init(0)};
  llvm::cl::list<std::string> inputShapes{
      "input-shape",
      llvm::cl::desc("ONNX import: the full shape of a data input, as "
                     "NAME=D0xD1x... (repeatable)"),
      llvm::cl::value_desc("NAME=DIMS")};
  llvm::cl::list<std::string> frozen{
      "frozen",
      llvm::cl::desc("ONNX import: float initializers to keep constant "
                     "instead of training them, as PyTorch's buffers (an "
                     "attention mask); dtrain.export lists a module's "
                     "buffers in the model, which needs no flag"),
      llvm::cl::value_desc("NAME,..."), llvm::cl::CommaSeparated};
};
} // namespace

static llvm::ManagedStatic<ONNXImportCLOptions> clOptions;

void mlir::dtrain::registerONNXImportCLOptions() { *clOptions; }

FailureOr<ONNXImportOptions>
mlir::dtrain::getONNXImportOptionsFromCL(Location loc) {
  ONNXImportOptions options;
  int64_t batchSize = clOptions->batchSize;
  // 0 is the default (not given); given, it must be positive.
  if (batchSize < 0 ||
      (batchSize == 0 && clOptions->batchSize.getNumOccurrences()))
    return emitError(loc) << "--batch-size must be positive, got "
                          << batchSize;
  if (batchSize > 0)
    options.batchSize = batchSize;
  for (StringRef text : clOptions->inputShapes) {
    auto [name, dims] = text.split('=');
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    SmallVector<int64_t> shape;
    for (StringRef part : parts) {
      int64_t size;
      if (part.getAsInteger(10, size) || size <= 0)
        return emitError(loc) << "--input-shape expects NAME=D0xD1x... with "
                                 "positive sizes, got '"
                              << text << "'";
      shape.push_back(size);
    }
    if (name.empty())
      return emitError(loc) << "--input-shape expects NAME=D0xD1x..., got '"
                            << text << "'";
    options.inputShapes[name] = shape;
  }
  llvm::append_range(options.frozen, clOptions->frozen);
  return options;
}

void mlir::dtrain::registerONNXImportTranslation() {
  registerONNXImportCLOptions();
  TranslateToMLIRRegistration registration(
      "import-onnx",
      "Import an ONNX model (binary or text format) into the nn dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        FailureOr<ONNXImportOptions> options = getONNXImportOptionsFromCL(
            FileLineColLoc::get(context, buffer->getBufferIdentifier(), 0, 0));
        if (failed(options))
          return nullptr;
        return importONNX(*buffer, context, *options);
      },
      [](DialectRegistry &registry) {
        registry.insert<arith::ArithDialect, func::FuncDialect,
                        nn::NNDialect, train::TrainDialect>();
      });
}
