#!/usr/bin/env bash
# Vendors the UI's JavaScript libraries from the npm registry into web/static/vendor, at pinned
# versions whose tarballs must match the pinned SHA-256, with their licenses. The result is
# committed; nothing is fetched at build or run time. Run it only to change a version (then
# update the checksum it prints).
set -euo pipefail
cd "$(dirname "$0")"
out=static/vendor
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# package@version  sha256-of-tarball  files-to-copy...
pins=(
  "cytoscape@3.35.0 058a81a7534777ea68dc737e9b77bd5b701e00acd9bee246245a576eeeac32e6 dist/cytoscape.min.js LICENSE"
  "cytoscape-dagre@4.0.1 830f9ad4860db701cb6f899ef3590f5c1bfb4d53d8108894f00b56131907e514 dist/cytoscape-dagre.min.js LICENSE"
  "uplot@1.6.32 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE"
)
mkdir -p "$out"
: > "$out/VERSIONS"
for pin in "${pins[@]}"; do
  read -r spec sum files <<<"$pin"
  name="${spec%@*}"
  (cd "$tmp" && npm pack "$spec" --silent >/dev/null)
  tgz="$(ls "$tmp"/"$name"-*.tgz)"
  got="$(sha256sum "$tgz" | cut -c1-64)"
  if [ "$got" != "$sum" ]; then
    echo "checksum mismatch for $spec: got $got, pinned $sum" >&2
    exit 1
  fi
  mkdir -p "$tmp/$name"
  tar xzf "$tgz" -C "$tmp/$name"
  for f in $files; do
    base="$(basename "$f")"
    [ "$base" = LICENSE ] && base="$name.LICENSE"
    cp "$tmp/$name/package/$f" "$out/$base"
  done
  echo "$spec sha256:$sum" >> "$out/VERSIONS"
  rm -f "$tgz"
done
(cd "$out" && sha256sum -- *.js *.css > SHA256SUMS)
echo "vendored into $out:"
cat "$out/VERSIONS"
