#!/usr/bin/env bash
# FRR's vtysh, for one job: `vtysh --dryrun` parses docs/announcements.md's FRR sample
# (e2e/lab/core/router-samples.test.ts). Installing Debian's frr would start FRR's daemons on the
# machine itself, so its package and libyang2's are downloaded and unpacked instead, into
#   .cache/frr/<package versions>/   with the wrapper   .cache/bin/vtysh   (on PATH through ./dev)
# that runs the unpacked vtysh with its own libraries. Nothing is installed and nothing starts.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "fetch-frr: $*" >&2; }
packages=(frr libyang2)

versions() {
  for p in "${packages[@]}"; do
    apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }'
  done
}
v="$(versions | tr '\n' '_')"
if [ -z "${v//_/}" ] || [[ "$v" == *"(none)"* ]]; then
  apt-get update -qq
  v="$(versions | tr '\n' '_')"
fi
v="${v%_}"
[[ "$v" =~ ^[A-Za-z0-9.:~+_-]+$ ]] || { say "cannot find Debian's ${packages[*]}: $v"; exit 1; }
out="$root/.cache/frr/${v//:/%}"
mkdir -p "$root/.cache/bin"
if [ ! -x "$out/usr/bin/vtysh" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -qq "${packages[@]}" 2>/dev/null)
  mkdir -p "$out.partial"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$out.partial"; done
  rm -rf "$out" && mv "$out.partial" "$out"
  say "unpacked ${packages[*]} ($v) into $out"
else
  say "cached $out"
fi
lib="$out/usr/lib/x86_64-linux-gnu"
cat >"$root/.cache/bin/vtysh" <<WRAPPER
#!/bin/sh
# Debian's vtysh unpacked by scripts/fetch-frr.sh (no FRR installed, no daemon runs).
LD_LIBRARY_PATH="$lib/frr:$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$out/usr/bin/vtysh" "\$@"
WRAPPER
chmod 755 "$root/.cache/bin/vtysh"
# It runs (its libraries resolve): --help exits 0.
"$root/.cache/bin/vtysh" --help >/dev/null
