//===- TrainDialect.td - train dialect definition ----------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_TD
#define DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_TD

include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::mlir::dtrain::train";
  let summary = "The structure of a training step and its optimizer updates";
  let description = [{
    The `train` dialect says what the values of a training step are and how
    parameters are updated from their gradients.

    The role of each argument of a training-step function is given by one of
    these argument attributes, whose value names the tensor (for parameters,
    the ONNX initializer name, so that checkpoints and the exported model can
    find it):

    | attribute | the argument is |
    |-----------|-----------------|
    | `train.param = "fc1.weight"` | a trainable parameter |
    | `train.buffer = "bn1.running_mean"` | non-trainable state the model updates itself (batch-norm running statistics, PyTorch's buffers) |
    | `train.optimizer_state = "fc1.weight.momentum"` | optimizer state kept across steps, the same on every rank |
    | `train.rank_state = "residual.0"` | state kept across steps that each rank has its own of (the residuals of sparsified exchanges) |
    | `train.input = "x"` | a batch of model inputs |
    | `train.label = "y"` | a batch of labels |

    An argument has at most one role, its type is a ranked tensor or a
    memref, and each name is used at most once per function. A result may
    carry `train.output = "y"`, the name of the model output it is (the ONNX
    graph output), which compiled models use to name their output files, or
    `train.updated = "fc1.weight"`, which makes it the new value of the
    parameter, buffer, optimizer state or rank state of that name (an
    argument of the same function, with the same type).

    ```mlir
    func.func @train_step(%w: tensor<784x10xf32> {train.param = "fc.weight"},
                          %x: tensor<32x784xf32> {train.input = "x"},
                          %y: tensor<32xi64> {train.label = "y"}) -> ...
    ```
  }];
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the argument attributes that give an argument its role.
    static constexpr llvm::StringLiteral kParamAttrName = "train.param";
    static constexpr llvm::StringLiteral kBufferAttrName = "train.buffer";
    static constexpr llvm::StringLiteral kOptimizerStateAttrName =
        "train.optimizer_state";
    static constexpr llvm::StringLiteral kRankStateAttrName =
        "train.rank_state";
    /// Inserts into FUNC an argument NAME of TYPE with role ROLE
    /// (kOptimizerStateAttrName or kRankStateAttrName) after its parameters
    /// and state, and returns it.
    static ::mlir::BlockArgument
    insertStateArgument(::mlir::FunctionOpInterface func, ::mlir::Type type,
                        ::llvm::StringRef role, ::llvm::StringRef name);
    /// Appends to FUNC (with a single block) the result VALUE, returned by
    /// its terminator and marked as the new value of the argument NAME
    /// (kUpdatedAttrName).
    static void appendStateResult(::mlir::FunctionOpInterface func,
                                  ::mlir::Value value, ::llvm::StringRef name);
    /// The roles whose argument a result may update (train.updated).
    static constexpr llvm::StringLiteral kUpdatableAttrNames[] = {
        kParamAttrName, kBufferAttrName, kOptimizerStateAttrName,
        kRankStateAttrName};
    static constexpr llvm::StringLiteral kInputAttrName = "train.input";
    static constexpr llvm::StringLiteral kLabelAttrName = "train.label";
    /// Name of the result attribute that names a model output.
    static constexpr llvm::StringLiteral kOutputAttrName = "train.output";
    /// Name of the result attribute that marks the new value of the
    /// parameter, buffer or optimizer state it names.
    static constexpr llvm::StringLiteral kUpdatedAttrName = "train.updated";
  }];
}

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

#endif // DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_TD
