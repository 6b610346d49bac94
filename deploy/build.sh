#!/bin/sh
# Builds the parley binary the way the Docker image does; the Dockerfile
# runs this script and so does CI, so the two cannot drift apart.
#
#   deploy/build.sh [OUTPUT]          (default OUTPUT: ./parley)
#
# It needs Go and a C compiler (cgo, for the SQLite driver). The version,
# commit and build date come from Go's build info when building from a git
# checkout (see `parley version`); where there is no .git (a Docker build
# context), PARLEY_VERSION, PARLEY_COMMIT and PARLEY_DATE, when set, are
# linked in instead.
set -eu

out=${1:-parley}
case $out in
/*) ;;
*) out=$(pwd)/$out ;;
esac
cd "$(dirname "$0")/.."

pkg=github.com/parleybot/parley/app
ldflags="-s -w"
if [ -n "${PARLEY_VERSION:-}" ]; then ldflags="$ldflags -X $pkg.version=$PARLEY_VERSION"; fi
if [ -n "${PARLEY_COMMIT:-}" ]; then ldflags="$ldflags -X $pkg.commit=$PARLEY_COMMIT"; fi
if [ -n "${PARLEY_DATE:-}" ]; then ldflags="$ldflags -X $pkg.date=$PARLEY_DATE"; fi

# -buildvcs=auto overrides a GOFLAGS=-buildvcs=false: stamp the commit when
# there is a checkout to read it from, build without it when there is none.
CGO_ENABLED=1 exec go build -buildvcs=auto -trimpath -ldflags "$ldflags" -o "$out" ./cmd/parley
