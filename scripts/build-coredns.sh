#!/usr/bin/env bash
# Build CoreDNS, the lab's cluster DNS, from the Go module proxy into
#   .cache/coredns/<content hash>/{coredns,coredns.version}   and link both into   .cache/bin/
# The version is the one kubeadm deploys with the control plane's Kubernetes (v1.36.3:
# cmd/kubeadm/app/constants CoreDNSVersion = v1.14.2; build/dependencies.yaml pairs the same).
# CoreDNS's go.mod has no replace directives, so `go install module@version` builds it as its own
# go.mod/go.sum pin it, verified against the Go checksum database; every plugin upstream's image
# carries (core/plugin/zplugin.go), CGO_ENABLED=0: a static binary for the lab's image
# (e2e/lab/node/images.ts). The hash covers this script (the version is in it), scripts/go-lib.sh
# and the Go version, so an unchanged tree reuses the build ("cached").
# Cold (empty Go module and build caches: 1.5 GB of modules downloaded, ~1 GB of build cache) on
# 2 cores, load average ~4: 208 s on 2026-12-05, a 74 MB static binary; with both caches warm, 5 s.
set -euo pipefail
version=v1.14.2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-coredns: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-coredns

# This script is the only input besides go-lib.sh and Go (go_build_hash wants a file list).
hash="$(cd "$root" && go_build_hash scripts/build-coredns.sh scripts/build-coredns.sh)"
bins=(coredns coredns.version)
use_cached_build coredns "$hash" "${bins[@]}"
start=$SECONDS

say "building coredns $version ($gover)"
# Outside any module, so that no go.mod around us plays a part. GitCommit is what
# `coredns -version` prints after the Go version (upstream's Makefile stamps the commit there).
(cd / && GOBIN="$out.tmp" CGO_ENABLED=0 nice -n 10 go install -trimpath \
  -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$version-flock" \
  "github.com/coredns/coredns@$version")
echo "${version#v}" >"$out.tmp/coredns.version" # the image tag: registry.k8s.io/coredns/coredns:v1.14.2

finish_build
say "built coredns $version in $((SECONDS - start))s"
