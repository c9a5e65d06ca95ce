#!/bin/sh
# Runs a command with a HOME, XDG folders and TMPDIR of its own under one fresh temporary folder,
# removed when it ends, so nothing a test, soak, fuzz run or benchmark starts reads or writes the
# user's chat-tui history, config, log or pinned certificates.
# Usage: isolated.sh COMMAND [ARGS...]
set -eu
top=$(mktemp -d "${TMPDIR:-/tmp}/chat-tui-isolated.XXXXXX")
trap 'rm -rf "$top"' EXIT INT TERM
# What finds the tools themselves stays where it is: pyenv's shims and a per-user pip install are
# found through HOME unless told otherwise.
if [ -z "${PYENV_ROOT:-}" ] && [ -d "$HOME/.pyenv" ]; then export PYENV_ROOT="$HOME/.pyenv"; fi
if [ -z "${PYTHONUSERBASE:-}" ]; then export PYTHONUSERBASE="$HOME/.local"; fi
mkdir -p "$top/home/.config" "$top/home/.local/share" "$top/home/.local/state" "$top/home/.cache" "$top/tmp"
# Passable (not listable) by others, as /tmp is: a test that runs a server as an unprivileged
# user reaches its own folder under TMPDIR.
chmod 711 "$top" "$top/tmp"
export HOME="$top/home"
export XDG_CONFIG_HOME="$HOME/.config"
export XDG_DATA_HOME="$HOME/.local/share"
export XDG_STATE_HOME="$HOME/.local/state"
export XDG_CACHE_HOME="$HOME/.cache"
export TMPDIR="$top/tmp"
unset XDG_RUNTIME_DIR
status=0
"$@" || status=$?
exit "$status"
