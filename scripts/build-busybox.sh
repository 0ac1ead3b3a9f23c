#!/usr/bin/env bash
# Build upstream BusyBox into
#   .cache/busybox/<content hash>/busybox   and link it as   .cache/bin/busybox-upstream
# for the e2e specs' busybox image (e2e/lab/node/images.ts busyboxImage), which must behave as
# Kubernetes' registry.k8s.io/e2e-test-images/busybox:1.37.0-2 (Docker's busybox:1.37.0, BusyBox
# built with its defconfig). Debian's busybox-static is not that: Debian reverts upstream's
# 9c143ce5 (debian/patches/revert-9c143ce5...), so its `sh` drops environment variables whose
# names are not shell identifiers (`data-1`, `1-data-1`, `$_-data-1`) from its children, and five
# `[Conformance]` specs (ConfigMap and Secret "consumable via the environment", "with various
# prefixes") read exactly those names from `sh -c env`.
# The source is upstream's tarball as Debian's source package ships it (busybox_1.37.0.orig),
# checked by its SHA-256; defconfig, static, without `tc` (it needs CBQ headers newer kernels
# dropped). Cold on 2 cores: ≈ 1 min of CPU (3.5 min wall beside a Go build); an unchanged
# script reuses the build ("cached"), also from another clone on this machine: each build is
# kept by its hash in the machine's cache too ($FLOCK_MACHINE_CACHE, default ~/.cache/flock), as
# the Go builds are in Go's.
set -euo pipefail
version=1.37.0
sha256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
url="http://deb.debian.org/debian/pool/main/b/busybox/busybox_${version}.orig.tar.bz2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-busybox: $*" >&2; }

for tool in gcc make curl bzip2; do
  command -v "$tool" >/dev/null 2>&1 || {
    say "'$tool' not found: apt-get install gcc make curl bzip2 libc6-dev (./dev setup does)"
    exit 1
  }
done
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || {
  say "glibc's static library is missing: apt-get install libc6-dev"
  exit 1
}

hash="$( (sha256sum <"$root/scripts/build-busybox.sh"; gcc -dumpfullversion) | sha256sum | cut -c1-16)"
out="$root/.cache/busybox/$hash"
link="$root/.cache/bin/busybox-upstream"
mkdir -p "$root/.cache/bin"
machine="${FLOCK_MACHINE_CACHE:-$HOME/.cache/flock}/busybox/$hash"
if [ ! -x "$out/busybox" ] && [ -x "$machine/busybox" ]; then
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  cp "$machine/busybox" "$out.tmp/busybox"
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
if [ -x "$out/busybox" ]; then
  ln -sfn "../busybox/$hash/busybox" "$link"
  say "cached $out/busybox"
  exit 0
fi

start=$SECONDS
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
say "building BusyBox $version (upstream source, defconfig, static)"
curl -fsSL --retry 3 -o "$work/src.tar.bz2" "$url"
echo "$sha256  $work/src.tar.bz2" | sha256sum -c --quiet - || {
  say "checksum mismatch for $url"
  exit 1
}
tar -xjf "$work/src.tar.bz2" -C "$work"
src="$work/busybox-$version"
make -C "$src" -s defconfig >/dev/null
sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/; s/^CONFIG_TC=y$/# CONFIG_TC is not set/' "$src/.config"
grep -qx 'CONFIG_STATIC=y' "$src/.config" || {
  say "defconfig changed shape: CONFIG_STATIC not set"
  exit 1
}
nice -n 10 make -C "$src" -s -j"$(nproc)" busybox >"$work/build.log" 2>&1 || {
  tail -30 "$work/build.log" >&2
  say "build failed (log above)"
  exit 1
}
# The behaviour this build exists for: names that are not identifiers reach sh's children.
got="$(env -i 'data-1=x' "$src/busybox" sh -c env | grep -c '^data-1=x$' || true)"
[ "$got" = 1 ] || {
  say "the built sh drops 'data-1' from its children's environment"
  exit 1
}
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
cp "$src/busybox" "$out.tmp/busybox"
rm -rf "$out" && mv "$out.tmp" "$out"
ln -sfn "../busybox/$hash/busybox" "$link"
# For the next clone on this machine (best effort: a read-only home only costs the next build).
if mkdir -p "$machine" 2>/dev/null && cp "$out/busybox" "$machine/busybox.tmp" 2>/dev/null; then
  mv "$machine/busybox.tmp" "$machine/busybox"
fi
say "built BusyBox $version in $((SECONDS - start))s"
