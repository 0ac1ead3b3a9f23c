#!/usr/bin/env bash
# Build flock's container images with buildah, offline (no container registry), from the
# Dockerfiles as they are written:
#   scripts/build-images.sh [agent] [operator]      (default: both)
# 1. The Dockerfiles' base, node:<Node.js of scripts/env.sh>-bookworm-slim, is assembled from
#    Debian's packages and the npm registry (scripts/image-base.sh) into buildah's storage as
#    docker.io/library/node:…, and kept as .cache/images/node-base-<hash>.tar (OCI archive).
# 2. `buildah bud --pull=never --network host -f images/<x>/Dockerfile .` builds each image
#    (host network: apt-get and npm ci inside the build reach the package registries).
# 3. Each is exported as an OCI archive that `ctr -n k8s.io images import` takes:
#      .cache/images/flock-agent.tar      localhost/flock-agent:dev
#      .cache/images/flock-operator.tar   localhost/flock-operator:dev
#    cached by a hash of the inputs (the Dockerfile, what its COPY lines bring in, as the files
#    are in the work tree, the base and these scripts): an unchanged tree does not rebuild.
# buildah's storage is .cache/images/storage (overlay; FLOCK_IMAGES_STORAGE_DRIVER=vfs if
# overlay does not work on your file system), so the machine's own container storage is not
# touched. Isolation: BUILDAH_ISOLATION (default chroot; see docs/install.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "build-images: $*" >&2; }
# util-linux's flock(1), looked up before env.sh puts node_modules/.bin (with the CNI plugin's
# launcher, also called flock) on PATH.
lock="$(PATH=/usr/bin:/bin command -v flock || true)"
[ -n "$lock" ] || { say "'flock' not found: apt-get install util-linux"; exit 1; }
# shellcheck source=scripts/env.sh
source scripts/env.sh

for tool in buildah:buildah mmdebstrap:mmdebstrap npm:npm; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || {
    say "'${tool%%:*}' not found: apt-get install ${tool#*:} (or run ./dev setup)"
    exit 1
  }
done
[ "$(id -u)" = 0 ] || { say "needs root (buildah's storage and mmdebstrap's chroot)"; exit 1; }

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(agent operator)
for x in "${images[@]}"; do
  [ -f "images/$x/Dockerfile" ] || { say "no images/$x/Dockerfile"; exit 1; }
done

cache="$root/.cache/images"
mkdir -p "$cache"
# One build at a time per work tree: the storage is shared by every step.
exec 9>"$cache/.lock"
"$lock" 9
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
B=(buildah --root "$cache/storage" --runroot "$cache/run"
  --storage-driver "${FLOCK_IMAGES_STORAGE_DRIVER:-overlay}")
# Working containers of an interrupted run hold layers (and disk): nothing else uses this storage.
"${B[@]}" rm --all >/dev/null

# shellcheck source=scripts/image-base.sh
source scripts/image-base.sh
start=$SECONDS
ensure_base
say "base ready after $((SECONDS - start))s"

# inputs_hash X: the files the Dockerfile's COPY lines (those without --from) bring in, as the
# work tree has them (git's view: tracked and untracked, minus what .gitignore drops, which
# .dockerignore drops too), with the Dockerfile, .dockerignore, the base and these scripts.
inputs_hash() {
  local dockerfile="images/$1/Dockerfile" srcs
  mapfile -t srcs < <(awk '
    /\\$/ && !/^[[:space:]]*#/ { line = line substr($0, 1, length($0) - 1) " "; next }
    { line = line $0; if (line ~ /^[[:space:]]*COPY[[:space:]]/ && line !~ /--from=/) {
        n = split(line, w, /[[:space:]]+/); for (i = 2; i < n; i++) if (w[i] != "" && w[i] !~ /^--/) print w[i]
      } line = "" }' "$dockerfile")
  {
    echo "$base_hash"
    sha256sum scripts/build-images.sh scripts/image-base.sh "$dockerfile" .dockerignore
    git ls-files -z -co --exclude-standard -- "${srcs[@]}" | sort -z |
      while IFS= read -r -d '' f; do [ -f "$f" ] && sha256sum "$f"; done
  } | sha256sum | cut -c1-16
}

# Where the machine's egress re-signs TLS (this workplace's does), npm ci inside the build needs
# the CA the host trusts: the host's bundle (npm's cafile, else NODE_EXTRA_CA_CERTS) is
# bind-mounted into the RUN steps with an npmrc pointing at it, for the build only: neither is
# committed (the build stage's npm cache and /root are not copied into the final image).
mounts=()
ca="$(npm config get cafile 2>/dev/null || true)"
case "$ca" in null | undefined) ca="" ;; esac
ca="${ca:-${NODE_EXTRA_CA_CERTS:-}}"
if [ -n "$ca" ] && [ -f "$ca" ]; then
  echo 'cafile=/run/flock-build/ca.crt' >"$cache/build.npmrc"
  mounts=(--volume "$ca:/run/flock-build/ca.crt:ro" --volume "$cache/build.npmrc:/root/.npmrc:ro")
  say "npm in the build trusts the host's CA bundle $ca"
fi

for x in "${images[@]}"; do
  name="localhost/flock-$x:dev"
  archive="$cache/flock-$x.tar"
  hash="$(inputs_hash "$x")"
  if [ -f "$archive" ] && [ "$(cat "$archive.hash" 2>/dev/null)" = "$hash" ]; then
    say "$x: cached $archive ($name, inputs $hash)"
    continue
  fi
  t=$SECONDS
  say "$x: buildah bud -f images/$x/Dockerfile ($name, inputs $hash)"
  rm -f "$archive.hash" "$cache/$x.iid"
  "${B[@]}" bud --pull=never --network host --format oci --iidfile "$cache/$x.iid" "${mounts[@]}" \
    --label "net.fritzlab.flock.inputs-hash=$hash" -t "$name" -f "images/$x/Dockerfile" . >&2
  say "$x: built in $((SECONDS - t))s"
  t=$SECONDS
  "${B[@]}" push --quiet "$(cat "$cache/$x.iid")" "oci-archive:$archive.tmp:$name"
  mv "$archive.tmp" "$archive"
  echo "$hash" >"$archive.hash"
  say "$x: exported $archive in $((SECONDS - t))s ($(du -m "$archive" | cut -f1) MB)"
done
# Images that lost their tag to a newer build, and the build stages, go.
"${B[@]}" rmi --prune >/dev/null 2>&1 || true
say "done in $((SECONDS - start))s: $(for x in "${images[@]}"; do printf '%s ' "$cache/flock-$x.tar"; done)"
