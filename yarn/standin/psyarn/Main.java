package psyarn;

import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A YARN stand-in for tests: a ResourceManager (two for HA) and N NodeManagers in one JVM on 127.0.0.1, built
 * on Hadoop 2.7.3's own IPC server, SASL, token identifiers and secret managers, PB service
 * wrappers and FSDownload. Only the scheduling (hand out containers, run them as local processes)
 * is ours. Usage: Main STATE_DIR NODES HDFS_CONF_DIR. Writes STATE_DIR/conf/{core,yarn}-site.xml,
 * prints "READY" and runs until killed.
 */
public final class Main {
  static {
    // Before any YarnConfiguration is touched (it logs).
    org.apache.log4j.BasicConfigurator.configure(new org.apache.log4j.varia.NullAppender());
    org.apache.log4j.Logger.getRootLogger().setLevel(org.apache.log4j.Level.WARN);
  }

  public static void main(String[] args) throws Exception {
    try {
      run(args);
    } catch (Throwable t) {
      t.printStackTrace();
      // IPC threads are not daemons: exit explicitly or the JVM hangs.
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    File root = new File(args[0]).getAbsoluteFile();
    int n = Integer.parseInt(args[1]);
    File hdfsConf = new File(args[2]);
    File confDir = new File(root, "conf");
    confDir.mkdirs();
    Configuration conf = new YarnConfiguration();
    conf.addResource(new org.apache.hadoop.fs.Path(new File(hdfsConf, "core-site.xml").getAbsolutePath()));
    conf.addResource(new org.apache.hadoop.fs.Path(new File(hdfsConf, "hdfs-site.xml").getAbsolutePath()));
    // A secure HDFS (hadoop.security.authentication=kerberos): the RM logs in from its keytab
    // (system properties psyarn.rm.principal and psyarn.rm.keytab) and its client port takes
    // Kerberos, as a secure cluster's does.
    boolean secure = "kerberos".equals(conf.get(CommonConfigurationKeysPublic.HADOOP_SECURITY_AUTHENTICATION));
    String rmPrincipal = System.getProperty("psyarn.rm.principal");
    if (secure) {
      conf.set(YarnConfiguration.RM_PRINCIPAL, rmPrincipal);
      org.apache.hadoop.security.UserGroupInformation.setConfiguration(conf);
      org.apache.hadoop.security.UserGroupInformation.loginUserFromKeytab(rmPrincipal,
          System.getProperty("psyarn.rm.keytab"));
    }
    // What the real RM and NM do: their RPC servers accept token authentication only.
    Configuration serverConf = new Configuration(conf);
    serverConf.set(CommonConfigurationKeysPublic.HADOOP_SECURITY_AUTHENTICATION, "TOKEN");
    Rm rm = new Rm(root, confDir.getAbsolutePath(), conf);
    // Each token-authenticated server gets its own hadoop.rpc.protection, so every job exercises
    // all three SASL qops: the scheduler port privacy (auth-conf), node 0 integrity (auth-int),
    // the other nodes authentication (auth).
    rm.start(withProtection(serverConf, "privacy"), "127.0.0.1");
    org.apache.hadoop.yarn.server.security.MasterKeyData nmKey = rm.nmTokens.key();
    for (int i = 0; i < n; i++) {
      Configuration nodeConf = withProtection(serverConf, i == 0 ? "integrity" : "authentication");
      rm.nodes.add(new Node(rm, i, nodeConf, conf, rm.containerTokens, nmKey, root));
    }
    File keystore = new File(root, "ssl/rm.p12");
    Rest rest = new Rest(rm, "127.0.0.1", keystore.exists() ? keystore : null, "psyarn-test".toCharArray());
    // The client port authenticates as the HDFS conf says: SIMPLE on an insecure cluster, Kerberos on a secure one.
    Clients clients = new Clients(rm, conf, "127.0.0.1", false);
    String client = "127.0.0.1:" + clients.server.getListenerAddress().getPort();
    Clients clients2 = new Clients(rm, conf, "127.0.0.1", false);
    String client2 = "127.0.0.1:" + clients2.server.getListenerAddress().getPort();
    // For HA tests: a client port that answers StandbyException (not a key Hadoop reads).
    Clients standby = new Clients(rm, conf, "127.0.0.1", true);
    String standbyAddr = "127.0.0.1:" + standby.server.getListenerAddress().getPort();
    String sched = "127.0.0.1:" + rm.schedulers[0].server.getListenerAddress().getPort();
    String sched2 = "127.0.0.1:" + rm.schedulers[1].server.getListenerAddress().getPort();
    String web = "127.0.0.1:" + rest.http.getAddress().getPort();
    // Hadoop's own web proxy (WebAppProxy, as `yarn proxyserver` runs it) in front of the AMs'
    // tracking URLs, reading application reports from the client port over IPC. Not on a secure
    // cluster (it would need its own Kerberos principal).
    String proxy = secure ? null : startWebProxy(conf, client);
    try (PrintWriter w = new PrintWriter(new FileWriter(new File(confDir, "yarn-site.xml")))) {
      w.println("<configuration>");
      w.println(prop("yarn.resourcemanager.hostname", "127.0.0.1"));
      w.println(prop("yarn.resourcemanager.address", client));
      w.println(prop("psyarn.standby.address", standbyAddr));
      w.println(prop("yarn.resourcemanager.scheduler.address", sched));
      w.println(prop("yarn.resourcemanager.webapp.address", web));
      if (proxy != null) {
        w.println(prop("yarn.web-proxy.address", proxy));
      }
      // ResourceManager HA, as a cluster's yarn-site.xml sets it: two RMs sharing the
      // applications; a failover moves one application between them (see Rm.failover).
      if (secure) {
        w.println(prop("yarn.resourcemanager.principal", rmPrincipal));
      }
      w.println(prop("yarn.resourcemanager.ha.enabled", "true"));
      w.println(prop("yarn.resourcemanager.ha.rm-ids", "rm1,rm2"));
      w.println(prop("yarn.resourcemanager.address.rm1", client));
      w.println(prop("yarn.resourcemanager.address.rm2", client2));
      w.println(prop("yarn.resourcemanager.scheduler.address.rm1", sched));
      w.println(prop("yarn.resourcemanager.scheduler.address.rm2", sched2));
      w.println(prop("yarn.resourcemanager.webapp.address.rm1", web));
      w.println(prop("yarn.resourcemanager.webapp.address.rm2", web));
      if (rest.https != null) {
        // Used by clients only with yarn.http.policy=HTTPS_ONLY (tests set it in a copy).
        String webs = "127.0.0.1:" + rest.https.getAddress().getPort();
        w.println(prop("yarn.resourcemanager.webapp.https.address", webs));
        w.println(prop("yarn.resourcemanager.webapp.https.address.rm1", webs));
        w.println(prop("yarn.resourcemanager.webapp.https.address.rm2", webs));
      }
      w.println("</configuration>");
    }
    java.nio.file.Files.copy(new File(hdfsConf, "core-site.xml").toPath(), new File(confDir, "core-site.xml").toPath(),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    java.nio.file.Files.copy(new File(hdfsConf, "hdfs-site.xml").toPath(), new File(confDir, "hdfs-site.xml").toPath(),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    rm.log("ready: client " + client + ", scheduler " + sched + ", web " + web + ", " + n + " nodes");
    System.out.println("READY " + sched + " " + web);
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      for (Rm.App a : rm.apps.values()) {
        rm.killAll(a, true);
      }
    }));
    Thread.currentThread().join();
  }

  /** Starts Hadoop's WebAppProxy on a free loopback port; returns its address. */
  private static String startWebProxy(Configuration base, String clientAddr) throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    String addr = "127.0.0.1:" + port;
    Configuration c = new YarnConfiguration(base);
    c.set(YarnConfiguration.PROXY_ADDRESS, addr);
    c.set(YarnConfiguration.RM_ADDRESS, clientAddr);
    c.setBoolean(YarnConfiguration.RM_HA_ENABLED, false);
    org.apache.hadoop.yarn.server.webproxy.WebAppProxy proxy = new org.apache.hadoop.yarn.server.webproxy.WebAppProxy();
    proxy.init(c);
    proxy.start();
    return addr;
  }

  private static Configuration withProtection(Configuration base, String qop) {
    Configuration c = new Configuration(base);
    c.set(CommonConfigurationKeysPublic.HADOOP_RPC_PROTECTION, qop);
    return c;
  }

  private static String prop(String k, String v) {
    return "  <property><name>" + k + "</name><value>" + v + "</value></property>";
  }
}
