#!/usr/bin/env bash
# Build cnitool (the CNI project's test driver for plugins) into
#   .cache/cnitool/<version>-<go version>/cnitool   and link it as   .cache/bin/cnitool
# An existing build of the same version is reused ("cached"). `go install module@version`
# fetches it from the Go module proxy, checked against the Go checksum database.
set -euo pipefail
version=v1.3.1 # github.com/containernetworking/cni: cnitool with ADD/CHECK/DEL/GC/STATUS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-cnitool: $*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  say "'go' not found on PATH: install Go >= 1.26"
  exit 1
fi
gover="$(go env GOVERSION)"
out="$root/.cache/cnitool/$version-$gover"
link="$root/.cache/bin/cnitool"
mkdir -p "$root/.cache/bin"

if [ ! -x "$out/cnitool" ]; then
  say "building cnitool $version"
  rm -rf "$out.tmp"
  # Run outside any module so go.mod files around us play no part.
  (cd / && GOBIN="$out.tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
    "github.com/containernetworking/cni/cnitool@$version")
  rm -rf "$out"
  mv "$out.tmp" "$out"
else
  say "cached $out/cnitool"
fi
ln -sfn "../cnitool/$version-$gover/cnitool" "$link"
