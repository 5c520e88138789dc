#!/bin/sh
# Copy vLLM VERSION (0.32.0, 0.33.0 or 0.34.0; fetched into ~/.cache/cpgraph when missing) to DEST and apply
# the dealt-decode fix to the copy: fix.patch for 0.34.0, fix-VERSION.patch for the others (the same edits).
# usage: examples/vllm_dealt_decode_fix/apply.sh VERSION DEST
set -eu
version=${1:?usage: apply.sh VERSION DEST}
dest=${2:?usage: apply.sh VERSION DEST}
here=$(cd "$(dirname "$0")" && pwd)
case $version in
    0.34.0) fix=$here/fix.patch ;;
    0.32.0|0.33.0) fix=$here/fix-$version.patch ;;
    *) echo "apply.sh: VERSION must be 0.32.0, 0.33.0 or 0.34.0, got $version" >&2; exit 2 ;;
esac
if [ -e "$dest" ]; then echo "apply.sh: DEST $dest exists; give a new folder" >&2; exit 2; fi
src=$(${PYTHON:-python} -c "from cpgraph.adapters.releases import fetch; print(fetch('vllm', '$version'))")
cp -R "$src" "$dest"
(cd "$dest" && patch -p1 < "$fix")
