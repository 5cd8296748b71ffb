# SPDX-License-Identifier: Apache-2.0
# Shared bits for scripts/*: repo root, build dir, messages, root/sudo. Source it, don't run it.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${RNICSIM_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
SELF="scripts/${0##*/}"

note() { echo "$SELF: $*" >&2; }
die() {
  echo "$SELF: error: $*" >&2
  exit 1
}
# Name the command that failed, then let `set -e` exit with its status.
trap 'echo "$SELF: error: exit $? at line $LINENO: $BASH_COMMAND" >&2' ERR

# Run a command as root: directly when root, else through sudo (no password prompt without a tty).
as_root() {
  if ((EUID == 0)); then
    "$@"
  elif command -v sudo >/dev/null; then
    if [[ -t 0 ]]; then sudo "$@"; else sudo -n "$@"; fi
  else
    die "need root to run '$*' and sudo is not installed; run scripts/setup as root"
  fi
}
