#!/usr/bin/env bash
# Starts a real single-node HDFS (Hadoop 2.7.3 NameNode + DataNode, from the jars inside PyPI's
# pyspark==2.4.8 source distribution) on 127.0.0.1 with free ports, for tests and benchmarks.
# Prints and writes `export HDFS_URL=hdfs://127.0.0.1:PORT` (and HADOOP_CONF_DIR) to
# $PS_HDFS_DIR/env; stop it with scripts/hdfs-down.sh. Needs Java (8+) and python3.
#   PS_HDFS_DIR  state directory (default data/hdfs); jars are cached in data/hadoop-2.7.3.
#   PS_HDFS_BLOCK_SIZE  dfs.blocksize (default Hadoop's 128m). The NameNode refuses a new block
#     unless the DataNode's free disk covers every block being written at 128 MB each, so tests
#     that write many small files at once on a small disk want less (scripts/test.sh: 4m).
#   PS_HDFS_SECURE=1  secure mode (Kerberos) against the test KDC of scripts/kdc-up.sh (KRB5_CONFIG
#     and PS_KDC_DIR from its env): principals nn/ and dn/localhost@PS.TEST mapped to the HDFS
#     superuser `hdfs`, block access tokens on, and Hadoop's ignore.secure.ports.for.testing
#     instead of privileged DataNode ports.
#   PS_HDFS_TOKEN_RENEW_MS / PS_HDFS_TOKEN_MAX_MS  (secure mode) the NameNode's delegation-token
#     renew interval and maximum lifetime (Hadoop's defaults: 1 day, 7 days), for tests of jobs
#     that outlive their tokens.
#   PS_HDFS_HA=1  NameNode HA: nameservice `ns1` of NameNodes nn1 and nn2 (both on 127.0.0.1)
#     sharing an edits directory, manual failover (no ZooKeeper; fencing is a no-op, both run
#     here), nn1 made active with Hadoop's own DFSHAAdmin; HDFS_URL is then hdfs://ns1. Fail
#     over with `DFSHAAdmin -failover nn1 nn2` ($STATE/haadmin.sh does it with the right class
#     path and, when secure, the HDFS superuser's ticket).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STATE=${PS_HDFS_DIR:-$ROOT/data/hdfs}
JARS=$ROOT/data/hadoop-2.7.3
JAR_NAMES="hadoop-hdfs-2.7.3 hadoop-common-2.7.3 hadoop-auth-2.7.3 hadoop-annotations-2.7.3 guava-14.0.1
protobuf-java-2.5.0 htrace-core-3.1.0-incubating jetty-6.1.26 jetty-util-6.1.26 javax.servlet-api-3.1.0
netty-all-4.1.47.Final jackson-core-asl-1.9.13 jackson-mapper-asl-1.9.13 xercesImpl-2.9.1 commons-cli-1.2
commons-lang-2.6 commons-collections-3.2.2 commons-configuration-1.6 commons-io-2.4 commons-logging-1.1.3
commons-codec-1.10 javax.ws.rs-api-2.0.1 xmlenc-0.52 log4j-1.2.17 slf4j-api-1.7.16 slf4j-log4j12-1.7.16
hadoop-yarn-api-2.7.3 hadoop-yarn-common-2.7.3 hadoop-yarn-server-common-2.7.3"
# Hadoop's web proxy and what it needs (HTTP client, a JAX-RS implementation), for the YARN
# stand-in only: in proxy/, outside the HDFS daemons' class path.
PROXY_JAR_NAMES="hadoop-yarn-server-web-proxy-2.7.3 httpclient-4.5.6 httpcore-4.4.10 jersey-common-2.22.2
jersey-guava-2.22.2 hk2-api-2.4.0-b34 hk2-locator-2.4.0-b34 hk2-utils-2.4.0-b34 javax.inject-2.4.0-b34
aopalliance-repackaged-2.4.0-b34 javax.annotation-api-1.2 osgi-resource-locator-1.0.1"

command -v java >/dev/null || { echo "hdfs-up.sh: java not found (install a JRE, e.g. openjdk-17-jre-headless)" >&2; exit 1; }
if [ "${1:-}" != "--jars-only" ] && [ -f "$STATE/run/namenode.pid" ] && kill -0 "$(cat "$STATE/run/namenode.pid")" 2>/dev/null; then
  echo "hdfs-up.sh: already running ($STATE)"; cat "$STATE/env"; exit 0
fi

# .complete-3 marks the set with the YARN jars (scripts/yarn-up.sh compiles against them) and
# Hadoop's web proxy.
if [ ! -f "$JARS/.complete-3" ]; then
  echo "hdfs-up.sh: fetching Hadoop 2.7.3 jars (PyPI pyspark==2.4.8 sdist, 220 MB, once)"
  DL=$ROOT/data/_dl
  mkdir -p "$DL" "$JARS"
  if [ ! -f "$DL/pyspark-2.4.8.tar.gz" ]; then
    [ -x "$ROOT/data/.venv-hdfs/bin/pip" ] || python3 -m venv "$ROOT/data/.venv-hdfs"
    "$ROOT/data/.venv-hdfs/bin/pip" install -q wheel
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$ROOT/data/.venv-hdfs/bin/pip" download -q --no-deps --no-binary :all: pyspark==2.4.8 -d "$DL"
  fi
  members=$(for j in $JAR_NAMES; do printf 'pyspark-2.4.8/deps/jars/%s.jar ' "$j"; done)
  # shellcheck disable=SC2086
  tar -xzf "$DL/pyspark-2.4.8.tar.gz" -C "$JARS" --strip-components=3 $members
  members=$(for j in $PROXY_JAR_NAMES; do printf 'pyspark-2.4.8/deps/jars/%s.jar ' "$j"; done)
  mkdir -p "$JARS/proxy"
  # shellcheck disable=SC2086
  tar -xzf "$DL/pyspark-2.4.8.tar.gz" -C "$JARS/proxy" --strip-components=3 $members
  # hadoop-hdfs.jar lacks its web apps; the servers only need the folders on the classpath.
  for w in hdfs datanode secondary proxy; do mkdir -p "$JARS/webapps/$w" && touch "$JARS/webapps/$w/.keep"; done
  touch "$JARS/.complete-3"
fi
[ "${1:-}" = "--jars-only" ] && exit 0

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NN=$(free_port); NNH=$(free_port); NN2=$(free_port); NNH2=$(free_port); SNN=$(free_port); DN=$(free_port); DNH=$(free_port); DNI=$(free_port)
rm -rf "$STATE"
mkdir -p "$STATE"/{conf,name,data,logs,run}
# Say so up front when writes will be refused for space ("could only be replicated to 0 nodes").
FREE_MB=$(df -Pm "$STATE/data" | awk 'NR==2 {print $4}')
BLOCK_MB=$(( ${PS_HDFS_BLOCK_SIZE:-134217728} / 1048576 ))
if [ "${FREE_MB:-0}" -lt $(( 32 * BLOCK_MB )) ]; then
  echo "hdfs-up.sh: warning: $FREE_MB MB free under $STATE/data: fewer than 32 blocks of $BLOCK_MB MB can be written at once" >&2
fi
HA=${PS_HDFS_HA:-0}
FS=hdfs://127.0.0.1:$NN
[ "$HA" = 1 ] && FS=hdfs://ns1
prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }
SECURE=${PS_HDFS_SECURE:-0}
if [ "$SECURE" = 1 ]; then
  [ -n "${KRB5_CONFIG:-}" ] && [ -n "${PS_KDC_DIR:-}" ] || { echo "hdfs-up.sh: PS_HDFS_SECURE=1 needs KRB5_CONFIG and PS_KDC_DIR (scripts/kdc-up.sh)" >&2; exit 1; }
  KT=$PS_KDC_DIR/keytabs/hdfs.keytab
fi
{
  echo "<configuration>"
  prop fs.defaultFS "$FS"
  if [ "$SECURE" = 1 ]; then
    prop hadoop.security.authentication kerberos
    # Every RPC sealed (GSSAPI or DIGEST-MD5 privacy), as hardened clusters run it.
    prop hadoop.rpc.protection privacy
    # The daemons' principals are the HDFS superuser `hdfs`; users map to their own names.
    prop hadoop.security.auth_to_local 'RULE:[2:$1@$0]([nd]n@PS.TEST)s/.*/hdfs/
DEFAULT'
  fi
  echo "</configuration>"
} > "$STATE/conf/core-site.xml"
{
  echo "<configuration>"
  prop dfs.replication 1
  prop dfs.blocksize "${PS_HDFS_BLOCK_SIZE:-134217728}"
  prop dfs.namenode.name.dir "$STATE/name"
  prop dfs.datanode.data.dir "$STATE/data"
  prop dfs.permissions.enabled true
  if [ "$HA" = 1 ]; then
    prop dfs.nameservices ns1
    prop dfs.ha.namenodes.ns1 nn1,nn2
    prop dfs.namenode.rpc-address.ns1.nn1 "127.0.0.1:$NN"
    prop dfs.namenode.rpc-address.ns1.nn2 "127.0.0.1:$NN2"
    prop dfs.namenode.http-address.ns1.nn1 "127.0.0.1:$NNH"
    prop dfs.namenode.http-address.ns1.nn2 "127.0.0.1:$NNH2"
    prop dfs.namenode.shared.edits.dir "file://$STATE/shared-edits"
    prop dfs.client.failover.proxy.provider.ns1 org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider
    prop dfs.ha.fencing.methods 'shell(/bin/true)'
    prop dfs.ha.automatic-failover.enabled false
    # The standby keeps up with the shared edits every second, so a failover is quick.
    prop dfs.ha.tail-edits.period 1
  else
    prop dfs.namenode.rpc-address "127.0.0.1:$NN"
    prop dfs.namenode.http-address "127.0.0.1:$NNH"
  fi
  prop dfs.namenode.secondary.http-address "127.0.0.1:$SNN"
  prop dfs.datanode.address "127.0.0.1:$DN"
  prop dfs.datanode.http.address "127.0.0.1:$DNH"
  prop dfs.datanode.ipc.address "127.0.0.1:$DNI"
  prop dfs.datanode.hostname 127.0.0.1
  prop dfs.namenode.datanode.registration.ip-hostname-check false
  prop dfs.namenode.safemode.threshold-pct 0
  prop dfs.namenode.safemode.extension 0
  prop dfs.webhdfs.enabled false
  if [ "$SECURE" = 1 ]; then
    prop dfs.block.access.token.enable true
    prop dfs.namenode.kerberos.principal nn/localhost@PS.TEST
    prop dfs.namenode.keytab.file "$KT"
    prop dfs.datanode.kerberos.principal dn/localhost@PS.TEST
    prop dfs.datanode.keytab.file "$KT"
    prop dfs.web.authentication.kerberos.principal HTTP/localhost@PS.TEST
    prop dfs.web.authentication.kerberos.keytab "$KT"
    prop dfs.namenode.kerberos.internal.spnego.principal HTTP/localhost@PS.TEST
    prop ignore.secure.ports.for.testing true
    if [ -n "${PS_HDFS_TOKEN_RENEW_MS:-}" ]; then prop dfs.namenode.delegation.token.renew-interval "$PS_HDFS_TOKEN_RENEW_MS"; fi
    if [ -n "${PS_HDFS_TOKEN_MAX_MS:-}" ]; then prop dfs.namenode.delegation.token.max-lifetime "$PS_HDFS_TOKEN_MAX_MS"; fi
  fi
  echo "</configuration>"
} > "$STATE/conf/hdfs-site.xml"
cat > "$STATE/conf/log4j.properties" <<'LOG'
log4j.rootLogger=INFO,F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=${hadoop.log.dir}/${hadoop.log.file}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
LOG

CP="$STATE/conf:$JARS:$JARS/*"
# `exec` so that the recorded PID is the JVM's own, not a subshell's.
KRB_OPTS=()
# Hadoop 2.7 reaches into the JDK's Kerberos internals by reflection; Java 9+ must allow it.
[ "$SECURE" = 1 ] && KRB_OPTS=(-Djava.security.krb5.conf="$KRB5_CONFIG" -Dsun.security.krb5.disableReferrals=true
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.jgss=ALL-UNNAMED --add-exports=java.base/sun.net.dns=ALL-UNNAMED)
jvm() { exec java -Xmx512m "${KRB_OPTS[@]}" -Dhadoop.log.dir="$STATE/logs" -Dhadoop.log.file="$1.log" -cp "$CP" "${@:2}"; }
if [ "$HA" = 1 ]; then
  # Both NameNodes listen on 127.0.0.1, so each is told which it is; nn2 starts from a copy of
  # nn1's freshly formatted directory (what -bootstrapStandby would download).
  mkdir -p "$STATE/shared-edits"
  (jvm format org.apache.hadoop.hdfs.server.namenode.NameNode -Ddfs.ha.namenode.id=nn1 -format -nonInteractive -force) >/dev/null 2>&1
  cp -a "$STATE/name" "$STATE/name2"
  (jvm namenode org.apache.hadoop.hdfs.server.namenode.NameNode -Ddfs.ha.namenode.id=nn1) >"$STATE/logs/namenode.out" 2>&1 &
  echo $! > "$STATE/run/namenode.pid"
  (jvm namenode2 org.apache.hadoop.hdfs.server.namenode.NameNode -Ddfs.ha.namenode.id=nn2 -Ddfs.namenode.name.dir="$STATE/name2") >"$STATE/logs/namenode2.out" 2>&1 &
  echo $! > "$STATE/run/namenode2.pid"
  {
    echo '#!/usr/bin/env bash'
    echo '# DFSHAAdmin of this HA pair, e.g. `haadmin.sh -failover nn1 nn2`, `haadmin.sh -getServiceState nn2`.'
    if [ "$SECURE" = 1 ]; then
      echo "export KRB5CCNAME=FILE:$STATE/run/hdfs.ccache"
      echo "kinit -kt '$KT' nn/localhost@PS.TEST || exit 1"
    fi
    printf 'exec java -Xmx256m'; for o in "${KRB_OPTS[@]}"; do printf " '%s'" "$o"; done
    echo " -Dhadoop.log.dir='$STATE/logs' -Dhadoop.log.file=haadmin.log -cp '$CP' org.apache.hadoop.hdfs.tools.DFSHAAdmin \"\$@\""
  } > "$STATE/haadmin.sh"
  chmod +x "$STATE/haadmin.sh"
  active=0
  for _ in $(seq 1 120); do
    if "$STATE/haadmin.sh" -transitionToActive nn1 >"$STATE/logs/haadmin.out" 2>&1; then active=1; break; fi
    sleep 0.5
  done
  if [ "$active" != 1 ]; then
    echo "hdfs-up.sh: DFSHAAdmin could not make nn1 active within 60 s; see $STATE/logs/haadmin.out" >&2
    tail -5 "$STATE/logs/haadmin.out" >&2 || true
    scripts/hdfs-down.sh >/dev/null 2>&1 || true
    exit 1
  fi
else
  (jvm format org.apache.hadoop.hdfs.server.namenode.NameNode -format -nonInteractive -force) >/dev/null 2>&1
  (jvm namenode org.apache.hadoop.hdfs.server.namenode.NameNode) >"$STATE/logs/namenode.out" 2>&1 &
  echo $! > "$STATE/run/namenode.pid"
fi
(jvm datanode org.apache.hadoop.hdfs.server.datanode.DataNode) >"$STATE/logs/datanode.out" 2>&1 &
echo $! > "$STATE/run/datanode.pid"

# Writable once the DataNode has sent its first block report.
for _ in $(seq 1 120); do
  reports=$(grep -c "Successfully sent block report" "$STATE/logs/datanode.log" 2>/dev/null || true)
  if [ "${reports:-0}" -gt "$HA" ]; then
    printf 'export HDFS_URL=%s\nexport HADOOP_CONF_DIR=%s\n' "$FS" "$STATE/conf" > "$STATE/env"
    cat "$STATE/env"
    exit 0
  fi
  for p in namenode datanode $([ "$HA" = 1 ] && echo namenode2); do
    kill -0 "$(cat "$STATE/run/$p.pid")" 2>/dev/null || { echo "hdfs-up.sh: the $p died; see $STATE/logs/$p.log" >&2; tail -20 "$STATE/logs/$p.log" >&2 || true; scripts/hdfs-down.sh >/dev/null 2>&1 || true; exit 1; }
  done
  sleep 0.5
done
echo "hdfs-up.sh: HDFS did not become writable within 60 s; see $STATE/logs" >&2
scripts/hdfs-down.sh >/dev/null 2>&1 || true
exit 1
