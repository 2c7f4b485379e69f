#!/usr/bin/env bash
# What the course needs beyond the Python packages:
#  - bubblewrap from Debian's packages, the sandbox in which `course autograde` runs student code;
#  - reveal.js, MathJax 2, require.js and jQuery from the npm registry, into build/vendor/ (git-ignored;
#    `course slides` copies what a deck loads next to it, so decks never reach for a CDN);
#  - configurable-http-proxy from the npm registry, into build/vendor/ too: JupyterHub's proxy (`course hub`);
#  - Chromium, its WebDriver and poppler's PDF tools from Debian's packages (headless browser checks,
#    `course slides --pdf`).
# Safe to run again: it installs only what is missing. Outside CI a step it cannot do (no root, not
# Debian, no npm) is a warning and the browser tests skip; in CI (CI set) it is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

VENDOR="${COURSE_SLIDES_VENDOR:-build/vendor}"
NPM_PACKAGES="reveal.js@4.6.1 mathjax@2.7.9 requirejs@2.3.8 jquery@3.8.0 configurable-http-proxy@5.3.0"

problem() {
    if [ -n "${CI:-}" ]; then echo "setup_system: error: $*" >&2; exit 1; fi
    echo "setup_system: warning: $* (slides, browser tests or sandboxed autograding unavailable)" >&2
}

apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; else
            problem "cannot install $* without root: apt-get install $*"; return 1; fi
    fi
    if ! command -v apt-get >/dev/null; then problem "no apt-get to install $*"; return 1; fi
    echo "setup_system: apt-get install $*"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

packages=()
command -v chromium >/dev/null || packages+=(chromium fonts-liberation fonts-dejavu-core)
command -v chromedriver >/dev/null || packages+=(chromium-driver)
command -v pdfinfo >/dev/null || packages+=(poppler-utils)
command -v bwrap >/dev/null || packages+=(bubblewrap)
command -v npm >/dev/null || packages+=(nodejs npm)
if [ ${#packages[@]} -gt 0 ]; then apt_install "${packages[@]}" || true; fi

stamp="$VENDOR/.installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "$NPM_PACKAGES" ]; then
    if command -v npm >/dev/null; then
        echo "setup_system: npm install $NPM_PACKAGES into $VENDOR"
        mkdir -p "$VENDOR"
        # shellcheck disable=SC2086  # one word per package
        npm install --prefix "$VENDOR" --no-save --no-audit --no-fund --loglevel=error $NPM_PACKAGES
        echo "$NPM_PACKAGES" > "$stamp"
    else
        problem "npm not found"
    fi
fi
