# shellcheck shell=bash
# Sourced by scripts/build-images.sh: assembles the Dockerfiles' base image,
# node:<FLOCK_NODE_VERSION>-bookworm-slim, without a container registry:
#   - a Debian bookworm root file system from Debian's packages: mmdebstrap --variant=minbase of
#     bookworm, -updates and -security from the mirror this machine's apt uses, made like
#     debian:bookworm-slim (no man pages, docs or locales, also for the Dockerfiles' own
#     apt-get installs; merged /usr; policy-rc.d; apt's docker-clean);
#   - Node.js from the npm registry's node-linux-<arch> package (the official binary) in
#     /usr/local, and the npm that this Node.js release bundles (the registry's `npm` package at
#     the version its changelog names) as /usr/local/lib/node_modules/npm, with
#     /usr/local/bin/{node,npm,npx} where the official image has them.
# Unlike the official image: no `node` user, no yarn/corepack, no docker-entrypoint.sh (CMD is
# plain `node`). The Dockerfiles use none of these.
# Needs: $B (the buildah command, an array), $cache, say(). Sets $base_hash and $base_archive.

debian_suite=bookworm
base_name="docker.io/library/node:${FLOCK_NODE_VERSION}-${debian_suite}-slim"
base_label=net.fritzlab.flock.base-hash

# node_arch / deb_arch: the CPU in the npm package's and Debian's spelling.
case "$(uname -m)" in
  x86_64) node_arch=x64 deb_arch=amd64 ;;
  aarch64) node_arch=arm64 deb_arch=arm64 ;;
  *) echo "build-images: unsupported CPU $(uname -m)" >&2; exit 1 ;;
esac

base_hash="$( (echo "$FLOCK_NODE_VERSION $debian_suite $deb_arch"; cat "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)"
# shellcheck disable=SC2154 # $cache: set by build-images.sh
base_archive="$cache/node-base-$base_hash.tar"

# bundled_npm CHANGELOG VERSION: the npm that Node.js VERSION ships, from its changelog (the
# newest "upgrade npm to X" at or below VERSION's heading).
bundled_npm() {
  awk -v id="<a id=\"$2\"></a>" '
    $0 == id { on = 1 }
    on && match($0, /upgrade npm to [0-9]+\.[0-9]+\.[0-9]+/) {
      print substr($0, RSTART + 15, RLENGTH - 15); exit
    }' "$1"
}

# debian_sources: sources.list lines for the suite, -updates and -security (main), taken from
# this machine's apt configuration, whose mirror it reaches; none when it has none, and then
# mmdebstrap uses Debian's default mirrors.
debian_sources() {
  command -v apt-get >/dev/null 2>&1 || return 0
  # shellcheck disable=SC2016 # apt's own $(FIELD) placeholders
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 'Component: main' 2>/dev/null |
    awk -v s="$debian_suite" '$2 == s || $2 == s "-updates" || $2 == s "-security" { print "deb " $1 " " $2 " main" }' |
    sort -u
}

# base_in_storage: the image under $base_name carries this script's hash.
base_in_storage() {
  [ "$("${B[@]}" inspect --type image --format "{{index .OCIv1.Config.Labels \"$base_label\"}}" "$base_name" 2>/dev/null)" = "$base_hash" ]
}

assemble_base() {
  local tmp="$1" t=$SECONDS npm_version ctr
  say "base: fetching node-linux-$node_arch@$FLOCK_NODE_VERSION from the npm registry"
  npm pack --silent --pack-destination "$tmp" "node-linux-$node_arch@$FLOCK_NODE_VERSION" >/dev/null
  mkdir -p "$tmp/local/lib/node_modules/npm" "$tmp/node"
  tar -xzf "$tmp/node-linux-$node_arch-$FLOCK_NODE_VERSION.tgz" -C "$tmp/node" --strip-components=1
  npm_version="$(bundled_npm "$tmp/node/CHANGELOG.md" "$FLOCK_NODE_VERSION")"
  if [ -z "$npm_version" ]; then
    say "base: cannot tell which npm Node.js $FLOCK_NODE_VERSION bundles (no 'upgrade npm to' in its CHANGELOG.md)"
    exit 1
  fi
  say "base: fetching npm@$npm_version (the npm of Node.js $FLOCK_NODE_VERSION)"
  npm pack --silent --pack-destination "$tmp" "npm@$npm_version" >/dev/null
  tar -xzf "$tmp/npm-$npm_version.tgz" -C "$tmp/local/lib/node_modules/npm" --strip-components=1
  mkdir -p "$tmp/local/bin"
  cp -a "$tmp/node/bin/node" "$tmp/local/bin/node"
  cp -a "$tmp/node/include" "$tmp/node/share" "$tmp/local/"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$tmp/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$tmp/local/bin/npx"
  say "base: Node.js and npm ready in $((SECONDS - t))s"

  t=$SECONDS
  # What debian:bookworm-slim adds to a minbase system, laid over it by the hooks below: no
  # service starts when a package is installed (policy-rc.d), and apt drops the downloaded
  # packages and its binary caches after every run (docker-clean), so that a Dockerfile's
  # `apt-get install … && rm -rf /var/lib/apt/lists/*` leaves nothing else behind.
  mkdir -p "$tmp/extra/usr/sbin" "$tmp/extra/etc/apt/apt.conf.d"
  printf '#!/bin/sh\nexit 101\n' >"$tmp/extra/usr/sbin/policy-rc.d"
  chmod 0755 "$tmp/extra/usr/sbin/policy-rc.d"
  local clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"'
  printf 'DPkg::Post-Invoke { %s; };\nAPT::Update::Post-Invoke { %s; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
    "$clean" "$clean" >"$tmp/extra/etc/apt/apt.conf.d/docker-clean"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$tmp/extra/etc/apt/apt.conf.d/docker-autoremove-suggests"
  export FLOCK_BASE_LOCAL="$tmp/local" FLOCK_BASE_EXTRA="$tmp/extra" # for the hooks
  local sources
  mapfile -t sources < <(debian_sources)
  if [ ${#sources[@]} -gt 0 ]; then
    say "base: mmdebstrap --variant=minbase $debian_suite from this machine's apt sources: ${sources[*]}"
  else
    say "base: mmdebstrap --variant=minbase $debian_suite from mmdebstrap's default mirrors (this machine's apt has no $debian_suite sources)"
  fi
  # The path-excludes are debian:bookworm-slim's (they stay in /etc/dpkg/dpkg.cfg.d/ for the
  # Dockerfiles' own apt-get installs); lists and caches are dropped by mmdebstrap's cleanup.
  # Merged /usr made as debootstrap makes it (symlinks), not by the usrmerge package (which
  # brings perl). policy-rc.d is ours from the essential packages on: mmdebstrap's own would be
  # deleted at the end. The hooks' $1 (the new root) and variables expand in mmdebstrap's shell.
  # shellcheck disable=SC2016
  mmdebstrap --quiet --variant=minbase --architectures="$deb_arch" --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --skip=chroot/policy-rc.d \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --aptopt='Acquire::Languages "none"' \
    --aptopt='APT::Install-Recommends "false"' \
    --essential-hook='tar -C "$FLOCK_BASE_EXTRA" --owner=0 --group=0 -c usr etc | tar -C "$1" --no-overwrite-dir -x' \
    --customize-hook='tar -C "$FLOCK_BASE_LOCAL" --owner=0 --group=0 -c . | tar -C "$1/usr/local" --no-overwrite-dir -x' \
    --customize-hook='chroot "$1" /usr/local/bin/node --version >/dev/null' \
    "$debian_suite" "$tmp/rootfs.tar" "${sources[@]}"
  say "base: root filesystem in $((SECONDS - t))s ($(du -m "$tmp/rootfs.tar" | cut -f1) MB)"

  t=$SECONDS
  ctr="$("${B[@]}" from --pull=never scratch)"
  "${B[@]}" add --quiet "$ctr" "$tmp/rootfs.tar" / >/dev/null
  "${B[@]}" config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$FLOCK_NODE_VERSION" --env NPM_VERSION="$npm_version" \
    --cmd node --os linux --arch "$deb_arch" \
    --label "$base_label=$base_hash" \
    --label org.opencontainers.image.description="Debian $debian_suite (minbase, slim) with Node.js $FLOCK_NODE_VERSION and npm $npm_version, assembled by flock's scripts/image-base.sh" \
    "$ctr"
  "${B[@]}" commit --quiet --rm --format oci "$ctr" "$base_name" >/dev/null
  "${B[@]}" push --quiet "$base_name" "oci-archive:$base_archive.tmp:$base_name"
  mv "$base_archive.tmp" "$base_archive"
  say "base: committed $base_name in $((SECONDS - t))s"
}

# ensure_base: $base_name in storage, from the cached archive or assembled anew.
ensure_base() {
  if base_in_storage; then
    say "base: cached $base_name ($base_hash)"
    return
  fi
  if [ -f "$base_archive" ]; then
    say "base: loading $base_archive"
    "${B[@]}" tag "$("${B[@]}" pull --quiet "oci-archive:$base_archive")" "$base_name"
    return
  fi
  local tmp
  tmp="$(mktemp -d "$cache/base.XXXXXX")"
  assemble_base "$tmp"
  rm -rf "$tmp"
  # Archives of older bases (other Node.js releases or scripts) go.
  find "$cache" -maxdepth 1 -name 'node-base-*.tar' ! -name "node-base-$base_hash.tar" -delete
}
