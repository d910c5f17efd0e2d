#!/usr/bin/env bash
# An emulated cluster on one machine: N network namespaces ("hosts") joined
# by a bridge over bandwidth-shaped veth links, and Open MPI set up to treat
# each namespace as a host. Needs root, `ip` and `tc` (iproute2).
#
#   scripts/emulated-cluster.sh up [N] [RATE]   N hosts (default 4), links
#                                               shaped to RATE (default 1gbit)
#   scripts/emulated-cluster.sh run [-np P] [--timeout S] [--] CMD [ARGS...]
#   scripts/emulated-cluster.sh status
#   scripts/emulated-cluster.sh down            idempotent; also cleans up a
#                                               partial `up`
#
# Layout: namespaces dtrain-ns0..N-1; in namespace i the veth end
# dtrain-p<i> has 10.77.0.<i+1>/24, its other end dtrain-v<i> is a port of
# the bridge dtrain-br0 (10.77.0.254/24) in the root namespace. Both ends of
# every veth get `tc qdisc ... tbf rate RATE burst 256kb latency 50ms`, so
# each host sends and receives at most RATE (netem is not needed: there is
# bandwidth shaping only, no added delay or loss).
#
# `run` starts mpirun in the root namespace with a hostfile of the
# namespace addresses and an rsh agent that runs `ip netns exec <ns> sh -c
# "$*"` for the namespace owning the address (ranks placed with
# `ip netns exec` directly do not work: PMIx listens on 127.0.0.1 of the
# root namespace), with a TMPDIR of its own per host. Daemons stay attached
# to the agent, so one that fails to start fails the launch, which `run`
# then retries (twice). MPI traffic is restricted to the bridge subnet over TCP
# (--mca btl tcp,self), so it all goes through the shaped links. Every
# "host" has one slot, so Open MPI would busy-poll; all of them share this
# machine's cores, so `run` sets mpi_yield_when_idle (without it a 1 KB
# all-reduce on 4 ranks and 2 cores took 8-20 ms instead of 0.1 ms, and
# large messages lost 15% of the bandwidth), and --bind-to none: each
# "host" would bind its rank to its own first core, the same core of this
# machine for all of them (Open MPI binds to cores at 2 ranks or fewer),
# so 2 ranks ran on one core.
#
# State (hostfile, rsh agent, settings) lives in $DTRAIN_CLUSTER_DIR
# (default /tmp/dtrain-cluster).
set -Eeuo pipefail

STATE_DIR=${DTRAIN_CLUSTER_DIR:-/tmp/dtrain-cluster}
PREFIX=dtrain
BRIDGE=${PREFIX}-br0
SUBNET_PREFIX=10.77.0
SUBNET=${SUBNET_PREFIX}.0/24
BRIDGE_IP=${SUBNET_PREFIX}.254
MAX_HOSTS=200

usage() {
  sed -n '2,/^set -Eeuo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

die() {
  echo "emulated-cluster: error: $*" >&2
  exit 1
}

need_root() {
  [[ $(id -u) -eq 0 ]] ||
    die "must run as root (network namespaces, veth, bridges and tc need CAP_NET_ADMIN); try: sudo $0 $*"
}

need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 ||
      die "'$tool' not found in PATH (ip and tc come with iproute2: apt-get install iproute2; mpirun with openmpi-bin)"
  done
}

# Namespaces and links of ours that exist now (also after a partial `up`).
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-ns[0-9]+$" | sort -V || true
}
our_links() {
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
    grep -E "^${PREFIX}-(v[0-9]+|p[0-9]+|br0)$" || true
}

cmd_down() {
  need_root down
  need_tools ip
  local ns link
  for ns in $(our_namespaces); do
    # Deleting the namespace deletes its veth end and with it the pair.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
  done
  for link in $(our_links); do
    ip link delete "$link" 2>/dev/null || true
  done
  rm -rf "$STATE_DIR"
  if [[ -n $(our_namespaces) || -n $(our_links) ]]; then
    die "could not remove: $(our_namespaces) $(our_links)"
  fi
  echo "emulated cluster down"
}

cmd_up() {
  need_root up
  need_tools ip tc
  local n=${1:-4} rate=${2:-1gbit}
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le $MAX_HOSTS ]] ||
    die "N must be a number of hosts from 1 to $MAX_HOSTS (got '$n')"
  [[ $rate =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT])?(bit|bps)$ ]] ||
    die "RATE must be a tc rate such as 1gbit, 500mbit, 100mbps (got '$rate')"
  if [[ -n $(our_namespaces) || -n $(our_links) || -e $STATE_DIR ]]; then
    die "an emulated cluster (or part of one) already exists; run '$0 down' first"
  fi
  # A failed `up` leaves nothing behind.
  trap 'trap - ERR; echo "emulated-cluster: up failed; cleaning up" >&2; cmd_down >/dev/null 2>&1 || true' ERR

  local shape=(tbf rate "$rate" burst 256kb latency 50ms)
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  mkdir -p "$STATE_DIR"
  : >"$STATE_DIR/hostfile"
  : >"$STATE_DIR/hosts"
  local i ns host peer ip
  for ((i = 0; i < n; ++i)); do
    ns=${PREFIX}-ns$i host=${PREFIX}-v$i peer=${PREFIX}-p$i ip=${SUBNET_PREFIX}.$((i + 1))
    ip netns add "$ns"
    ip link add "$host" type veth peer name "$peer"
    ip link set "$peer" netns "$ns"
    ip link set "$host" master "$BRIDGE"
    ip link set "$host" up
    tc qdisc add dev "$host" root "${shape[@]}"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$ip/24" dev "$peer"
    ip -n "$ns" link set "$peer" up
    ip netns exec "$ns" tc qdisc add dev "$peer" root "${shape[@]}"
    mkdir -p "$STATE_DIR/tmp/$ns"
    echo "$ip slots=1" >>"$STATE_DIR/hostfile"
    echo "$ip $ns" >>"$STATE_DIR/hosts"
  done

  # Open MPI's rsh launcher calls: AGENT [options] HOST COMMAND...
  cat >"$STATE_DIR/rsh-agent" <<EOF
#!/bin/sh
# rsh agent of the emulated cluster: runs COMMAND in the namespace of HOST.
while [ \$# -gt 0 ]; do
  case "\$1" in
    -*) shift ;;
    *) break ;;
  esac
done
[ \$# -ge 2 ] || { echo "rsh-agent: usage: rsh-agent HOST COMMAND..." >&2; exit 2; }
host=\$1
shift
ns=\$(awk -v h="\$host" '\$1 == h { print \$2 }' "$STATE_DIR/hosts")
[ -n "\$ns" ] || { echo "rsh-agent: unknown host '\$host' (not in $STATE_DIR/hosts)" >&2; exit 2; }
# Each host has its own temporary directory, as real hosts do: on one
# machine the daemons' session directories (/tmp/ompi.<hostname>.<uid>/...)
# would otherwise be one tree, created concurrently by all of them (seen to
# fail with "mkdir ... File exists").
exec ip netns exec "\$ns" env TMPDIR="$STATE_DIR/tmp/\$ns" sh -c "\$*"
EOF
  chmod +x "$STATE_DIR/rsh-agent"
  printf 'N=%s\nRATE=%s\n' "$n" "$rate" >"$STATE_DIR/config"
  trap - ERR
  echo "emulated cluster up: $n hosts (${SUBNET_PREFIX}.1-${SUBNET_PREFIX}.$n, namespaces ${PREFIX}-ns0..$((n - 1))), links shaped to $rate, bridge $BRIDGE ($BRIDGE_IP)"
  echo "state: $STATE_DIR (hostfile, rsh-agent)"
}

load_config() {
  [[ -f $STATE_DIR/config && -f $STATE_DIR/hostfile && -x $STATE_DIR/rsh-agent ]] ||
    die "no emulated cluster is up (no state in $STATE_DIR); run '$0 up' first"
  # shellcheck disable=SC1091
  source "$STATE_DIR/config"
}

cmd_run() {
  need_root run
  need_tools ip mpirun timeout
  load_config
  local np=$N limit=${DTRAIN_CLUSTER_TIMEOUT:-600}
  while [[ $# -gt 0 ]]; do
    case $1 in
    -np | -n | --np)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive number"
      np=$2
      shift 2
      ;;
    --timeout)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--timeout needs seconds"
      limit=$2
      shift 2
      ;;
    --)
      shift
      break
      ;;
    -*) die "unknown run option '$1' (accepted: -np P, --timeout S, --)" ;;
    *) break ;;
    esac
  done
  [[ $# -ge 1 ]] || die "run needs a command: $0 run -np P CMD [ARGS...]"
  # Extra mpirun options (split on spaces) may come from
  # DTRAIN_CLUSTER_MPIRUN_ARGS.
  local extra=()
  read -r -a extra <<<"${DTRAIN_CLUSTER_MPIRUN_ARGS:-}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Daemons stay attached to the rsh agent (--leave-session-attached): a
  # daemon that fails to start then fails the launch at once, where a
  # daemonized one left mpirun waiting forever for its call-back (seen in
  # about 1 of 10 back-to-back trainer runs, before each host had its own
  # TMPDIR). Such a launch ran nothing, so it is retried; mpirun's stderr
  # is kept to tell it from other failures.
  local rc attempt err=$STATE_DIR/mpirun-stderr
  for attempt in 1 2 3; do
    # stdout passes through fd 3; stderr goes through tee into $err.
    set +e
    timeout --kill-after=10 "$limit" mpirun -np "$np" --oversubscribe \
      --bind-to none \
      --leave-session-attached \
      --hostfile "$STATE_DIR/hostfile" \
      --mca plm_rsh_agent "$STATE_DIR/rsh-agent" \
      --mca plm_rsh_no_tree_spawn 1 \
      --mca mpi_yield_when_idle 1 \
      --mca oob_tcp_if_include "$SUBNET" \
      --mca btl_tcp_if_include "$SUBNET" \
      --mca btl tcp,self \
      "${extra[@]}" "$@" </dev/null 2>&1 1>&3 3>&- | tee "$err" >&2
    rc=${PIPESTATUS[0]}
    set -e
    [[ $rc -ne 0 ]] && grep -q "unable to reliably start one or more daemons" "$err" || break
    echo "emulated-cluster: a daemon failed to start (launch $attempt of 3); launching again" >&2
  done 3>&1
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "emulated-cluster: mpirun did not finish within $limit s (DTRAIN_CLUSTER_TIMEOUT or --timeout)" >&2
  fi
  return "$rc"
}

cmd_status() {
  need_root status
  need_tools ip tc
  local ns
  if [[ -f $STATE_DIR/config ]]; then
    # shellcheck disable=SC1091
    source "$STATE_DIR/config"
    # shellcheck disable=SC2153 # N and RATE come from the config
    echo "emulated cluster: $N hosts, links shaped to $RATE; state in $STATE_DIR"
  elif [[ -n $(our_namespaces) || -n $(our_links) ]]; then
    echo "emulated cluster: PARTIAL (no state in $STATE_DIR); run '$0 down'"
  else
    echo "emulated cluster: down"
    return 0
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    echo "bridge $BRIDGE: $(ip -o -4 addr show dev "$BRIDGE" | awk '{print $4}')"
  fi
  for ns in $(our_namespaces); do
    local i=${ns#"${PREFIX}"-ns}
    echo "$ns: $(ip -n "$ns" -o -4 addr show dev "${PREFIX}-p$i" 2>/dev/null | awk '{print $4}')"
    # The namespace's end shapes what it sends, the bridge's end what it
    # receives.
    echo "  send:    $(ip netns exec "$ns" tc -s qdisc show dev "${PREFIX}-p$i" 2>/dev/null | head -2 | tr -s ' \n' ' ')"
    echo "  receive: $(tc -s qdisc show dev "${PREFIX}-v$i" 2>/dev/null | head -2 | tr -s ' \n' ' ')"
  done
  [[ -f $STATE_DIR/hostfile ]] && { echo "hostfile $STATE_DIR/hostfile:"; sed 's/^/  /' "$STATE_DIR/hostfile"; }
  return 0
}

case ${1:-} in
up)
  shift
  [[ $# -le 2 ]] || die "usage: $0 up [N] [RATE]"
  cmd_up "$@"
  ;;
down)
  cmd_down
  ;;
run)
  shift
  cmd_run "$@"
  ;;
status)
  cmd_status
  ;;
-h | --help | help)
  usage
  ;;
"")
  usage >&2
  exit 2
  ;;
*)
  die "unknown command '$1' (accepted: up, down, run, status, --help)"
  ;;
esac
