#!/usr/bin/env bash
# Starts the project's YARN stand-in (yarn/standin: one ResourceManager + N NodeManagers in one JVM,
# built on Hadoop 2.7.3's own IPC/SASL/token/FSDownload code from PyPI's pyspark==2.4.8 jars) on
# 127.0.0.1 with free ports. Needs a running HDFS (scripts/hdfs-up.sh): pass its HADOOP_CONF_DIR.
# Writes $PS_YARN_DIR/env with HADOOP_CONF_DIR (core/hdfs/yarn-site.xml); stop with yarn-down.sh.
#   PS_YARN_DIR  state directory (default data/yarn);  PS_YARN_NODES  NodeManagers (default 2)
#   A secure HDFS conf (hadoop.security.authentication=kerberos) makes a secure stand-in: its RM
#   logs in as rm/localhost@PS.TEST from $PS_KDC_DIR/keytabs/rm.keytab (scripts/kdc-up.sh) and
#   its client port takes Kerberos.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STATE=${PS_YARN_DIR:-$ROOT/data/yarn}
NODES=${PS_YARN_NODES:-2}
HDFS_CONF=${1:-${HADOOP_CONF_DIR:-}}
[ -n "$HDFS_CONF" ] && [ -f "$HDFS_CONF/core-site.xml" ] || { echo "yarn-up.sh: pass the HDFS conf dir (or set HADOOP_CONF_DIR)" >&2; exit 1; }
command -v javac >/dev/null || { echo "yarn-up.sh: javac not found (install a JDK, e.g. openjdk-17-jdk-headless)" >&2; exit 1; }
scripts/hdfs-up.sh --jars-only >/dev/null
JARS=$ROOT/data/hadoop-2.7.3
CLASSES=$ROOT/data/yarn-standin-classes
SRC=$ROOT/yarn/standin/psyarn
# Recompile when a source is newer than the build.
if [ ! -f "$CLASSES/.built" ] || [ -n "$(find "$SRC" -newer "$CLASSES/.built" -name '*.java')" ]; then
  rm -rf "$CLASSES" && mkdir -p "$CLASSES"
  javac -nowarn -d "$CLASSES" -cp "$JARS/*:$JARS/proxy/*" "$SRC"/*.java 2>&1 | grep -v '^Note:' || true
  [ -f "$CLASSES/psyarn/Main.class" ] || { echo "yarn-up.sh: compiling the stand-in failed" >&2; exit 1; }
  touch "$CLASSES/.built"
fi
if [ -f "$STATE/run/standin.pid" ] && kill -0 "$(cat "$STATE/run/standin.pid")" 2>/dev/null; then
  echo "yarn-up.sh: already running ($STATE)"; cat "$STATE/env"; exit 0
fi
rm -rf "$STATE" && mkdir -p "$STATE/run" "$STATE/ssl"
# A test CA and a server certificate it signed for 127.0.0.1, for the RM's HTTPS endpoints
# (yarn.http.policy=HTTPS_ONLY). Clients trust ssl/ca.pem through SSL_CERT_FILE.
(
  cd "$STATE/ssl"
  kt() { keytool -storetype PKCS12 -storepass psyarn-test -keyalg RSA -keysize 2048 -validity 30 "$@" >/dev/null 2>&1; }
  kt -genkeypair -keystore ca.p12 -alias ca -dname "CN=psyarn test CA" -ext bc:c
  keytool -exportcert -keystore ca.p12 -storepass psyarn-test -alias ca -rfc -file ca.pem >/dev/null 2>&1
  kt -genkeypair -keystore rm.p12 -alias rm -dname "CN=127.0.0.1"
  keytool -certreq -keystore rm.p12 -storepass psyarn-test -alias rm -file rm.csr >/dev/null 2>&1
  keytool -gencert -keystore ca.p12 -storepass psyarn-test -alias ca -infile rm.csr -outfile rm.pem -rfc \
    -validity 30 -ext SAN=ip:127.0.0.1,dns:localhost -ext EKU=serverAuth >/dev/null 2>&1
  keytool -importcert -keystore rm.p12 -storepass psyarn-test -alias ca -file ca.pem -noprompt >/dev/null 2>&1
  keytool -importcert -keystore rm.p12 -storepass psyarn-test -alias rm -file rm.pem >/dev/null 2>&1
) || { echo "yarn-up.sh: making the test TLS certificates with keytool failed" >&2; exit 1; }
KRB_OPTS=()
if grep -q '<name>hadoop.security.authentication</name><value>kerberos</value>' "$HDFS_CONF/core-site.xml"; then
  [ -n "${KRB5_CONFIG:-}" ] && [ -n "${PS_KDC_DIR:-}" ] || { echo "yarn-up.sh: a secure HDFS needs KRB5_CONFIG and PS_KDC_DIR (scripts/kdc-up.sh)" >&2; exit 1; }
  # Hadoop 2.7 reaches into the JDK's Kerberos internals by reflection; Java 9+ must allow it.
  KRB_OPTS=(-Djava.security.krb5.conf="$KRB5_CONFIG" -Dpsyarn.rm.principal=rm/localhost@PS.TEST
    -Dpsyarn.rm.keytab="$PS_KDC_DIR/keytabs/rm.keytab"
    --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED
    --add-exports=java.security.jgss/sun.security.jgss=ALL-UNNAMED)
fi
(exec java -Xmx384m -XX:TieredStopAtLevel=1 "${KRB_OPTS[@]}" -cp "$CLASSES:$JARS:$JARS/*:$JARS/proxy/*" psyarn.Main "$STATE" "$NODES" "$HDFS_CONF") \
  >"$STATE/standin.out" 2>&1 &
echo $! > "$STATE/run/standin.pid"
for _ in $(seq 1 120); do
  if grep -q '^READY' "$STATE/standin.out" 2>/dev/null; then
    printf 'export HADOOP_CONF_DIR=%s\n' "$STATE/conf" > "$STATE/env"
    cat "$STATE/env"
    exit 0
  fi
  kill -0 "$(cat "$STATE/run/standin.pid")" 2>/dev/null || { echo "yarn-up.sh: the stand-in died:" >&2; tail -30 "$STATE/standin.out" >&2; exit 1; }
  sleep 0.25
done
echo "yarn-up.sh: the stand-in did not start within 30 s; see $STATE/standin.out" >&2
exit 1
