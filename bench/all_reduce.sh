#!/usr/bin/env bash
# All-reduce benchmark on three transports, one labelled section each:
#   1. shared memory (Open MPI's default BTLs, all ranks on this machine)
#   2. loopback TCP (--mca btl tcp,self)
#   3. an emulated cluster of namespaces over bandwidth-shaped 1 Gbit/s links
#      (scripts/emulated-cluster.sh: up, run, down); only as root, skipped
#      otherwise
# Each section runs dtrain-rt-allreduce-bench (runtime/bench/
# all_reduce_bench.cpp): MPI_Allreduce (the peer), the runtime's MPI and
# ring all-reduces, the neighbour point-to-point bandwidth and the bound
# 2(P-1)/P*M/B.
#
#   bench/all_reduce.sh [options] [BENCH_BINARY] [-- BENCH_ARGS...]
#     --np N              ranks (default 4)
#     --sizes LIST        sizes on shm and TCP (default: the bench's,
#                         1K,16K,256K,1M,4M,16M,64M,256M)
#     --cluster-sizes L   sizes on the emulated cluster
#                         (default 1K,16K,256K,1M,4M,16M,64M)
#     --rate RATE         link rate of the emulated cluster (default 1gbit)
#     --no-cluster        skip the emulated cluster
#     --timeout S         limit per section in seconds (default 900)
# BENCH_BINARY defaults to the first that exists of
# build/bin/dtrain-rt-allreduce-bench (the full tree's build),
# build-rt/dtrain-rt-allreduce-bench (runtime built on its own) and
# build/runtime/dtrain-rt-allreduce-bench. BENCH_ARGS (e.g. --iters=5,
# --min-time=0.5) go to every run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

np=4 sizes="" cluster_sizes=1K,16K,256K,1M,4M,16M,64M rate=1gbit
cluster=1 limit=900 bin="" extra=()
die() {
  echo "all_reduce.sh: error: $*" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case $1 in
  --np) np=${2:?--np needs a value}; shift 2 ;;
  --sizes) sizes=${2:?--sizes needs a value}; shift 2 ;;
  --cluster-sizes) cluster_sizes=${2:?--cluster-sizes needs a value}; shift 2 ;;
  --rate) rate=${2:?--rate needs a value}; shift 2 ;;
  --no-cluster) cluster=0; shift ;;
  --timeout) limit=${2:?--timeout needs a value}; shift 2 ;;
  -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  --) shift; extra=("$@"); break ;;
  -*) die "unknown option '$1' (see --help)" ;;
  *) [[ -z $bin ]] || die "more than one binary given ('$bin', '$1')"; bin=$1; shift ;;
  esac
done
[[ $np =~ ^[1-9][0-9]*$ ]] || die "--np must be a positive number"

if [[ -z $bin ]]; then
  for candidate in build/bin build-rt build/runtime; do
    if [[ -x $ROOT/$candidate/dtrain-rt-allreduce-bench ]]; then
      bin=$ROOT/$candidate/dtrain-rt-allreduce-bench
      break
    fi
  done
  [[ -n $bin ]] || die "dtrain-rt-allreduce-bench not found under build/bin, build-rt or build/runtime; build it (ninja -C build dtrain-rt-allreduce-bench) or pass its path"
fi
[[ -x $bin ]] || die "'$bin' is not an executable"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v mpirun >/dev/null || die "mpirun not found (Debian: openmpi-bin)"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
shm_args=("${extra[@]}")
[[ -n $sizes ]] && shm_args=("--sizes=$sizes" "${extra[@]}")
failed=0

section_start() { echo "$1"; start=$SECONDS; }
section_end() { echo "-- $((SECONDS - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"; echo; }

section_start "== all-reduce: $np ranks, shared memory (default btl): $bin ${shm_args[*]}"
timeout --kill-after=10 "$limit" mpirun --oversubscribe -np "$np" \
  "$bin" "${shm_args[@]}" </dev/null || { echo "!! shared-memory run failed (exit $?)"; failed=1; }
section_end

section_start "== all-reduce: $np ranks, loopback TCP (--mca btl tcp,self): $bin ${shm_args[*]}"
timeout --kill-after=10 "$limit" mpirun --oversubscribe -np "$np" \
  --mca btl tcp,self "$bin" "${shm_args[@]}" </dev/null || { echo "!! loopback-TCP run failed (exit $?)"; failed=1; }
section_end

cluster_script=$ROOT/scripts/emulated-cluster.sh
if [[ $cluster == 0 ]]; then
  echo "== all-reduce: emulated cluster: skipped (--no-cluster)"
elif [[ $(id -u) -ne 0 ]]; then
  echo "== all-reduce: emulated cluster: skipped (needs root: network namespaces and tc)"
elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "== all-reduce: emulated cluster: skipped (ip/tc from iproute2 not found)"
else
  section_start "== all-reduce: $np ranks, emulated cluster: $np network namespaces, veth links shaped to $rate (tbf), btl tcp: $bin --sizes=$cluster_sizes ${extra[*]}"
  if "$cluster_script" up "$np" "$rate"; then
    trap '"$cluster_script" down >/dev/null 2>&1' EXIT
    trap 'exit 130' INT TERM
    "$cluster_script" run -np "$np" --timeout "$limit" \
      "$bin" "--sizes=$cluster_sizes" "${extra[@]}" || { echo "!! emulated-cluster run failed (exit $?)"; failed=1; }
    "$cluster_script" down
    trap - EXIT
    section_end
  else
    echo "!! could not bring the emulated cluster up (see above)"
    failed=1
  fi
fi
exit $failed
