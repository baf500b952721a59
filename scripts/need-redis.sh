#!/usr/bin/env bash
# Makes sure redis-server and redis-sentinel are on PATH for the tests:
# installs Debian's packages when one is missing and this is root on a
# machine with apt-get, else says in one line how to install them and
# fails.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u 2>/dev/null)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "make test: redis-server or redis-sentinel is missing; installing Debian's packages with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends redis-server redis-sentinel >/dev/null
	# The package starts a system service; the tests start their own
	# servers and need nothing running.
	redis-server --version
	exit 0
fi
echo "make test: redis-server or redis-sentinel is not on PATH; install them (Debian or Ubuntu: sudo apt-get install redis-server redis-sentinel; macOS: brew install redis) and run make test again" >&2
exit 1
