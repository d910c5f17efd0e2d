# Sourced from an unpacked GPU bundle (scripts/gpu-bundle.sh copies it to
# dtrain-gpu/env.sh): makes its programs find the bundle's libraries and
# OpenMPI, and CUDA's libraries where the machine has them. Sets BUNDLE (the
# bundle's folder) and MPIRUN (its orterun), and prints the libraries that
# no program of the bundle finds; returns 1 when there is one.

BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# CUDA's libraries: the driver's (/usr/local/nvidia on the device machines
# here), the toolkit's, then PyTorch's wheels (nvidia-cublas, -cudnn,
# -nccl, -cuda-runtime), whichever hold them.
cuda_dirs=()
for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
    /usr/local/cuda/lib64 /usr/local/cuda/lib \
    /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$dir" ] && cuda_dirs+=("$dir")
done
for python in python3 /usr/bin/python3; do
  site=$("$python" -c 'import os, nvidia; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null) || continue
  for dir in "$site"/nvidia/*/lib; do
    [ -d "$dir" ] && cuda_dirs+=("$dir")
  done
  break
done
cuda_path=$(IFS=:; echo "${cuda_dirs[*]}")

# The bundle's libraries first: OpenMPI's plugins must match its libmpi.
export LD_LIBRARY_PATH="$BUNDLE/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# OpenMPI (Debian's 4.1) and its PMIx, relocated into the bundle.
export OPAL_PREFIX="$BUNDLE/openmpi"
export OPAL_BINDIR="$BUNDLE/openmpi/bin"
export OPAL_LIBDIR="$BUNDLE/lib"
export OPAL_PKGLIBDIR="$BUNDLE/openmpi/lib/openmpi3"
export OPAL_DATADIR="$BUNDLE/openmpi/share"
export OPAL_PKGDATADIR="$BUNDLE/openmpi/share/openmpi"
export OPAL_SYSCONFDIR="$BUNDLE/openmpi/etc"
export PMIX_INSTALL_PREFIX="$BUNDLE/openmpi"
export PMIX_MCA_mca_base_component_path="$BUNDLE/openmpi/lib/pmix"
export PATH="$BUNDLE/openmpi/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="$BUNDLE/openmpi/bin/orterun"
# The host test's kernel files (their build paths are compiled in).
export DTRAIN_TEST_KERNEL_PTX="$BUNDLE/bin/cuda_host_kernel.ptx"
export DTRAIN_TEST_KERNEL_FATBIN="$BUNDLE/bin/cuda_host_kernel.fatbin"

missing=$(find "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/digits" "$BUNDLE/steps" \
            -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} \; 2>/dev/null \
          | awk '/not found/ { print $1 }' | sort -u)
if [ -n "$missing" ]; then
  echo "gpu-bundle: libraries not found here: $(echo $missing)"
  echo "gpu-bundle: (searched the bundle's lib/ and: ${cuda_path:-no CUDA folder})"
  return 1
fi
return 0
