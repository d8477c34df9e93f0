package psyarn;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.DataInputByteBuffer;
import org.apache.hadoop.ipc.Server;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.ContainerManagementProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.*;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.ipc.YarnRPC;
import org.apache.hadoop.yarn.security.ContainerTokenIdentifier;
import org.apache.hadoop.yarn.security.NMTokenIdentifier;
import org.apache.hadoop.yarn.util.FSDownload;

/**
 * One NodeManager: Hadoop's IPC server for ContainerManagementProtocol with NMToken SASL, container
 * token checks, FSDownload localization (size and timestamp enforced), and containers run as local
 * processes whose exit is reported to the ResourceManager.
 */
final class Node implements ContainerManagementProtocol {
  final NodeId id;
  final int httpPort;
  /** The stand-in's topology (ours): node i is on rack `/rack-i`. */
  final String rack;
  private final Rm rm;
  private final Tokens.Containers containerTokens;
  private final File root;
  private final Configuration conf;
  private final Server server;
  final Map<ContainerId, Process> running = new ConcurrentHashMap<>();
  final Map<ContainerId, ContainerStatus> finished = new ConcurrentHashMap<>();
  final java.util.Set<ContainerId> stopped = ConcurrentHashMap.newKeySet();

  Node(Rm rm, int index, Configuration serverConf, Configuration conf, Tokens.Containers containerTokens,
      org.apache.hadoop.yarn.server.security.MasterKeyData nmKey, File root) throws IOException {
    this.rm = rm;
    this.conf = conf;
    this.containerTokens = containerTokens;
    this.root = new File(root, "node-" + index);
    this.root.mkdirs();
    // Port 0: the node id (and so the NMToken check) is known once the server is bound.
    Tokens.NodeNm nmTokens = new Tokens.NodeNm(nmKey, NodeId.newInstance("127.0.0.1", 0));
    this.server = YarnRPC.create(serverConf).getServer(ContainerManagementProtocol.class, this,
        new InetSocketAddress("127.0.0.1", 0), serverConf, nmTokens, 4);
    this.server.start();
    this.id = NodeId.newInstance("127.0.0.1", server.getListenerAddress().getPort());
    this.httpPort = 8042 + index;
    this.rack = "/rack-" + index;
    nmTokens.setNode(this.id);
  }

  void stop() {
    for (Process p : running.values()) {
      p.destroyForcibly();
    }
    server.stop();
  }

  /** The caller's NMToken (SASL authenticated it); must be for an attempt the RM knows. */
  private NMTokenIdentifier caller() throws YarnException, IOException {
    for (TokenIdentifier t : UserGroupInformation.getCurrentUser().getTokenIdentifiers()) {
      if (t instanceof NMTokenIdentifier) {
        return (NMTokenIdentifier) t;
      }
    }
    throw new YarnException("no NMToken in the connection");
  }

  @Override
  public StartContainersResponse startContainers(StartContainersRequest request) throws YarnException, IOException {
    NMTokenIdentifier nm = caller();
    List<ContainerId> ok = new ArrayList<>();
    Map<ContainerId, SerializedException> failed = new HashMap<>();
    for (StartContainerRequest r : request.getStartContainerRequests()) {
      ContainerTokenIdentifier ct;
      try {
        ct = BuilderToken.verify(containerTokens, r.getContainerToken());
      } catch (Exception e) {
        throw new YarnException("container token rejected: " + e.getMessage());
      }
      ContainerId cid = ct.getContainerID();
      if (!cid.getApplicationAttemptId().equals(nm.getApplicationAttemptId())) {
        failed.put(cid, SerializedException.newInstance(new YarnException("container " + cid
            + " does not belong to " + nm.getApplicationAttemptId())));
        continue;
      }
      try {
        launch(cid, r.getContainerLaunchContext(), ct.getApplicationSubmitter(), new HashMap<String, String>());
        ok.add(cid);
      } catch (Exception e) {
        rm.log("node " + id + ": " + cid + " failed to start: " + e);
        failed.put(cid, SerializedException.newInstance(e));
        rm.containerDone(cid, ContainerStatus.newInstance(cid, ContainerState.COMPLETE,
            "Container failed to start: " + e.getMessage(), -1000));
      }
    }
    return StartContainersResponse.newInstance(new HashMap<String, ByteBuffer>(), ok, failed);
  }

  /**
   * Localizes, writes the token file and runs the command; also used for the AM container. Like the
   * real NM's localizer, resources are read from HDFS as the application's user (so a private staging
   * directory works for its owner only), and the token file is readable by that user only.
   */
  void launch(ContainerId cid, ContainerLaunchContext clc, String user, Map<String, String> extraEnv)
      throws Exception {
    String app = cid.getApplicationAttemptId().getApplicationId().toString();
    File dir = new File(root, "local/" + app + "/" + cid);
    File logs = new File(rm.logRoot(), app + "/" + cid);
    dir.mkdirs();
    logs.mkdirs();
    FileContext fc = FileContext.getLocalFSFileContext(conf);
    new File(root, "cache/" + cid).mkdirs();
    Credentials creds = new Credentials();
    if (clc.getTokens() != null) {
      DataInputByteBuffer in = new DataInputByteBuffer();
      in.reset(clc.getTokens().duplicate());
      creds.readTokenStorageStream(in);
    }
    // As the real NM's localizer: the application's user, holding the application's tokens (on a
    // secure cluster, its HDFS delegation token is the only way in).
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
    ugi.addCredentials(creds);
    for (Map.Entry<String, LocalResource> e : clc.getLocalResources().entrySet()) {
      Path dest = new Path(new File(root, "cache/" + cid + "/" + e.getKey()).getAbsolutePath());
      Path got = new FSDownload(fc, ugi, conf, dest, e.getValue()).call();
      Files.createSymbolicLink(new File(dir, e.getKey()).toPath(), new File(got.toUri().getPath()).toPath());
    }
    File tokens = new File(dir, "container_tokens");
    // file:// explicitly: the configuration's default file system is HDFS.
    creds.writeTokenStorageFile(new Path("file://" + tokens.getAbsolutePath()), conf);
    java.nio.file.Files.setPosixFilePermissions(tokens.toPath(),
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    Map<String, String> env = new HashMap<>();
    // The NodeManager's own variables first; the application's may not override them.
    env.putAll(clc.getEnvironment());
    env.putAll(extraEnv);
    env.put("CONTAINER_ID", cid.toString());
    env.put("NM_HOST", id.getHost());
    env.put("NM_PORT", Integer.toString(id.getPort()));
    env.put("NM_HTTP_PORT", Integer.toString(httpPort));
    env.put("LOCAL_DIRS", dir.getAbsolutePath());
    env.put("LOG_DIRS", logs.getAbsolutePath());
    env.put("PWD", dir.getAbsolutePath());
    env.put("HADOOP_TOKEN_FILE_LOCATION", tokens.getAbsolutePath());
    env.put("HADOOP_CONF_DIR", rm.confDir());
    if (UserGroupInformation.isSecurityEnabled()) {
      // No Kerberos ticket reaches a container: only the application's tokens do.
      env.put("KRB5CCNAME", "FILE:" + new File(dir, "no-ticket").getAbsolutePath());
    }
    StringBuilder cmd = new StringBuilder();
    for (String c : clc.getCommands()) {
      cmd.append(c).append(' ');
    }
    String command = expand(cmd.toString().replace("<LOG_DIR>", logs.getAbsolutePath()), env);
    ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).directory(dir);
    pb.environment().putAll(env);
    pb.redirectOutput(new File(logs, "launch.out"));
    pb.redirectError(new File(logs, "launch.err"));
    Process p = pb.start();
    running.put(cid, p);
    rm.log("node " + id + ": started " + cid + ": " + command);
    Thread w = new Thread(() -> {
      int code;
      try {
        code = p.waitFor();
      } catch (InterruptedException e) {
        code = -1000;
      }
      running.remove(cid);
      int exit = stopped.contains(cid) ? -105 : code;
      String diag = exit == 0 ? "" : stopped.contains(cid) ? "Container killed by the ApplicationMaster."
          : "Exception from container-launch. Exit code: " + code + ". See " + logs;
      ContainerStatus st = ContainerStatus.newInstance(cid, ContainerState.COMPLETE, diag, exit);
      finished.put(cid, st);
      rm.log("node " + id + ": " + cid + " exited with " + exit);
      // As the real NM's deletion service (debug-delay 0): the container's localized copies and
      // work dir go once it has exited; its logs stay. Each copy is a whole binary, and a test
      // run starts a hundred containers, so keeping them fills a small disk.
      deleteTree(new File(root, "cache/" + cid));
      deleteTree(dir);
      rm.containerDone(cid, st);
    }, "wait-" + cid);
    w.setDaemon(true);
    w.start();
  }

  /** Deletes a file tree without following links (a work dir's links point into the cache). */
  private void deleteTree(File top) {
    try (java.util.stream.Stream<java.nio.file.Path> walk = Files.walk(top.toPath())) {
      walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException | java.io.UncheckedIOException e) {
      rm.log("node " + id + ": could not delete " + top + ": " + e);
    }
  }

  private static String expand(String s, Map<String, String> env) {
    Matcher m = Pattern.compile("\\{\\{([A-Za-z0-9_]+)\\}\\}").matcher(s);
    StringBuffer out = new StringBuffer();
    while (m.find()) {
      String v = env.get(m.group(1));
      if (v == null) {
        v = System.getenv(m.group(1));
      }
      m.appendReplacement(out, Matcher.quoteReplacement(v == null ? "" : v));
    }
    m.appendTail(out);
    return out.toString();
  }

  /** Kills a container (release, stop, app end); `exit` is what gets reported. */
  void kill(ContainerId cid) {
    Process p = running.get(cid);
    if (p != null) {
      stopped.add(cid);
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }

  @Override
  public StopContainersResponse stopContainers(StopContainersRequest request) throws YarnException, IOException {
    NMTokenIdentifier nm = caller();
    List<ContainerId> ok = new ArrayList<>();
    Map<ContainerId, SerializedException> failed = new HashMap<>();
    for (ContainerId c : request.getContainerIds()) {
      if (!c.getApplicationAttemptId().equals(nm.getApplicationAttemptId())) {
        failed.put(c, SerializedException.newInstance(new YarnException("not your container: " + c)));
        continue;
      }
      kill(c);
      ok.add(c);
    }
    return StopContainersResponse.newInstance(ok, failed);
  }

  @Override
  public GetContainerStatusesResponse getContainerStatuses(GetContainerStatusesRequest request)
      throws YarnException, IOException {
    caller();
    List<ContainerStatus> out = new ArrayList<>();
    Map<ContainerId, SerializedException> failed = new HashMap<>();
    for (ContainerId c : request.getContainerIds()) {
      if (running.containsKey(c)) {
        out.add(ContainerStatus.newInstance(c, ContainerState.RUNNING, "", -1000));
      } else if (finished.containsKey(c)) {
        out.add(finished.get(c));
      } else {
        failed.put(c, SerializedException.newInstance(new YarnException("Container " + c + " is not handled by this NodeManager")));
      }
    }
    return GetContainerStatusesResponse.newInstance(out, failed);
  }

}
