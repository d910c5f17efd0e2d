//===- NNDialect.td - nn dialect definition ----------------*- tablegen -*-===//
//
// The nn dialect: value-semantics tensor ops, the differentiable vocabulary
// that ONNX models are imported into and training graphs are built from.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_DIALECT_NN_IR_NNDIALECT_TD
#define DTRAIN_DIALECT_NN_IR_NNDIALECT_TD

include "mlir/IR/OpBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::mlir::dtrain::nn";
  let summary = "Neural-network tensor ops with value semantics";
  let description = [{
    The `nn` dialect holds the tensor operations of a model's forward pass and
    of its hand-built or generated backward pass. Every op works on ranked
    tensors with value semantics: an op never writes its operands, so the
    training graph can be analysed and rewritten freely before bufferization.

    Forward ops are the vocabulary the ONNX importer produces. Backward ops
    (such as `nn.relu_grad` and `nn.softmax_cross_entropy_grad`) exist where
    the vector-Jacobian product has no cheap composition of forward ops.

    Elementwise binary ops broadcast their operands the way NumPy and ONNX
    do: shapes are aligned at the trailing dimension and a dimension of size
    1 stretches to the other operand's size.
  }];
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

// Floating-point element types the nn ops compute in.
def NN_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def NN_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
def NN_FloatScalarTensor : 0DTensorOf<[F16, BF16, F32, F64]>;
def NN_LabelTensor : RankedTensorOf<[I32, I64]>;
// Run-time integer data besides labels and indices: masks, as ids or booleans.
def NN_IntegerTensor : RankedTensorOf<[I1, I32, I64]>;
def NN_FloatOrIntegerTensor
    : RankedTensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;

#endif // DTRAIN_DIALECT_NN_IR_NNDIALECT_TD
