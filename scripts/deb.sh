#!/bin/sh
# Builds chat-tui_VERSION_ARCH.deb with Debian's own dpkg-deb: the binary, the man pages, the
# systemd unit and the example settings (a conffile).
# Usage: deb.sh BINARY OUTDIR
set -eu
binary="$1"
out="$2"
top="$(cd "$(dirname "$0")/.." && pwd)"
version="$("$binary" --version | sed 's/^chat-tui-//')"
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/chat-tui-deb.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
install -D -m 755 "$binary" "$stage/usr/bin/chat-tui"
install -D -m 644 "$top/man/chat-tui.1" "$stage/usr/share/man/man1/chat-tui.1"
install -D -m 644 "$top/man/chat-tui.conf.5" "$stage/usr/share/man/man5/chat-tui.conf.5"
gzip -9n "$stage/usr/share/man/man1/chat-tui.1" "$stage/usr/share/man/man5/chat-tui.conf.5"
install -D -m 644 "$top/packaging/chat-tui.service" "$stage/lib/systemd/system/chat-tui.service"
install -D -m 644 "$top/packaging/server.conf" "$stage/etc/chat-tui/server.conf"
install -D -m 644 "$top/README.md" "$stage/usr/share/doc/chat-tui/README.md"
mkdir -p "$stage/DEBIAN"
echo "/etc/chat-tui/server.conf" > "$stage/DEBIAN/conffiles"
size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: chat-tui
Version: $version
Architecture: $arch
Maintainer: chat-tui developers <chat-tui@localhost>
Installed-Size: $size
Depends: libc6, libgcc-s1, libstdc++6, libncursesw6, libtinfo6, libsqlite3-0, libssl3
Section: net
Priority: optional
Homepage: https://localhost/chat-tui
Description: chat room in one command: IRC server and full-screen client
 chat-tui hosts a chat room (an IRC server with TLS, history, accounts, a web
 page and files) and joins any IRC server in a full-screen terminal interface.
CONTROL
mkdir -p "$out"
dpkg-deb --root-owner-group --build "$stage" "$out/chat-tui_${version}_${arch}.deb" >/dev/null
echo "$out/chat-tui_${version}_${arch}.deb"
