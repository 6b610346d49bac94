#!/usr/bin/env bash
# Checks every example module under examples/: go vet, the tests with
# -race, go build, and staticcheck when it is on PATH (.ci/run installs
# it). Each example is its own Go module with a replace to this checkout,
# so the root's `go vet ./...` and `go test ./...` do not reach them.
# gofmt is the root's: `gofmt -l .` walks into examples/ too.
set -euo pipefail
cd "$(dirname "$0")"

export PATH="$(go env GOPATH)/bin:$PATH"
# Dependencies come from each module's committed go.mod and go.sum (the
# go command's default -mod=readonly: a stale one fails, never rewritten).
# When the root module's dependencies change, `examples/test.sh tidy`
# updates them (go mod tidy in each module).
if [ "${1:-}" = tidy ]; then
  for mod in */go.mod; do (cd "$(dirname "$mod")" && echo "== tidy examples/$(dirname "$mod")" && go mod tidy); done
  exit 0
fi

for mod in */go.mod; do
  dir=$(dirname "$mod")
  echo "== examples/${dir}"
  (
    cd "$dir"
    echo "   go vet";   go vet ./...
    if command -v staticcheck >/dev/null; then
      echo "   staticcheck"; staticcheck ./...
    fi
    echo "   go test";  go test -race -count=1 ./...
    echo "   go build"; go build -o /dev/null ./... # checks; writes no binary
  )
done

# docs/plugins.md, "Your own module": the commands a new module is started
# with, run as written (the block after <!-- new-module -->) against this
# checkout, in a directory of their own. A step that stops working (a
# replace go mod tidy no longer takes, an import path moved) fails here.
echo "== docs/plugins.md: your own module"
root=$(cd .. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script=$(awk '/<!-- new-module -->/{found=1; next} found && /^```sh/{inblock=1; next} inblock && /^```/{exit} inblock{print}' "$root/docs/plugins.md")
if [ -z "$script" ]; then
  echo "docs/plugins.md has no sh block after <!-- new-module -->" >&2
  exit 1
fi
(cd "$work" && bash -euo pipefail -c "$(printf '%s\n' "$script" | sed "s#^PARLEY=.*#PARLEY=$root#")")
