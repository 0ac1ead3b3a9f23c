# shellcheck shell=bash
# Shared by the Go build scripts (sourced): the Go version check and the version stamp every
# Kubernetes binary needs.

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
