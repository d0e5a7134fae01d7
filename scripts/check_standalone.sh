#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The repository stands alone: no file may point to documents outside it (a design or facts
# file, background theses by file name, a sibling folder). Background work is cited by
# author and title (docs/architecture.md). Run by CTest; exits 1 and lists the lines found.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# the patterns are built from pieces so that this file does not match itself
d=DESIGN; f=FACTS; s=STYLE; seeds=seed; shared=share; library=librar
pattern="($d|$f|$s)\.md|${seeds}s/|\.\./${shared}d|/${shared}d/|\.${library}y/"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard)
else
  files=$(find . -type f ! -path './build/*' ! -path './.git/*' ! -path '*/node_modules/*' | sed 's|^\./||')
fi
found=$(printf '%s\n' "$files" | grep -v '^$' | while IFS= read -r file; do
  [ -f "$file" ] || continue
  grep -InE "$pattern" "$file" 2>/dev/null | sed "s|^|$file:|" || true
done)
if [ -n "$found" ]; then
  echo "files that point outside the repository (cite background work by author and title):"
  printf '%s\n' "$found"
  exit 1
fi
echo "ok: no file points outside the repository"
