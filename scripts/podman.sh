#!/usr/bin/env bash
# Starts a real container engine for the local-container runner and its tests: Debian's podman
# serving the Docker Engine API on a unix socket, plus the locally built test image
# `localhost/svc-test:1` (a static busybox; no registry is reachable from these machines).
# Idempotent and fast when everything is already up. Run as root. Prints the socket path.
#
#   SVC_PODMAN_SOCK   socket path (default /run/svc-podman.sock)
#   SVC_TEST_IMAGE    test image name (default localhost/svc-test:1)
set -euo pipefail

SOCK="${SVC_PODMAN_SOCK:-/run/svc-podman.sock}"
IMAGE="${SVC_TEST_IMAGE:-localhost/svc-test:1}"
# The network the engine tests run their engines on (test/helpers/podman.ts TEST_NETWORK).
NETWORK=svc-test
KEEPER=svc-network-keeper
LOG=/tmp/svc-podman.log

log() { echo "podman.sh: $*" >&2; }

ping_ok() {
  [ -S "$SOCK" ] && [ "$(curl -s --max-time 2 --unix-socket "$SOCK" http://d/_ping 2>/dev/null || true)" = "OK" ]
}

# A service started from a directory deleted since (an earlier CI clone) answers pings but fails
# every container start ("write child: broken pipe"): stop it so it is started again from /.
service_pids() { pgrep -f "podman system service .*unix://$SOCK\$" || true; }
service_cwd_deleted() {
  local pid
  for pid in $(service_pids); do
    case "$(readlink "/proc/$pid/cwd" 2>/dev/null || true)" in *" (deleted)") return 0 ;; esac
  done
  return 1
}
stop_if_cwd_deleted() {
  if service_cwd_deleted; then
    log "restarting the service: its working directory was deleted"
    kill $(service_pids) || true
    sleep 1
  fi
}

ensure_engine() {
  stop_if_cwd_deleted
  if ping_ok; then return 0; fi
  if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || [ ! -x /bin/busybox ]; then
    log "installing podman, runc and busybox-static"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq podman runc busybox-static >&2
  fi
  mkdir -p /etc/containers
  local conf='[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
  # shellcheck disable=SC2059
  if [ "$(printf "$conf")" != "$(cat /etc/containers/containers.conf 2>/dev/null || true)" ]; then
    # shellcheck disable=SC2059
    printf "$conf" > /etc/containers/containers.conf
  fi
  # A stale socket file from a dead service would make the new one fail to bind.
  rm -f "$SOCK"
  log "starting podman system service on $SOCK (log: $LOG)"
  # From /: the service and every conmon it forks keep this working directory, and a checkout
  # deleted later (a CI clone) would make each container start fail with "broken pipe".
  (cd / && exec nohup podman system service --time=0 "unix://$SOCK" >>"$LOG" 2>&1 </dev/null 9>&-) &
  disown || true
  for _ in $(seq 1 150); do
    if ping_ok; then return 0; fi
    sleep 0.2
  done
  log "the podman service did not answer on $SOCK within 30 s; last lines of $LOG:"
  tail -n 20 "$LOG" >&2 || true
  exit 1
}

ensure_image() {
  if podman image exists "$IMAGE" 2>/dev/null; then return 0; fi
  log "building $IMAGE from /bin/busybox"
  local dir
  dir="$(mktemp -d)"
  mkdir -p "$dir/rootfs/bin" "$dir/rootfs/tmp" "$dir/rootfs/work" "$dir/rootfs/etc"
  chmod 1777 "$dir/rootfs/tmp"
  cp /bin/busybox "$dir/rootfs/bin/busybox"
  for applet in sh echo cat sleep ls mkdir printf env true false wc seq tr kill head tail grep \
    sed rm cp mv find tar gzip base64 dirname basename id date test '[' dd stat touch uname; do
    ln -s busybox "$dir/rootfs/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$dir/rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$dir/rootfs/etc/group"
  tar -C "$dir/rootfs" -cf "$dir/rootfs.tar" .
  podman import --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' "$dir/rootfs.tar" "$IMAGE" >&2
  rm -rf "$dir"
}

# Keeps the bridges of the default network and of $NETWORK up for good: netavark creates a bridge
# (podman0 10.88.0.1, ...) when a network's first container starts and deletes it when its last
# one ends, and Chromium takes each host address change for a network change and fails every
# request still waiting for a connection (net::ERR_NETWORK_CHANGED, "Failed to fetch"), so a
# container started by one test file broke the browser tests running beside it. With a container
# on both networks all the time, another container only adds a veth, which Chromium ignores
# (test/podman-network.test.ts).
keeper_ok() { [ "$(podman inspect -f '{{.State.Running}}' "$KEEPER" 2>/dev/null || true)" = true ]; }
ensure_keeper() {
  if keeper_ok; then return 0; fi
  podman network exists "$NETWORK" || podman network create "$NETWORK" >/dev/null
  podman rm -f -t 0 "$KEEPER" >/dev/null 2>&1 || true
  log "starting $KEEPER (keeps the podman and $NETWORK bridges up)"
  podman run -d --name "$KEEPER" --network podman --network "$NETWORK" "$IMAGE" sleep 2147483647 >/dev/null
  # A new bridge's IPv6 link-local address turns from tentative to valid a moment later (duplicate
  # address detection): one more address change, which the caller's browser must not see either.
  command -v ip >/dev/null || return 0
  local bridges
  bridges=$(podman network inspect -f '{{.NetworkInterface}}' podman "$NETWORK")
  for _ in $(seq 1 50); do
    if [ -z "$(for b in $bridges; do ip -o addr show dev "$b" tentative; done)" ]; then return 0; fi
    sleep 0.2
  done
}

if ping_ok && ! service_cwd_deleted && podman image exists "$IMAGE" 2>/dev/null && keeper_ok; then echo "$SOCK"; exit 0; fi

if [ "$(id -u)" != 0 ]; then
  log "must run as root to install and start podman (the socket $SOCK does not answer)"
  exit 1
fi
# two callers at once (parallel test files, setup) must not start two services
exec 9>/tmp/svc-podman.lock
flock 9
ensure_engine
ensure_image
ensure_keeper
echo "$SOCK"
