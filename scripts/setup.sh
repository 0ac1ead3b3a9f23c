#!/usr/bin/env bash
# Install everything flock's build and tests need, idempotently:
#   Debian packages (BIRD 2, nftables, iproute2, ...), Node.js 24 (scripts/env.sh),
#   npm packages (npm ci), kubectl + helm, and the Go builds (cached by content hash): the test
#   control plane, a lab node's kubelet, kube-proxy, containerd, pause and agnhost, cnitool, the
#   reference CNI plugins chained after flock (bandwidth, tuning, sbr, portmap),
#   Kubernetes' sig-network e2e specs and ginkgo (docs/conformance.md), upstream BusyBox for the
#   e2e specs' busybox image, FRR's vtysh unpacked (scripts/fetch-frr.sh);
#   and flock's agent and operator images (buildah, cached by input hash).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

step() { printf '\n\033[1m[setup] %s\033[0m\n' "$*"; }

# --- Debian packages: command -> package ---------------------------------------------------
declare -A APT=(
  [bird]=bird2 [nft]=nftables [ip]=iproute2 [ping]=iputils-ping [socat]=socat
  [tcpdump]=tcpdump [/usr/lib/cni/ptp]=containernetworking-plugins
  [runc]=runc [gcc]=gcc [/usr/lib/x86_64-linux-gnu/libc.a]=libc6-dev [/bin/busybox]=busybox-static
  [conntrack]=conntrack [buildah]=buildah [mmdebstrap]=mmdebstrap [modprobe]=kmod [curl]=curl [nc.openbsd]=netcat-openbsd [wget]=wget [dash]=dash [promtool]=prometheus [python3]=python3-minimal [dig]=bind9-dnsutils
  [make]=make [bzip2]=bzip2 [tayga]=tayga [iperf3]=iperf3
)
missing=()
for cmd in "${!APT[@]}"; do
  if [[ "$cmd" == /* ]]; then [ -e "$cmd" ] || missing+=("${APT[$cmd]}")
  else command -v "$cmd" >/dev/null 2>&1 || missing+=("${APT[$cmd]}"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  step "installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "setup: need root to apt-get install ${missing[*]} (or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Keep the packages' services (bird) from starting in the host namespace.
  policy=/usr/sbin/policy-rc.d
  had_policy=0; [ -e "$policy" ] && had_policy=1
  [ $had_policy = 1 ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; }
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ $had_policy = 1 ] || rm -f "$policy"
fi

# --- npm packages ----------------------------------------------------------------------------
stamp=node_modules/.flock-lock-hash
want="$(sha256sum package-lock.json | cut -d' ' -f1)-$(node -v)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  step "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi

# --- kubectl and helm ------------------------------------------------------------------------
node scripts/install-k8s-tools.mjs

# --- Go builds: control plane, node binaries, CoreDNS, cnitool, chained CNI plugins, e2e specs, CNP conformance (hashed)
command -v go >/dev/null 2>&1 || { echo "setup: Go >= 1.26 is needed to build the test control plane (install golang)" >&2; exit 1; }
for script in scripts/build-controlplane.sh scripts/build-node.sh scripts/build-coredns.sh scripts/build-cnitool.sh scripts/build-cni-plugins.sh scripts/build-conformance.sh scripts/build-cnp-conformance.sh; do
  [ -x "$script" ] && "$script"
done

# --- upstream BusyBox for the e2e specs' busybox image (Debian's drops odd env names) ---------
scripts/build-busybox.sh

# --- FRR's vtysh, unpacked (not installed: no daemon starts), to check the FRR router sample ---
scripts/fetch-frr.sh

# --- flock's images from images/*/Dockerfile (buildah, offline base; cached by input hash) -----
# `./dev lab` installs them with helm onto the lab's nodes; the image tests run what is inside.
if [ "$(id -u)" = 0 ]; then
  scripts/build-images.sh
else
  echo "setup: not root: skipped scripts/build-images.sh (the lab and the image tests need it: sudo ./dev setup)" >&2
fi
step "toolchain ready: node $(node -v), $(kubectl version --client 2>/dev/null | head -1), helm $(helm version --short)"
