#!/bin/sh
# Installs the Debian packages and Python modules that are missing, and nothing else.
# Usage: deps.sh "deb1 deb2 ..." "module:pypi-package ..."
set -eu
debs="$1"
pymods="$2"

missing=""
for p in $debs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "deps: installing Debian packages:$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
    # Debian starts the IRC daemons as services on install; the tests start their own.
    for svc in ngircd inspircd; do
        if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl stop "$svc" >/dev/null 2>&1 || true; fi
        if [ -x "/etc/init.d/$svc" ]; then $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true; fi
    done
fi

pip_missing=""
for pair in $pymods; do
    module="${pair%%:*}"
    package="${pair#*:}"
    if ! python3 -c "import $module" >/dev/null 2>&1; then
        pip_missing="$pip_missing $package"
    fi
done
if [ -n "$pip_missing" ]; then
    echo "deps: installing Python packages:$pip_missing"
    python3 -m pip install --quiet $pip_missing
fi
if [ -z "$missing" ] && [ -z "$pip_missing" ]; then
    echo "deps: everything is installed"
fi
