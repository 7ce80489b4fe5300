#!/usr/bin/env bash
# The nightly run: CI's steps, with the whole suite on the machine's Node and again on Node 24 LTS
# (CI runs each suite once, half on each Node: see .ci/run). About an hour.
set -uo pipefail
cd "$(dirname "$0")/.."
CI_FULL=1 exec bash .ci/run
