#!/bin/sh
# A throw-away S3 server for the tests and benchmarks: a one-node Ceph cluster (one monitor, one OSD
# on the in-memory `memstore` object store, no authentication between its parts, pools of size 1)
# and radosgw on a loopback port, with one S3 user.
#
#   scripts/ceph-s3.sh start DIR [BUCKET...]   starts one in DIR (made empty), makes the buckets,
#                                  prints KEY=VALUE lines: S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_PIDS
#   scripts/ceph-s3.sh stop DIR    stops the daemons started in DIR and removes DIR
#
# Needs Debian's ceph-mon, ceph-osd, radosgw and ceph-common (apt-get install -y ...). Run as root
# or as a user who may write DIR; everything lives in DIR (about 180 MB while running).
set -eu
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  if [ -f "$dir/pids" ]; then
    for p in $(cat "$dir/pids"); do kill "$p" 2>/dev/null || true; done
    for p in $(cat "$dir/pids"); do
      i=0
      while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
      kill -9 "$p" 2>/dev/null || true
    done
  fi
  rm -rf "$dir"
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for b in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool; do
  command -v $b >/dev/null 2>&1 || { echo "missing $b: apt-get install -y ceph-mon ceph-osd radosgw ceph-common" >&2; exit 3; }
done

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
rm -rf "$dir"
mkdir -p "$dir/mon" "$dir/osd" "$dir/rgw" "$dir/run" "$dir/log"
: > "$dir/pids"
fsid=$(cat /proc/sys/kernel/random/uuid)
monport=$(free_port)
rgwport=$(free_port)
conf="$dir/ceph.conf"
cat > "$conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$monport
ms bind msgr2 = false
ms bind ipv6 = false
ms bind ipv4 = true
public addr = 127.0.0.1
cluster addr = 127.0.0.1
log to stderr = false
err to stderr = false
mon cluster log to stderr = false
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd objectstore = memstore
memstore device bytes = 2147483648
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
keyring = $dir/keyring
[mon.a]
mon data = $dir/mon
[osd.0]
osd data = $dir/osd
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgwport
rgw data = $dir/rgw
rgw dns name = 127.0.0.1
CONF
trap 'stop' INT TERM
# A failed start stops what it started (the folder is kept for its logs).
fail() {
  echo "ceph-s3: $1 (logs in $dir/log)" >&2
  for f in "$dir"/run/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  exit 1
}
wait_pid() {
  i=0
  while [ ! -s "$dir/run/$1.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  cat "$dir/run/$1.pid" >> "$dir/pids"
}

ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --addv a "[v1:127.0.0.1:$monport]" --fsid "$fsid" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring" || fail "monitor mkfs failed"
ceph-mon -c "$conf" -i a </dev/null >>"$dir/log/daemons.out" 2>&1 || fail "monitor did not start"
wait_pid mon.a
timeout 30 ceph -c "$conf" mon stat >/dev/null 2>&1 || fail "monitor does not answer"
id=$(ceph -c "$conf" osd create) || fail "osd create failed"
# Now and then a fresh OSD is refused by the monitor at its first start ("wrong fsid"): it is made
# again from an empty folder, up to three times.
n=0
until ceph-osd -c "$conf" -i "$id" --mkfs >/dev/null 2>&1 && ceph-osd -c "$conf" -i "$id" </dev/null >>"$dir/log/daemons.out" 2>&1; do
  n=$((n + 1)); [ $n -lt 3 ] || fail "osd did not start"
  rm -rf "$dir/osd" && mkdir -p "$dir/osd"
done
wait_pid "osd.$id"
radosgw -c "$conf" -n client.rgw </dev/null >>"$dir/log/daemons.out" 2>&1 || fail "radosgw did not start"
wait_pid client.rgw
access=apis$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
i=0
until radosgw-admin -c "$conf" user create --uid=apis --display-name=apis --access-key="$access" --secret-key="$secret" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 120 ] || fail "radosgw-admin user create failed"; sleep 0.5
done
i=0
until python3 -c "import urllib.request,sys;urllib.request.urlopen('http://127.0.0.1:$rgwport/',timeout=2)" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 240 ] || fail "radosgw does not answer on 127.0.0.1:$rgwport"; sleep 0.25
done
# The buckets named after DIR (S3 clients such as Bun's make no buckets): a PUT signed the AWS v2 way.
shift 2
for bucket in "$@"; do
  i=0
  until python3 - "$rgwport" "$access" "$secret" "$bucket" 2>>"$dir/log/bucket.err" <<'PY'; do
import base64, hmac, hashlib, sys, urllib.request
from email.utils import formatdate
port, access, secret, bucket = sys.argv[1:5]
date = formatdate(usegmt=True)
sig = base64.b64encode(hmac.new(secret.encode(), f"PUT\n\n\n{date}\n/{bucket}/".encode(), hashlib.sha1).digest()).decode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/{bucket}/", method="PUT", headers={"Date": date, "Authorization": f"AWS {access}:{sig}"})
urllib.request.urlopen(req, timeout=10).read()
PY
    # radosgw answers before its user is seen everywhere: asked again for a while.
    i=$((i + 1)); [ $i -lt 60 ] || fail "creating bucket $bucket failed: $(tail -1 "$dir/log/bucket.err")"; sleep 0.5
  done
done
# With CEPH_S3_OWNER=<pid>, a watcher stops the cluster once that process is gone (a test run that
# was killed before it could stop it).
if [ -n "${CEPH_S3_OWNER:-}" ]; then
  (
    while kill -0 "$CEPH_S3_OWNER" 2>/dev/null; do sleep 2; done
    "$0" stop "$dir"
  ) </dev/null >/dev/null 2>&1 &
fi
trap - INT TERM
echo "S3_ENDPOINT=http://127.0.0.1:$rgwport"
echo "S3_ACCESS_KEY=$access"
echo "S3_SECRET_KEY=$secret"
echo "S3_PIDS=$(tr '\n' ' ' < "$dir/pids")"
