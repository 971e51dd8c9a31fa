#!/bin/sh
# Prints the `export` lines that make ansible-playbook record into a logbook
# server with logbook's own callback (like ARA's `python3 -m ara.setup.env`):
#   eval "$(npm run --silent ansible-env -- http://127.0.0.1:8000)"
set -eu
root=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
url=${1:-${LOGBOOK_API_SERVER:-http://127.0.0.1:8000}}
case "$url" in
  http://*|https://*) ;;
  *) echo "usage: npm run --silent ansible-env -- <http(s)://logbook server URL>" >&2; exit 2 ;;
esac
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
echo "export ANSIBLE_CALLBACK_PLUGINS=$(q "$root/src/ansible/callback")"
echo "export ANSIBLE_ACTION_PLUGINS=$(q "$root/src/ansible/action")"
echo "export LOGBOOK_API_SERVER=$(q "$url")"
