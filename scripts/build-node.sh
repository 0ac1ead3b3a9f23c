#!/usr/bin/env bash
# Build what a lab node runs, from the Go module proxy, into
#   .cache/node/<content hash>/   and link each binary into   .cache/bin/
#   kubelet, kube-proxy, agnhost   k8s.io/kubernetes at the control plane's version (e2e/controlplane/go.mod,
#                                  its `tool` lines), version-stamped like the control plane
#   pause                          build/pause/linux/pause.c of that k8s.io/kubernetes module, gcc -static
#   containerd, containerd-shim-runc-v2, ctr
#                                  github.com/containerd/containerd/v2 (e2e/containerd/go.mod)
#   crictl                         sigs.k8s.io/cri-tools (go install at $crictl_version: the CRI's
#                                  own client, for tests and for a person looking into a node)
# runc is Debian's (scripts/setup.sh installs it). The hash covers both go.mod/go.sum, this script,
# scripts/go-lib.sh and the Go version, so an unchanged tree reuses the build ("cached"). Cold on
# 2 cores: about 8 minutes (kubelet and containerd dominate); the Go build cache makes rebuilds quick.
set -euo pipefail
crictl_version=v1.37.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-node: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-node
command -v gcc >/dev/null 2>&1 || { say "gcc not found: apt-get install gcc libc6-dev (builds the pause binary)"; exit 1; }

k8sdir="$root/e2e/controlplane"
ctrdir="$root/e2e/containerd"
hash="$(cd "$root" && go_build_hash scripts/build-node.sh e2e/controlplane/go.mod e2e/controlplane/go.sum e2e/containerd/go.mod e2e/containerd/go.sum)"
bins=(kubelet kube-proxy agnhost pause containerd containerd-shim-runc-v2 ctr crictl)
use_cached_build node "$hash" "${bins[@]}" pause.version agnhost.version
start=$SECONDS

(cd "$k8sdir" && go mod download)
k8s="$(cd "$k8sdir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ldflags="$(k8s_ldflags "$k8sdir")"
for tool in cmd/kubelet cmd/kube-proxy test/images/agnhost; do
  say "building ${tool##*/} ($k8s)"
  (cd "$k8sdir" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp/${tool##*/}" "k8s.io/kubernetes/$tool")
done

src="$(cd "$k8sdir" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
tag="$(sed -n 's/^TAG ?= //p' "$src/build/pause/Makefile")" # e.g. 3.10.2
say "building pause $tag"
gcc -Os -Wall -Werror -static -DVERSION="v$tag-flock" -o "$out.tmp/pause" "$src/build/pause/linux/pause.c"
echo "$tag" >"$out.tmp/pause.version"
cp "$src/test/images/agnhost/VERSION" "$out.tmp/agnhost.version" # the image tag e2e suites expect
# What upstream's agnhost image has beside the program: porter's TLS pair in / (the StatefulSet
# specs' readiness probe fetches /localhost.crt; they move it away to fail it).
mkdir -p "$out.tmp/agnhost-files"
cp "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" "$out.tmp/agnhost-files/"

(cd "$ctrdir" && go mod download)
ctr_version="$(cd "$ctrdir" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)" # e.g. v2.4.2
ctr_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=${ctr_version#v} -X github.com/containerd/containerd/v2/version.Revision=flock-build"
for tool in containerd containerd-shim-runc-v2 ctr; do
  say "building $tool $ctr_version"
  (cd "$ctrdir" && CGO_ENABLED=0 go build -mod=readonly -trimpath -tags no_btrfs,no_devmapper,no_zfs \
    -ldflags "$ctr_ldflags" -o "$out.tmp/$tool" "github.com/containerd/containerd/v2/cmd/$tool")
done

say "building crictl $crictl_version"
# Outside any module, so that no go.mod around us plays a part.
(cd / && GOBIN="$out.tmp" CGO_ENABLED=0 go install -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" \
  "sigs.k8s.io/cri-tools/cmd/crictl@$crictl_version")

finish_build
say "built ${bins[*]} in $((SECONDS - start))s"
