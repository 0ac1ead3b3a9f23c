#!/usr/bin/env bash
# Build the CNI project's reference meta-plugins that run chained after flock, from the Go module
# proxy, into
#   .cache/cni-plugins/<content hash>/cni-plugins/{bandwidth,tuning,sbr,portmap}
# and link that directory (and cni-plugins.version) into .cache/bin/. Tests put the directory in
# CNI_PATH next to flock's plugin; the lab copies it into each node's /opt/cni/bin.
# Not Debian's containernetworking-plugins (1.1.1): its plugins fail STATUS ("unknown
# CNI_COMMAND"), and containerd 2 calls STATUS on every plugin of the conflist every 5 s: a node
# with one of them chained after flock stays NotReady. v1.9.1 answers STATUS (libcni's skel).
# `go install module@version` builds each as the module's go.mod/go.sum pin it, verified against
# the Go checksum database; the version stamp is upstream's (pkg/utils/buildversion). The hash
# covers this script (the version is in it), scripts/go-lib.sh and the Go version, so an unchanged
# tree reuses the build ("cached").
set -euo pipefail
version=v1.9.1 # github.com/containernetworking/plugins
plugins=(meta/bandwidth meta/tuning meta/sbr meta/portmap)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-cni-plugins: $*" >&2; }
# shellcheck source=scripts/go-lib.sh
source "$root/scripts/go-lib.sh"
require_go build-cni-plugins

hash="$(cd "$root" && go_build_hash scripts/build-cni-plugins.sh scripts/build-cni-plugins.sh)"
use_cached_build cni-plugins "$hash" cni-plugins cni-plugins.version
start=$SECONDS

module=github.com/containernetworking/plugins
packages=()
for p in "${plugins[@]}"; do packages+=("$module/plugins/$p@$version"); done
say "building ${plugins[*]##*/} $version ($gover)"
# Outside any module, so that no go.mod around us plays a part.
(cd / && GOBIN="$out.tmp/cni-plugins" CGO_ENABLED=0 nice -n 10 go install -trimpath \
  -ldflags "-s -w -X $module/pkg/utils/buildversion.BuildVersion=$version" \
  "${packages[@]}")
for p in "${plugins[@]##*/}"; do
  # Each one must answer STATUS (see above): a plugin that does not would make the node NotReady.
  echo '{"cniVersion":"1.1.0","name":"probe","type":"'"$p"'"}' |
    CNI_COMMAND=STATUS CNI_PATH="$out.tmp/cni-plugins" "$out.tmp/cni-plugins/$p" >/dev/null ||
    { say "$p $version does not answer STATUS"; exit 1; }
done
echo "${version#v}" >"$out.tmp/cni-plugins.version"

finish_build
say "built ${plugins[*]##*/} $version in $((SECONDS - start))s"
