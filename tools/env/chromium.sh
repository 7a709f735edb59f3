#!/usr/bin/env bash
# Installs Debian's `chromium` where no Chromium is found, for the report page's browser test
# (tests/integration/page_browser.rs, which fails, never skips, without one). apt checks every
# package against the archive's signed index; the version is the archive's current one (Debian's
# security archive keeps only the newest chromium), and the test prints the one it ran.
# Needs root, or sudo without a password; otherwise says so and exits 1.
set -euo pipefail
if [ -n "${DECODE_BASELINE_CHROMIUM:-}" ]; then exit 0; fi
for name in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$name" >/dev/null; then exit 0; fi
done
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "no Chromium on PATH, and no root (or password-less sudo) to install Debian's chromium:" \
    "install it (apt-get install chromium) or set DECODE_BASELINE_CHROMIUM to a Chromium or Chrome executable" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The package lists of a new machine may be missing or stale: refresh them when the first try fails.
"${as_root[@]}" apt-get install -y -q chromium \
  || { "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q chromium; }
