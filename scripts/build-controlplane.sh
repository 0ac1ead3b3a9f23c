#!/usr/bin/env bash
# Build the test control plane (e2e/controlplane) into
#   .cache/controlplane/<content hash>/flock-controlplane   and link it as   .cache/bin/flock-controlplane
# The hash covers go.mod, go.sum, *.go (not tests), this script and the Go version, so an unchanged tree
# reuses the binary ("cached"). First build on 2 cores: several minutes (all of Kubernetes).
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
# Contents and repo-relative names only, so every clone computes the same hash.
hash="$( (sha256sum "${sources[@]}"; sha256sum <"$self"; sha256sum <"$root/scripts/go-lib.sh"; echo "$gover") | sha256sum | cut -c1-16)"
out="$root/.cache/controlplane/$hash"
bin="$out/flock-controlplane"
link="$root/.cache/bin/flock-controlplane"
mkdir -p "$root/.cache/bin"

if [ -x "$bin" ]; then
  ln -sfn "../controlplane/$hash/flock-controlplane" "$link"
  say "cached $bin"
  exit 0
fi

say "downloading modules"
go mod download
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.36.3
ldflags="$(k8s_ldflags .)"

say "building flock-controlplane ($k8s, $gover) — the first build takes a while"
start=$SECONDS
mkdir -p "$out"
CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$bin.tmp" .
mv "$bin.tmp" "$bin"
ln -sfn "../controlplane/$hash/flock-controlplane" "$link"
# Drop binaries of older trees (~70 MB each); the Go build cache keeps rebuilds quick.
find "$root/.cache/controlplane" -mindepth 1 -maxdepth 1 -type d ! -name "$hash" -exec rm -rf {} +
say "built $bin in $((SECONDS - start))s"
