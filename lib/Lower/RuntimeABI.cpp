//===- RuntimeABI.cpp - Calling the runtime's C ABI from MLIR -------------===//

#include "RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

func::CallOp mlir::dtrain::lower::createRuntimeCall(OpBuilder &builder,
                                                    Operation *from,
                                                    StringRef name,
                                                    FunctionType type,
                                                    ValueRange args) {
  auto module = from->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
    decl.setPrivate();
  }
  return func::CallOp::create(builder, from->getLoc(), name,
                              type.getResults(), args);
}

Value mlir::dtrain::lower::getBufferAddress(OpBuilder &b, Location loc,
                                            Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value elementBytes = arith::ConstantIndexOp::create(
      b, loc, type.getElementType().getIntOrFloatBitWidth() / 8);
  Value offsetBytes =
      arith::MulIOp::create(b, loc, metadata.getOffset(), elementBytes);
  Value address = arith::AddIOp::create(b, loc, aligned, offsetBytes);
  return LLVM::IntToPtrOp::create(
             b, loc, LLVM::LLVMPointerType::get(b.getContext()),
             arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address)
                 .getResult())
      .getResult();
}

Value mlir::dtrain::lower::getBufferElementCount(OpBuilder &b, Location loc,
                                                 Value memref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value size : metadata.getSizes())
    count = arith::MulIOp::create(b, loc, count, size);
  return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), count);
}
