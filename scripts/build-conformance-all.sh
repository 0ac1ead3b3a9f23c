#!/usr/bin/env bash
# Build all of Kubernetes' e2e specs (e2e/conformance/all: every package test/e2e/e2e_test.go
# imports, of k8s.io/kubernetes at the control plane's version, unmodified), for the certification
# run (`npm run test:conformance -- --suite conformance`, then `--suite conformance-serial`), into
#   .cache/conformance-all/<content hash>/e2e-all.test   linked into   .cache/bin/
# Not part of ./dev setup: the first build compiles every SIG's specs and their dependencies
# (storage drivers, cloud providers); with the Go build cache warm from scripts/build-conformance.sh
# it took 2 min on 2 cores (2026-12-05). The hash covers go.mod, go.sum, suite/*.go, all/*.go,
# this script, scripts/go-lib.sh and the Go version ("cached" when unchanged).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/e2e/conformance"
registry_version=v3.1.2 # github.com/distribution/distribution/v3: the lab registry (registry.ts)
say() { echo "build-conformance-all: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-conformance-all

cd "$src"
hash="$(go_build_hash "$root/scripts/build-conformance-all.sh" go.mod go.sum suite/*.go all/*.go)"
use_cached_build conformance-all "$hash" e2e-all.test e2e-image-inputs e2e-registry
start=$SECONDS
go mod download
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ldflags="$(k8s_ldflags .)"
say "building e2e-all.test (k8s.io/kubernetes $k8s test/e2e, every SIG, $gover)"
CGO_ENABLED=0 nice -n 10 go test -c -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp/e2e-all.test" ./all
# What the images of the [Conformance] specs take from k8s.io/kubernetes/test/images at the same
# version (e2e/lab/conformance/spec-images.ts assembles them): nonewprivs' program (setuid in
# its image) and the files kitten and nautilus serve; and the aggregator spec's two programs,
# tools of the module: the sample API server (k8s.io/sample-apiserver at the control plane's
# version) and etcd (go.etcd.io/etcd/server/v3's main, the version k8s.io/kubernetes pins).
mkdir -p "$out.tmp/e2e-image-inputs"
for program in nnp=k8s.io/kubernetes/test/images/nonewprivs sample-apiserver=k8s.io/sample-apiserver etcd=go.etcd.io/etcd/server/v3; do
  say "building ${program%%=*} (${program#*=})"
  CGO_ENABLED=0 nice -n 10 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out.tmp/e2e-image-inputs/${program%%=*}" "${program#*=}"
done
images="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images"
for image in kitten nautilus; do
  mkdir -p "$out.tmp/e2e-image-inputs/$image"
  cp "$images/$image/html/"* "$out.tmp/e2e-image-inputs/$image/"
  cp "$images/$image/VERSION" "$out.tmp/e2e-image-inputs/$image/.version"
done
# The lab's registry for the specs that must pull (e2e/lab/conformance/registry.ts): distribution's
# registry, outside this module (`go install` of its own go.mod, checked by the checksum database).
say "building e2e-registry (github.com/distribution/distribution/v3 $registry_version)"
(cd / && GOBIN="$out.tmp/registry-bin" CGO_ENABLED=0 nice -n 10 go install -trimpath -ldflags "-s -w" \
  "github.com/distribution/distribution/v3/cmd/registry@$registry_version")
mv "$out.tmp/registry-bin/registry" "$out.tmp/e2e-registry" && rmdir "$out.tmp/registry-bin"
finish_build
say "built e2e-all.test in $((SECONDS - start))s"
