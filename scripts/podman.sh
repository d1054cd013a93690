#!/usr/bin/env bash
# Starts a real container engine for the local-container runner and its tests: Debian's podman
# serving the Docker Engine API on a unix socket, plus the locally built test image
# `localhost/svc-test:1` (a static busybox; no registry is reachable from these machines).
# Idempotent and fast when everything is already up. Run as root. Prints the socket path.
#
# The service runs in a network namespace of its own, where netavark puts the containers' bridges
# and veths: each container added and deleted host addresses (a bridge's, a veth's link-local),
# Chromium takes every address change for a network change and fails each request still waiting
# for a connection (net::ERR_NETWORK_CHANGED, "Failed to fetch"), so a container started by one
# test file failed the browser tests beside it (test/podman-network.test.ts). The Docker API
# socket is a file and reaches the service from any namespace; no test reaches a container by IP.
#
#   SVC_PODMAN_SOCK   socket path (default /run/svc-podman.sock)
#   SVC_TEST_IMAGE    test image name (default localhost/svc-test:1)
#   SVC_PODMAN_NETNS  the service's network namespace, under /run/netns (default svc-podman; empty:
#                     the machine's, for engines that svc on this machine reaches by address)
set -euo pipefail

SOCK="${SVC_PODMAN_SOCK:-/run/svc-podman.sock}"
IMAGE="${SVC_TEST_IMAGE:-localhost/svc-test:1}"
NETNS_NAME="${SVC_PODMAN_NETNS-svc-podman}"
NETNS="${NETNS_NAME:+/run/netns/$NETNS_NAME}"
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
# A service started before it had a namespace of its own (an older checkout's) is started again in it.
netns_id() { stat -L -c %i "$1" 2>/dev/null || true; }
service_outside_netns() {
  local pid want=''
  [ -n "$NETNS" ] || return 1
  if nsenter --net="$NETNS" true 2>/dev/null; then want=$(netns_id "$NETNS"); fi
  for pid in $(service_pids); do
    if [ -z "$want" ] || [ "$(netns_id "/proc/$pid/ns/net")" != "$want" ]; then return 0; fi
  done
  return 1
}
stop_if_misplaced() {
  local why=''
  if service_cwd_deleted; then why='its working directory was deleted'; fi
  if service_outside_netns; then why="it runs outside the network namespace $NETNS"; fi
  if [ -n "$why" ]; then
    log "restarting the service: $why"
    kill $(service_pids) || true
    sleep 1
  fi
}
# A persistent namespace with only its loopback (a bind mount of it at $NETNS).
ensure_netns() {
  [ -n "$NETNS" ] || return 0
  if nsenter --net="$NETNS" true 2>/dev/null; then return 0; fi
  if command -v ip >/dev/null; then
    ip netns add "$NETNS_NAME"
  else
    mkdir -p "$(dirname "$NETNS")"
    touch "$NETNS"
    unshare --net="$NETNS" true
  fi
  nsenter --net="$NETNS" ip link set lo up 2>/dev/null || true
}

ensure_engine() {
  stop_if_misplaced
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
  ensure_netns
  (cd / && exec nohup ${NETNS:+nsenter --net="$NETNS"} podman system service --time=0 "unix://$SOCK" >>"$LOG" 2>&1 </dev/null 9>&-) &
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

if ping_ok && ! service_cwd_deleted && ! service_outside_netns && podman image exists "$IMAGE" 2>/dev/null; then echo "$SOCK"; exit 0; fi

if [ "$(id -u)" != 0 ]; then
  log "must run as root to install and start podman (the socket $SOCK does not answer)"
  exit 1
fi
# two callers at once (parallel test files, setup) must not start two services
exec 9>/tmp/svc-podman.lock
flock 9
ensure_engine
ensure_image
echo "$SOCK"
