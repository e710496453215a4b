#!/usr/bin/env bash
# Make WordNet 3.0 available to `prior` without nltk.download (which needs the network).
# Order: already there (Debian's /usr/share/wordnet, or nltk data) -> apt-get install as root
# -> apt-get download + unpack into $PRIOR_HOME/wordnet-debian (no root needed; then
# `prior.pipeline.resources.wordnet` finds it through PRIOR_WORDNET_DIR or that default place).
set -euo pipefail
if [ -f /usr/share/wordnet/data.noun ]; then echo "wordnet: /usr/share/wordnet"; exit 0; fi
if python3 - <<'PY' 2>/dev/null
import nltk, sys
try:
    nltk.data.find("corpora/wordnet")
except LookupError:
    sys.exit(1)
PY
then echo "wordnet: nltk data"; exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends wordnet-base >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends wordnet-base >/dev/null; }
  [ -f /usr/share/wordnet/data.noun ] && { echo "wordnet: installed wordnet-base"; exit 0; }
fi
if command -v apt-get >/dev/null && command -v dpkg >/dev/null; then
  home="${PRIOR_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/prior}"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download wordnet-base >/dev/null)
  mkdir -p "$home/wordnet-debian"
  dpkg -x "$tmp"/wordnet-base_*.deb "$home/wordnet-debian"
  echo "wordnet: unpacked into $home/wordnet-debian/usr/share/wordnet (set PRIOR_WORDNET_DIR to it)"
  exit 0
fi
echo "wordnet: not found. Install Debian's wordnet-base, or run: python -m nltk.downloader wordnet" >&2
exit 1
