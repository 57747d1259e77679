#!/bin/sh
# Usage: sh tests/run.sh NAME   (runs tests/test_NAME.sh against lib/textkit.sh)
set -u
. ./lib/textkit.sh
failed=0
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; failed=1; fi
}
. "./tests/test_$1.sh"
exit $failed
