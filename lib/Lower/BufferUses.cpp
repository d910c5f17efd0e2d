//===- BufferUses.cpp - where a buffer of a step is used ------------------===//

#include "BufferUses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

bool mlir::dtrain::lower::isStaticPlainAlloc(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  return type.hasStaticShape() && type.getLayout().isIdentity() &&
         !type.getMemorySpace() && alloc.getSymbolOperands().empty();
}

std::optional<llvm::SetVector<Operation *>>
mlir::dtrain::lower::getDerivedUsers(Value buffer, Block &block) {
  llvm::SetVector<Operation *> users;
  llvm::SetVector<Value> derived;
  derived.insert(buffer);
  for (unsigned i = 0; i < derived.size(); ++i) {
    for (Operation *user : derived[i].getUsers()) {
      if (isa<memref::DeallocOp, func::ReturnOp>(user))
        return std::nullopt;
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (!ancestor)
        return std::nullopt;
      users.insert(ancestor);
      for (Value result : user->getResults())
        derived.insert(result);
      if (ancestor != user)
        for (Value result : ancestor->getResults())
          derived.insert(result);
    }
  }
  return users;
}
