#!/usr/bin/env bash
# Starts an MIT Kerberos KDC for tests (realm PS.TEST on 127.0.0.1, a free port, TCP and UDP),
# from Debian's krb5-kdc / krb5-admin-server / krb5-user (installed here when missing and apt
# can). Creates the service principals nn/, dn/, HTTP/ and rm/localhost and the users alice and
# bob, each with a keytab in $PS_KDC_DIR/keytabs/<name>.keytab. Prints and writes
# `export KRB5_CONFIG=...` to $PS_KDC_DIR/env; stop it with scripts/kdc-down.sh.
#   PS_KDC_DIR  state directory (default data/kdc)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STATE=${PS_KDC_DIR:-$ROOT/data/kdc}
REALM=PS.TEST

if ! command -v krb5kdc >/dev/null || ! command -v kadmin.local >/dev/null || ! command -v kinit >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "kdc-up.sh: installing krb5-kdc krb5-admin-server krb5-user" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q krb5-kdc krb5-admin-server krb5-user >/dev/null 2>&1 ||
      { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q krb5-kdc krb5-admin-server krb5-user >/dev/null 2>&1; } ||
      { echo "kdc-up.sh: installing the Kerberos packages failed" >&2; exit 1; }
  else
    echo "kdc-up.sh: krb5kdc, kadmin.local and kinit are needed (Debian: krb5-kdc krb5-admin-server krb5-user)" >&2
    exit 1
  fi
fi
PATH=$PATH:/usr/sbin
if [ -f "$STATE/run/kdc.pid" ] && kill -0 "$(cat "$STATE/run/kdc.pid")" 2>/dev/null; then
  echo "kdc-up.sh: already running ($STATE)"; cat "$STATE/env"; exit 0
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -rf "$STATE" && mkdir -p "$STATE"/{db,keytabs,run,ccache}
cat > "$STATE/krb5.conf" <<CONF
[libdefaults]
  default_realm = $REALM
  dns_lookup_realm = false
  dns_lookup_kdc = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
  ticket_lifetime = 24h
  renew_lifetime = 7d
  forwardable = true
  default_ccache_name = FILE:$STATE/ccache/krb5cc_%{uid}
[realms]
  $REALM = {
    kdc = 127.0.0.1:$PORT
    admin_server = 127.0.0.1:$PORT
  }
[domain_realm]
  localhost = $REALM
  127.0.0.1 = $REALM
CONF
cat > "$STATE/kdc.conf" <<CONF
[kdcdefaults]
  kdc_ports = $PORT
  kdc_tcp_listen = $PORT
[realms]
  $REALM = {
    database_name = $STATE/db/principal
    key_stash_file = $STATE/db/stash
    acl_file = $STATE/db/kadm5.acl
    max_life = 24h
    max_renewable_life = 7d
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }
[logging]
  kdc = FILE:$STATE/kdc.log
CONF
: > "$STATE/db/kadm5.acl"
export KRB5_CONFIG=$STATE/krb5.conf KRB5_KDC_PROFILE=$STATE/kdc.conf
kdb5_util create -s -r "$REALM" -P "ps-test-master" >/dev/null 2>&1 || { echo "kdc-up.sh: kdb5_util create failed" >&2; exit 1; }
for p in nn/localhost dn/localhost HTTP/localhost rm/localhost alice bob; do
  kadmin.local -q "addprinc -randkey $p@$REALM" >/dev/null 2>&1
  kadmin.local -q "ktadd -k $STATE/keytabs/${p%%/*}.keytab $p@$REALM" >/dev/null 2>&1
done
# The HDFS daemons read one keytab with their own and the SPNEGO principal.
kadmin.local -q "ktadd -norandkey -k $STATE/keytabs/hdfs.keytab nn/localhost@$REALM dn/localhost@$REALM HTTP/localhost@$REALM" >/dev/null 2>&1
krb5kdc -r "$REALM" -P "$STATE/run/kdc.pid" || { echo "kdc-up.sh: krb5kdc did not start; see $STATE/kdc.log" >&2; exit 1; }
for _ in $(seq 1 40); do
  if KRB5CCNAME="FILE:$STATE/ccache/probe" kinit -kt "$STATE/keytabs/alice.keytab" "alice@$REALM" 2>/dev/null; then
    rm -f "$STATE/ccache/probe"
    printf 'export KRB5_CONFIG=%s\nexport PS_KDC_DIR=%s\n' "$STATE/krb5.conf" "$STATE" > "$STATE/env"
    cat "$STATE/env"
    exit 0
  fi
  sleep 0.25
done
echo "kdc-up.sh: the KDC does not issue tickets; see $STATE/kdc.log" >&2
exit 1
