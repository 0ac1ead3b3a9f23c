#!/usr/bin/env bash
# Build Kubernetes' own sig-network e2e specs (e2e/conformance: test/e2e/network,
# test/e2e/network/netpol and test/e2e/apimachinery, for its admission-webhook specs, of
# k8s.io/kubernetes at the control plane's version, unmodified) and the
# ginkgo CLI that runs them on parallel processes, into
#   .cache/conformance/<content hash>/{e2e-network.test,ginkgo}   linked into   .cache/bin/
# The hash covers e2e/conformance's go.mod, go.sum, *.go and suite/*.go, this script, scripts/go-lib.sh and the
# Go version, so an unchanged tree reuses the build ("cached"). Modules come from the Go module
# proxy, verified against the committed go.sum (-mod=readonly). Built at low priority (nice): the
# e2e framework is a large compile on a 2-core machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/e2e/conformance"
say() { echo "build-conformance: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-conformance

cd "$src"
sources=(go.mod go.sum ./*.go suite/*.go)
hash="$(go_build_hash "$root/scripts/build-conformance.sh" "${sources[@]}")"
bins=(e2e-network.test ginkgo)
use_cached_build conformance "$hash" "${bins[@]}"
start=$SECONDS
go mod download
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.36.3
# The e2e framework reads its own version (e2e test version in the log) from the same stamp.
ldflags="$(k8s_ldflags .)"
say "building e2e-network.test (k8s.io/kubernetes $k8s test/e2e/network + netpol + apimachinery, $gover)"
CGO_ENABLED=0 nice -n 10 go test -c -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp/e2e-network.test" .
say "building ginkgo $(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)"
CGO_ENABLED=0 nice -n 10 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out.tmp/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
finish_build
say "built ${bins[*]} in $((SECONDS - start))s"
