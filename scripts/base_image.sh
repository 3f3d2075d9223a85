#!/usr/bin/env bash
# Builds a stand-in for the container's base image where no registry serves
# it: a Debian bookworm root filesystem (debootstrap --variant=minbase, from
# Debian's mirror) plus the `deno` binary of the npm package deno@VERSION,
# with the official image's user (deno, uid 1993), DENO_DIR (/deno-dir/) and
# /usr/bin/deno. It is committed under the official name, so the Dockerfile's
# FROM finds it in local storage and nothing is pulled.
#
#   scripts/base_image.sh [IMAGE]     # default docker.io/denoland/deno:2.9.6
#
# An image of that name already in root's local storage is kept (so a second
# run takes a second); FORCE=1 rebuilds it. Needs root (debootstrap, chroot),
# buildah and debootstrap: run as a user, it runs itself again with sudo,
# and without sudo it stops with exit 2. Environment: DEBIAN_MIRROR (default
# http://deb.debian.org/debian), DENO_BINARY (a deno binary to use instead of
# npm's), FORCE.
set -euo pipefail

IMAGE="${1:-docker.io/denoland/deno:2.9.6}"
VERSION="${IMAGE##*:}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Bump when what this script puts in the image changes: an older stand-in is
# then rebuilt.
RECIPE=1

say() { echo "base_image: $*" >&2; }

# Root first: the image goes to root's storage, whoever runs this.
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null ||
    { say "needs root (debootstrap and chroot): run it as root"; exit 2; }
  say "needs root (debootstrap and chroot): running it with sudo"
  exec sudo --preserve-env=DEBIAN_MIRROR,DENO_BINARY,FORCE "$0" "$@"
fi

stand_in=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.pod-broker.stand-in"}}' "$IMAGE" 2>/dev/null) &&
  [ "${FORCE:-0}" != 1 ] && { [ "$stand_in" = "$RECIPE" ] || [ -z "$stand_in" ]; } && {
  say "$IMAGE is in local storage: kept (FORCE=1 rebuilds it)"
  exit 0
}
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }
done

work=$(mktemp -d /var/tmp/pod-broker-base.XXXXXX)
container=""
cleanup() {
  [ -n "$container" ] && buildah rm "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# The deno binary of npm's deno@VERSION: its platform package holds it.
case "$(uname -m)" in
  x86_64) platform=linux-x64-glibc ;;
  aarch64) platform=linux-arm64-glibc ;;
  *) say "no deno npm package for $(uname -m)"; exit 2 ;;
esac
deno_binary="${DENO_BINARY:-}"
if [ -z "$deno_binary" ]; then
  global=$(npm root -g 2>/dev/null || true)
  for candidate in "$global/deno/node_modules/@deno/$platform/deno" \
    "$global/@deno/$platform/deno"; do
    if [ -x "$candidate" ] && "$candidate" --version | grep -q "^deno $VERSION "; then
      deno_binary="$candidate"
      break
    fi
  done
fi
if [ -z "$deno_binary" ]; then
  say "fetching @deno/$platform@$VERSION from npm"
  (cd "$work" && npm pack --silent "@deno/$platform@$VERSION" >/dev/null)
  tar -xzf "$work"/deno-"$platform"-"$VERSION".tgz -C "$work" package/deno
  deno_binary="$work/package/deno"
fi
"$deno_binary" --version | grep -q "^deno $VERSION " ||
  { say "$deno_binary is not deno $VERSION"; exit 2; }

say "debootstrap --variant=minbase bookworm from $MIRROR"
rootfs="$work/rootfs"
debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }

install -m 0755 "$deno_binary" "$rootfs/usr/bin/deno"
chroot "$rootfs" useradd --uid 1993 --user-group deno
mkdir -p "$rootfs/deno-dir"
chown 1993:1993 "$rootfs/deno-dir"
# What a running container never needs: the package cache, lists, docs.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old

say "committing $IMAGE"
container=$(buildah from scratch)
tar -C "$rootfs" -cf "$work/rootfs.tar" .
buildah add --quiet "$container" "$work/rootfs.tar" / >/dev/null
buildah config \
  --env DENO_DIR=/deno-dir/ \
  --env DENO_INSTALL_ROOT=/usr/local \
  --entrypoint '["deno"]' \
  --cmd '["--version"]' \
  --label "org.pod-broker.stand-in=$RECIPE" \
  --label "org.opencontainers.image.description=stand-in for $IMAGE: debootstrap minbase bookworm + deno $VERSION from npm" \
  "$container"
buildah commit --quiet --format docker --rm "$container" "$IMAGE" >/dev/null
container=""
say "built $IMAGE ($(buildah images --format "{{.Size}}" "$IMAGE"))"
