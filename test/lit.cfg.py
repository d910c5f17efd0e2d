# -*- Python -*-
# lit configuration of dtrain's regression tests.

import os
import sys

from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

# The test format lives in a module of its own: lit's workers unpickle it.
sys.path.insert(0, os.path.dirname(__file__))
from lit_formats import ShTestWithOwnTmpdir  # noqa: E402

config.name = "DTRAIN"
config.test_format = ShTestWithOwnTmpdir(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dtrain_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%dtrain_libs", config.dtrain_libs_dir))
config.substitutions.append(("%dtrain_src", config.dtrain_src_root))
config.substitutions.append(("%llvm_lib_dir", config.llvm_lib_dir))
config.substitutions.append(
    ("%dtrain_runtime_include", os.path.join(config.dtrain_src_root, "runtime", "include")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "OMP_NUM_THREADS", "OMP_WAIT_POLICY"])
llvm_config.use_default_substitutions()

# dtrain's tools come first on PATH; FileCheck, not and the stock mlir-opt
# come from Debian's LLVM 22.
llvm_config.with_environment("PATH", config.dtrain_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = [
    "dtrain-compile",
    "dtrain-opt",
    "dtrain-translate",
    # Debian's interpreter, which sees python3-onnx (the first python3 on
    # PATH may be another one).
    ToolSubst("%python", "/usr/bin/python3"),
    # The stock mlir-opt, for the plugin test: never dtrain's.
    ToolSubst("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")),
    "mlir-translate",
]
llvm_config.add_tool_substitutions(tools, [config.dtrain_tools_dir, config.llvm_tools_dir])

# Tests that export models with PyTorch need Debian's python3-torchvision.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import torchvision"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torchvision")
# The demo's data set is scikit-learn's digits (python3-sklearn).
if subprocess.run(["/usr/bin/python3", "-c", "import sklearn"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("sklearn")

# dtrain built with CUDA (the toolkit was found at configure time): the GPU
# lowering and --target=cuda trainers can be compiled and linked; running
# them needs a GPU (feature cuda-device, from nvidia-smi).
if os.path.exists(os.path.join(config.dtrain_libs_dir,
                               "libdtrain_runtime_cuda" + config.llvm_shlib_ext)):
    config.available_features.add("cuda")
    import shutil
    if shutil.which("nvidia-smi") and subprocess.run(
            ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add("cuda-device")

# Execution tests compile generated code with clang and run it under mpirun.
if config.clang and config.mpiexec and os.path.exists(config.mpiexec):
    config.available_features.add("mpi")
    config.substitutions.append(("%clang", config.clang))
    # As root (containers, CI) Open MPI needs explicit consent; more ranks than
    # cores need --oversubscribe; stdin from /dev/null and a timeout keep a
    # broken launch from hanging the suite.
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.substitutions.append(
        ("%mpirun", "timeout 120 %s --oversubscribe" % config.mpiexec))
