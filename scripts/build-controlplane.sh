#!/usr/bin/env bash
# Build the test control plane (e2e/controlplane) into
#   .cache/controlplane/<content hash>/flock-controlplane   and link it as   .cache/bin/flock-controlplane
# The hash covers go.mod, go.sum, *.go (not tests), this script, scripts/go-lib.sh and the Go version,
# so an unchanged tree reuses the binary ("cached"). First build on 2 cores: several minutes (all of Kubernetes).
# Modules come from the Go module proxy, verified against the committed go.sum (-mod=readonly).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
self="$root/scripts/build-controlplane.sh"
src="$root/e2e/controlplane"
say() { echo "build-controlplane: $*" >&2; }

# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-controlplane

cd "$src"
sources=(go.mod go.sum)
for f in ./*.go; do [[ "$f" == *_test.go ]] || sources+=("$f"); done
hash="$(go_build_hash "$self" "${sources[@]}")"
use_cached_build controlplane "$hash" flock-controlplane

say "downloading modules"
go mod download
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.36.3
ldflags="$(k8s_ldflags .)"

say "building flock-controlplane ($k8s, $gover) — the first build takes a while"
start=$SECONDS
CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp/flock-controlplane" .
finish_build
say "built $out/flock-controlplane in $((SECONDS - start))s"
