#!/usr/bin/env bash
# Build sig-network's ClusterNetworkPolicy conformance suite (sigs.k8s.io/network-policy-api
# conformance/, at the version e2e/cnp-conformance/go.mod pins) into
#   .cache/cnp-conformance/<content hash>/{cnp-conformance.test,cnp-conformance-no-sctp.test}
# linked into .cache/bin/:
#   cnp-conformance.test          `go test -c` of the upstream package, unmodified (its
#                                 TestConformanceProfiles and TestConformance)
#   cnp-conformance-no-sctp.test  e2e/cnp-conformance/nosctp: the same upstream tests, suite and
#                                 report for a kernel without SCTP (see nosctp_test.go), with the
#                                 upstream base manifest minus its SCTP servers, written here
# The hash covers e2e/cnp-conformance's go.mod, go.sum and *.go, this script, scripts/go-lib.sh and
# the Go version; an unchanged tree reuses the build. Modules come from the Go module proxy,
# verified against the committed go.sum (-mod=readonly); built at low priority (nice).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/e2e/cnp-conformance"
say() { echo "build-cnp-conformance: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-cnp-conformance

cd "$src"
sources=(go.mod go.sum nosctp/*.go)
hash="$( (sha256sum "${sources[@]}"; sha256sum <"$root/scripts/build-cnp-conformance.sh"; sha256sum <"$root/scripts/go-lib.sh"; echo "$gover") | sha256sum | cut -c1-16)"
out="$root/.cache/cnp-conformance/$hash"
bins=(cnp-conformance.test cnp-conformance-no-sctp.test)
mkdir -p "$root/.cache/bin"
link_all() { for b in "${bins[@]}"; do ln -sfn "../cnp-conformance/$hash/$b" "$root/.cache/bin/$b"; done; }

if [ -f "$out/.complete" ]; then
  link_all
  say "cached $out"
  exit 0
fi
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
start=$SECONDS
go mod download
npapi="$(go list -m -f '{{.Version}}' sigs.k8s.io/network-policy-api)" # e.g. v0.3.0
upstream="$(go list -m -f '{{.Dir}}' sigs.k8s.io/network-policy-api)/conformance"
say "building cnp-conformance.test (sigs.k8s.io/network-policy-api $npapi conformance, $gover)"
CGO_ENABLED=0 nice -n 10 go test -c -mod=readonly -trimpath -ldflags "-s -w" \
  -o "$out.tmp/cnp-conformance.test" sigs.k8s.io/network-policy-api/conformance

# The no-SCTP variant builds from a copy of the module with the upstream base/ beside its test
# file (go:embed reads only its own package's directory).
build="$out.tmp/src"
mkdir -p "$build/nosctp"
cp go.mod go.sum "$build/"
cp nosctp/*.go "$build/nosctp/"
cp -r "$upstream/base" "$build/nosctp/base"
chmod -R u+w "$build/nosctp/base"
# Leave out each container of the base manifest (an item of a `containers:` list, 8 spaces in)
# whose lines name SERVE_SCTP_PORT_ (agnhost porter serving SCTP); everything else stays as is.
awk '
  function flush() { if (buf != "") { if (buf ~ /SERVE_SCTP_PORT_/) dropped++; else printf "%s", buf }; buf = "" }
  /^        - / { flush(); buf = $0 "\n"; item = 1; next }
  item && /^          / { buf = buf $0 "\n"; next }
  { flush(); item = 0; print }
  END { flush(); print dropped > "/dev/stderr" }
' "$build/nosctp/base/manifests.yaml" >"$build/nosctp/base/manifests-without-sctp.yaml" 2>"$out.tmp/dropped"
want="$(grep -c SERVE_SCTP_PORT_ "$build/nosctp/base/manifests.yaml")"
if [ "$(cat "$out.tmp/dropped")" != "$want" ] || grep -q SCTP "$build/nosctp/base/manifests-without-sctp.yaml"; then
  say "left out $(cat "$out.tmp/dropped") SCTP containers of $want, or SCTP is still named: the upstream manifest changed shape"
  exit 1
fi
say "building cnp-conformance-no-sctp.test (the upstream base manifest without its $want SCTP servers)"
(cd "$build" && CGO_ENABLED=0 nice -n 10 go test -c -mod=readonly -trimpath -ldflags "-s -w" \
  -o "$out.tmp/cnp-conformance-no-sctp.test" ./nosctp)
echo "$npapi" >"$out.tmp/network-policy-api.version"
rm -rf "$build" "$out.tmp/dropped"
touch "$out.tmp/.complete"
rm -rf "$out" && mv "$out.tmp" "$out"
link_all
# Drop builds of older trees; the Go build cache keeps rebuilds quick.
find "$root/.cache/cnp-conformance" -mindepth 1 -maxdepth 1 -type d ! -name "$hash" ! -name "$hash.tmp" -exec rm -rf {} +
say "built ${bins[*]} in $((SECONDS - start))s"
