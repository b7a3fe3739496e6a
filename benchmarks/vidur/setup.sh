#!/usr/bin/env bash
# Set up Vidur (microsoft/vidur) next to jaxsched for benchmarks/vidur/compare.py.
#
# Steps, each skipped when already done (the script is idempotent):
#   1. a separate virtual environment at $VIDUR_VENV with the PyPI wheel vidur==0.0.26 installed for
#      its dependencies only, then the wheel uninstalled (its code line differs from the GitHub source
#      and would shadow the checkout);
#   2. the GitHub source at the pinned commit extracted to $VIDUR_SRC, either from a bare git
#      directory ($VIDUR_GIT_DIR, e.g. a mirror snapshot) or from a network clone. Files are extracted
#      blob by blob so that a snapshot lacking some large blobs (the profiles' attention.csv, unused
#      here) still yields a working tree; missing blobs are listed in $VIDUR_SRC/MISSING_BLOBS.txt.
#
# Environment variables (defaults in brackets):
#   VIDUR_VENV     [/work/vidur-venv]   virtual environment for Vidur's dependencies
#   VIDUR_SRC      [/work/vidur-src]    where the source tree goes
#   VIDUR_GIT_DIR  []                   bare git directory holding the commit; empty: clone over network
#   VIDUR_URL      [https://github.com/microsoft/vidur]
#   VIDUR_COMMIT   [7d47513363ec447a741ac5e47241580b47724fbf]
#   VIDUR_PYTHON   [python3]            interpreter used to create the venv (3.10 or 3.11)
set -euo pipefail

VIDUR_VENV="${VIDUR_VENV:-/work/vidur-venv}"
VIDUR_SRC="${VIDUR_SRC:-/work/vidur-src}"
VIDUR_GIT_DIR="${VIDUR_GIT_DIR:-}"
VIDUR_URL="${VIDUR_URL:-https://github.com/microsoft/vidur}"
VIDUR_COMMIT="${VIDUR_COMMIT:-7d47513363ec447a741ac5e47241580b47724fbf}"
VIDUR_PYTHON="${VIDUR_PYTHON:-python3}"

# 1. Dependencies in their own venv; the marker file records a completed install.
if [ ! -f "$VIDUR_VENV/.vidur-deps-done" ]; then
  "$VIDUR_PYTHON" -m venv "$VIDUR_VENV"
  "$VIDUR_VENV/bin/pip" install -q vidur==0.0.26
  "$VIDUR_VENV/bin/pip" uninstall -y -q vidur
  touch "$VIDUR_VENV/.vidur-deps-done"
else
  echo "venv present: $VIDUR_VENV"
fi

# 2. Source tree at the pinned commit; the marker file holds the commit extracted.
if [ -f "$VIDUR_SRC/.vidur-commit" ] && [ "$(cat "$VIDUR_SRC/.vidur-commit")" = "$VIDUR_COMMIT" ]; then
  echo "source present: $VIDUR_SRC at $VIDUR_COMMIT"
  exit 0
fi
if [ -z "$VIDUR_GIT_DIR" ]; then
  tmp_clone="$(mktemp -d)"
  trap 'rm -rf "$tmp_clone"' EXIT
  git clone -q --bare "$VIDUR_URL" "$tmp_clone/vidur.git"
  VIDUR_GIT_DIR="$tmp_clone/vidur.git"
fi
if [ "$(git --git-dir="$VIDUR_GIT_DIR" cat-file -t "$VIDUR_COMMIT" 2>/dev/null)" != "commit" ]; then
  echo "commit $VIDUR_COMMIT not in $VIDUR_GIT_DIR" >&2
  exit 1
fi
rm -rf "$VIDUR_SRC"
mkdir -p "$VIDUR_SRC"
: > "$VIDUR_SRC/MISSING_BLOBS.txt"
git --git-dir="$VIDUR_GIT_DIR" ls-tree -r "$VIDUR_COMMIT" | while read -r _mode type sha path; do
  [ "$type" = "blob" ] || continue
  mkdir -p "$VIDUR_SRC/$(dirname "$path")"
  if ! git --git-dir="$VIDUR_GIT_DIR" cat-file blob "$sha" > "$VIDUR_SRC/$path" 2>/dev/null; then
    rm -f "$VIDUR_SRC/$path"
    echo "$path $sha" >> "$VIDUR_SRC/MISSING_BLOBS.txt"
  fi
done
echo "$VIDUR_COMMIT" > "$VIDUR_SRC/.vidur-commit"
echo "extracted $VIDUR_COMMIT to $VIDUR_SRC ($(wc -l < "$VIDUR_SRC/MISSING_BLOBS.txt") blobs missing)"
