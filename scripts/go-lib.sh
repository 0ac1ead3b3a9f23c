# shellcheck shell=bash disable=SC2154 # $root is the sourcing script's
# Shared by the Go build scripts (sourced): the Go version check, the version stamp every
# Kubernetes binary needs, and the content-hashed build cache.

# require_go NAME: exit with what to install unless Go >= 1.26 is on PATH; sets $gover.
require_go() {
  if ! command -v go >/dev/null 2>&1; then
    echo "$1: 'go' not found on PATH: install Go >= 1.26 (Debian: golang from backports, or go.dev)" >&2
    exit 1
  fi
  gover="$(go env GOVERSION)" # e.g. go1.26.8
  if ! printf '%s\n' go1.26 "$gover" | sort -V -C; then
    echo "$1: found $gover, need Go >= 1.26: install a newer Go" >&2
    exit 1
  fi
}

# k8s_ldflags DIR: -ldflags for a Kubernetes binary built from the module in DIR.
# /version and the components' compatibility checks read these: without them a binary calls
# itself v0.0.0-master, kube-apiserver refuses to emulate 1.36 on a "0.0" binary and a kubelet
# reports v0.0.0 in `kubectl get nodes`.
k8s_ldflags() {
  local k8s major minor flags="-s -w"
  k8s="$(cd "$1" && go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.36.3
  IFS=. read -r major minor _ <<<"${k8s#v}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.gitCommit="
  done
  echo "$flags"
}

# The build cache every Go build script keeps: .cache/KIND/<content hash>/, its programs linked
# into .cache/bin. The caller sets $root and say() before these.

# go_build_hash SCRIPT FILE...: 16 hex digits over the contents of FILE... (with their names as
# given: relative ones, so every clone computes the same hash), of SCRIPT, of this file and of
# the Go version ($gover, from require_go).
go_build_hash() {
  local script="$1"
  shift
  (sha256sum "$@"; sha256sum <"$script"; sha256sum <"$root/scripts/go-lib.sh"; echo "$gover") | sha256sum | cut -c1-16
}

# use_cached_build KIND HASH NAME...: sets $out to .cache/KIND/HASH. A complete build there is
# linked (.cache/bin/NAME for each NAME), said "cached", and the script exits 0; otherwise an
# empty $out.tmp is ready to build into (finish_build puts it in place).
use_cached_build() {
  build_kind="$1" build_hash="$2"
  shift 2
  build_links=("$@")
  out="$root/.cache/$build_kind/$build_hash"
  mkdir -p "$root/.cache/bin"
  if [ -f "$out/.complete" ]; then
    link_build
    say "cached $out"
    exit 0
  fi
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
}

link_build() {
  local b
  for b in "${build_links[@]}"; do ln -sfn "../$build_kind/$build_hash/$b" "$root/.cache/bin/$b"; done
}

# finish_build: $out.tmp, complete, becomes $out and is linked; builds of older trees are dropped
# (the Go build cache keeps rebuilds quick).
finish_build() {
  touch "$out.tmp/.complete"
  rm -rf "$out" && mv "$out.tmp" "$out"
  link_build
  find "$root/.cache/$build_kind" -mindepth 1 -maxdepth 1 -type d ! -name "$build_hash" ! -name "$build_hash.tmp" -exec rm -rf {} +
}
