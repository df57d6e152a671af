#!/usr/bin/env bash
# Build an OCI image of iolab from the binary and the libraries it links: no base image, no
# registry (packaging/Containerfile is FROM scratch). With podman, else buildah.
#
#   scripts/oci-image.sh [BINARY] [TAG]    # default: target/release/iolab, localhost/iolab:VERSION
#
# The binary is stripped; each library `ldd` lists (and the dynamic loader) goes in at its own
# path. Prints the tag on stdout. Run it as an agent with, for example:
#   podman run --rm --network host -v /shared:/shared -v ~/.iolab-token:/token:ro TAG \
#       agent --join COORDINATOR:7700 --token-file /token --allow /shared/iolab
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/target/release/iolab}
[ -x "$bin" ] || { echo "oci-image.sh: no iolab binary at $bin (cargo build --release -p iolab first)" >&2; exit 2; }
version=$("$bin" --version | awk '{print $2}')
tag=${2:-localhost/iolab:$version}
if command -v podman >/dev/null; then tool=podman
elif command -v buildah >/dev/null; then tool=buildah
else echo "oci-image.sh: neither podman nor buildah is installed (apt-get install podman)" >&2; exit 2; fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/bin" "$root/root" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
cp "$bin" "$root/usr/bin/iolab"
strip "$root/usr/bin/iolab"
# The libraries and the loader, at the paths the binary asks for them.
ldd "$bin" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]*ld-linux/{print $1}' | sort -u | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# A user table, so tools that look up uid 0 find it.
echo 'root:x:0:0:root:/root:/usr/bin/iolab' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
cp "$here/packaging/Containerfile" "$ctx/Containerfile"
if [ "$tool" = podman ]; then
  podman build --quiet -t "$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
else
  buildah bud --quiet -t "$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
fi
echo "$tag"
