package psyarn;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.protocolrecords.*;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException;
import org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;

/**
 * The ResourceManager part: applications, ApplicationMasterProtocol (AMRMToken SASL, strict
 * response ids, asks as totals, containers on a later heartbeat, NMTokens once per node,
 * unregister on the second finish call) served by two RMs for HA ({@link Scheduler}), and a
 * scheduler handing out containers round-robin.
 */
final class Rm {
  final long clusterTs = System.currentTimeMillis();
  final Tokens.AmRm amrm = new Tokens.AmRm();
  final Tokens.Containers containerTokens;
  final Tokens.NodeNm nmTokens;
  final List<Node> nodes = new ArrayList<>();
  final Map<ApplicationId, App> apps = new ConcurrentHashMap<>();
  private final File root;
  private final String confDir;
  private final PrintStream log;
  private int nextApp = 1;
  private int rr = 0;
  /** rm1 and rm2. */
  final Scheduler[] schedulers = new Scheduler[2];
  /** Names of applications to fail over right after their first ask (tests, see Rest). */
  final Set<String> failoverOnAsk = ConcurrentHashMap.newKeySet();

  /** One application; a new attempt when its AM container dies before unregistering, up to
   *  maxAttempts (yarn.resourcemanager.am.max-attempts, 2, when the submission leaves it 0). */
  static final class App {
    ApplicationId id;
    ApplicationAttemptId attempt;
    int maxAttempts = 2;
    /** The AM's launch context as submitted (tokens without the AMRMToken), for later attempts. */
    ContainerLaunchContext amSpec;
    byte[] amTokens;
    String name = "", user = "", queue = "default", type = "";
    String state = "NEW", finalStatus = "UNDEFINED", diagnostics = "", trackingUrl = "";
    float progress;
    long submitted;
    boolean registered, unregisterAsked;
    int memory = 1024, vcores = 1;
    AllocateResponse last;
    int lastResponseId = -1;
    long nextContainer = 2;
    /** Outstanding totals by (priority, capability) from the last ask; served on the next heartbeat. */
    final Map<String, ResourceRequest> asks = new HashMap<>();
    final Map<ContainerId, Node> containers = new HashMap<>();
    final Set<NodeId> nmTokenSent = new HashSet<>();
    /** Resource names the application blacklisted: host names, or (ours, for NodeManagers that
     *  share a host here) host:port. */
    final Set<String> blacklist = new HashSet<>();
    final List<ContainerStatus> completed = new ArrayList<>();
    final Set<ContainerId> released = new HashSet<>();
    ContainerId amContainer;
    /** The RM (0 = rm1, 1 = rm2) serving this application; the other answers StandbyException. */
    int activeRm;
    boolean failoverOnFirstAsk;
    int failovers;
  }

  Rm(File root, String confDir, Configuration conf) {
    this.root = root;
    this.confDir = confDir;
    this.containerTokens = new Tokens.Containers(conf);
    this.nmTokens = new Tokens.NodeNm(Tokens.NodeNm.newKey(), null);
    try {
      this.log = new PrintStream(new java.io.FileOutputStream(new File(root, "standin.log"), true), true);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  void log(String s) {
    log.println(new Date() + " " + s);
  }

  String confDir() {
    return confDir;
  }

  File logRoot() {
    return new File(root, "userlogs");
  }

  void start(Configuration serverConf, String host) {
    for (int i = 0; i < schedulers.length; i++) {
      schedulers[i] = new Scheduler(this, i, serverConf, host);
    }
  }

  /**
   * Moves `a` to the other RM, as an HA failover with work-preserving recovery does: running
   * containers stay, but the new RM knows no registration, response id or outstanding ask, so
   * the AM must register again and re-send its asks (AMRMClientImpl's contract).
   */
  synchronized void failover(App a) {
    a.activeRm = 1 - a.activeRm;
    a.failovers++;
    a.registered = false;
    a.last = null;
    a.lastResponseId = 0;
    a.asks.clear();
    log("failover of " + a.attempt + " to rm" + (a.activeRm + 1));
  }

  /** The caller's application, if `index` is the RM serving it (else StandbyException). */
  private App active(int index) throws YarnException, IOException {
    App a = caller();
    if (a.activeRm != index) {
      throw new org.apache.hadoop.ipc.StandbyException("ResourceManager rm" + (index + 1) + " is in standby state");
    }
    return a;
  }

  synchronized ApplicationId newApp() {
    ApplicationId id = ApplicationId.newInstance(clusterTs, nextApp++);
    App a = new App();
    a.id = id;
    a.attempt = ApplicationAttemptId.newInstance(id, 1);
    apps.put(id, a);
    return id;
  }

  private App caller() throws YarnException, IOException {
    for (TokenIdentifier t : UserGroupInformation.getCurrentUser().getTokenIdentifiers()) {
      if (t instanceof AMRMTokenIdentifier) {
        ApplicationAttemptId at = ((AMRMTokenIdentifier) t).getApplicationAttemptId();
        App a = apps.get(at.getApplicationId());
        if (a != null) {
          return a;
        }
      }
    }
    throw new YarnException("no AMRMToken of a known application in the connection");
  }

  /** Submits and launches the AM on node 0 (called by the REST endpoint). */
  synchronized void submit(App a, ContainerLaunchContext clc) throws Exception {
    a.submitted = System.currentTimeMillis();
    a.state = "ACCEPTED";
    a.failoverOnFirstAsk = failoverOnAsk.remove(a.name);
    a.amSpec = clc;
    ByteBuffer t = clc.getTokens();
    a.amTokens = new byte[t == null ? 0 : t.remaining()];
    if (t != null) {
      t.duplicate().get(a.amTokens);
    }
    launchAttempt(a);
  }

  /** Launches the AM container of the application's current attempt, with its own AMRMToken. */
  synchronized void launchAttempt(App a) throws Exception {
    ContainerLaunchContext clc = ContainerLaunchContext.newInstance(a.amSpec.getLocalResources(),
        a.amSpec.getEnvironment(), a.amSpec.getCommands(), null, ByteBuffer.wrap(a.amTokens.clone()), null);
    amrm.live.add(a.attempt);
    AMRMTokenIdentifier tid = new AMRMTokenIdentifier(a.attempt, 1);
    org.apache.hadoop.security.token.Token<AMRMTokenIdentifier> tok =
        new org.apache.hadoop.security.token.Token<>(tid.getBytes(), amrm.retrievePassword(tid), tid.getKind(), new Text());
    Credentials creds = new Credentials();
    if (clc.getTokens() != null && clc.getTokens().remaining() > 0) {
      org.apache.hadoop.io.DataInputByteBuffer in = new org.apache.hadoop.io.DataInputByteBuffer();
      in.reset(clc.getTokens().duplicate());
      creds.readTokenStorageStream(in);
    }
    // The real RM adds it under its (empty) service as alias.
    creds.addToken(tok.getService(), tok);
    DataOutputBuffer out = new DataOutputBuffer();
    creds.writeTokenStorageToStream(out);
    clc.setTokens(ByteBuffer.wrap(out.getData(), 0, out.getLength()));
    a.amContainer = ContainerId.newContainerId(a.attempt, 1);
    Node n = nodes.get(0);
    a.containers.put(a.amContainer, n);
    Map<String, String> env = new HashMap<>();
    env.put("APP_SUBMIT_TIME_ENV", Long.toString(a.submitted));
    env.put("USER", a.user);
    a.state = "RUNNING";
    n.launch(a.amContainer, clc, a.user, env);
  }

  /** Submits; a launch that fails marks the application FAILED, as the real RM reports it. */
  void submitOrFail(App a, ContainerLaunchContext clc) {
    try {
      submit(a, clc);
    } catch (Exception e) {
      a.state = "FAILED";
      a.finalStatus = "FAILED";
      a.diagnostics = "AM container failed to launch: " + e;
      log("submit failed: " + e);
    }
  }

  /** A container ended (on any node): the AM's own ends the attempt, others are reported. */
  synchronized void containerDone(ContainerId cid, ContainerStatus st) {
    App a = apps.get(cid.getApplicationAttemptId().getApplicationId());
    if (a == null) {
      return;
    }
    if (cid.equals(a.amContainer)) {
      amrm.live.remove(a.attempt);
      if (!a.unregisterAsked && !isFinal(a.state) && a.attempt.getAttemptId() < a.maxAttempts) {
        // As the real RM: the attempt's containers go, a new attempt starts the AM again.
        killAll(a, false);
        log("AM container " + cid + " of " + a.attempt + " exited with " + st.getExitStatus() + "; a new attempt");
        a.attempt = ApplicationAttemptId.newInstance(a.id, a.attempt.getAttemptId() + 1);
        a.registered = false;
        a.last = null;
        a.lastResponseId = -1;
        a.nextContainer = 2;
        a.asks.clear();
        a.nmTokenSent.clear();
        a.completed.clear();
        a.blacklist.clear();
        new Thread(() -> {
          try {
            launchAttempt(a);
          } catch (Exception e) {
            synchronized (Rm.this) {
              a.state = "FAILED";
              a.finalStatus = "FAILED";
              a.diagnostics = "AM container of " + a.attempt + " failed to launch: " + e;
            }
          }
        }).start();
        return;
      }
      if (!a.unregisterAsked && !isFinal(a.state)) {
        a.state = "FAILED";
        a.finalStatus = "FAILED";
        a.diagnostics = "AM container " + cid + " exited with exitCode: " + st.getExitStatus()
            + " before unregistering. " + st.getDiagnostics();
      } else if (!isFinal(a.state)) {
        a.state = "FINISHED";
      }
      killAll(a, false);
      return;
    }
    if (a.released.contains(cid) || !cid.getApplicationAttemptId().equals(a.attempt)) {
      // Already reported as released (-100), or of an earlier attempt (its AM is gone).
      return;
    }
    a.completed.add(st);
  }

  static boolean isFinal(String s) {
    return s.equals("FINISHED") || s.equals("FAILED") || s.equals("KILLED");
  }

  /** Kills every container of `a` (and the AM if `am`). */
  synchronized void killAll(App a, boolean am) {
    for (Map.Entry<ContainerId, Node> e : a.containers.entrySet()) {
      if (am || !e.getKey().equals(a.amContainer)) {
        e.getValue().kill(e.getKey());
      }
    }
  }

  synchronized void kill(App a) {
    if (isFinal(a.state)) {
      return;
    }
    a.state = "KILLED";
    a.finalStatus = "KILLED";
    a.diagnostics = "Application killed by user.";
    amrm.live.remove(a.attempt);
    killAll(a, true);
  }

  synchronized RegisterApplicationMasterResponse register(int index, RegisterApplicationMasterRequest req)
      throws YarnException, IOException {
    App a = active(index);
    if (a.registered) {
      throw new InvalidApplicationMasterRequestException("Application Master is already registered : " + a.id);
    }
    a.registered = true;
    a.trackingUrl = req.getTrackingUrl() == null ? "" : req.getTrackingUrl();
    a.lastResponseId = 0;
    log("register " + a.attempt + " from " + req.getHost() + ":" + req.getRpcPort() + " tracking " + a.trackingUrl);
    RegisterApplicationMasterResponse r = org.apache.hadoop.yarn.util.Records.newRecord(RegisterApplicationMasterResponse.class);
    r.setMaximumResourceCapability(Resource.newInstance(8192, 8));
    r.setQueue(a.queue);
    r.setApplicationACLs(new HashMap<ApplicationAccessType, String>());
    return r;
  }

  synchronized AllocateResponse allocate(int index, AllocateRequest req) throws YarnException, IOException {
    App a = active(index);
    if (!a.registered) {
      throw new ApplicationMasterNotRegisteredException("AM is not registered for known application attempt: " + a.attempt);
    }
    if (a.last != null && req.getResponseId() + 1 == a.lastResponseId) {
      return a.last;
    }
    if (req.getResponseId() != a.lastResponseId) {
      throw new InvalidApplicationMasterRequestException("Invalid responseId in AllocateRequest from application attempt: "
          + a.attempt + ", expect responseId to be " + a.lastResponseId + ", but get " + req.getResponseId());
    }
    a.progress = req.getProgress();
    List<ContainerStatus> done = new ArrayList<>(a.completed);
    a.completed.clear();
    for (ContainerId c : req.getReleaseList()) {
      Node n = a.containers.get(c);
      if (n != null && a.released.add(c)) {
        n.kill(c);
        done.add(ContainerStatus.newInstance(c, ContainerState.COMPLETE, "Container released by application", -100));
      }
    }
    ResourceBlacklistRequest bl = req.getResourceBlacklistRequest();
    if (bl != null) {
      a.blacklist.addAll(bl.getBlacklistAdditions());
      a.blacklist.removeAll(bl.getBlacklistRemovals());
    }
    List<Node> usable = new ArrayList<>();
    for (Node node : nodes) {
      String id = node.id.getHost() + ":" + node.id.getPort();
      if (!a.blacklist.contains(node.id.getHost()) && !a.blacklist.contains(id)) {
        usable.add(node);
      }
    }
    // Serve asks made on an earlier heartbeat: containers never arrive on the call that asked.
    List<Container> alloc = new ArrayList<>();
    List<NMToken> tokens = new ArrayList<>();
    for (Map.Entry<String, ResourceRequest> e : a.asks.entrySet()) {
      // Asks recorded below are served from the next call on.
      ResourceRequest rr0 = e.getValue();
      int n = rr0.getNumContainers();
      for (int i = 0; i < n && !usable.isEmpty(); i++) {
        Node node = usable.get(rr++ % usable.size());
        ContainerId cid = ContainerId.newContainerId(a.attempt, a.nextContainer++);
        Token ct = BuilderToken.create(containerTokens, cid, node.id, a.user, rr0.getCapability(), clusterTs);
        alloc.add(Container.newInstance(cid, node.id, "127.0.0.1:" + node.httpPort, rr0.getCapability(),
            rr0.getPriority(), ct));
        a.containers.put(cid, node);
        if (a.nmTokenSent.add(node.id)) {
          tokens.add(NMToken.newInstance(node.id, nmTokens.createNMToken(a.attempt, node.id, a.user)));
        }
      }
      rr0.setNumContainers(usable.isEmpty() ? n : 0);
    }
    for (ResourceRequest r : req.getAskList()) {
      if (!ResourceRequest.ANY.equals(r.getResourceName())) {
        continue;
      }
      String key = r.getPriority().getPriority() + "/" + r.getCapability();
      a.asks.put(key, ResourceRequest.newInstance(r.getPriority(), r.getResourceName(), r.getCapability(),
          r.getNumContainers()));
    }
    AllocateResponse resp = AllocateResponse.newInstance(a.lastResponseId + 1, done, alloc, new ArrayList<NodeReport>(),
        Resource.newInstance(8192 * nodes.size(), 8 * nodes.size()), null, nodes.size(), null, tokens);
    a.lastResponseId += 1;
    a.last = resp;
    if (a.failoverOnFirstAsk && !req.getAskList().isEmpty()) {
      // The asks were taken; the RM that took them goes away before serving them.
      a.failoverOnFirstAsk = false;
      failover(a);
    }
    return resp;
  }

  synchronized FinishApplicationMasterResponse finish(int index, FinishApplicationMasterRequest req)
      throws YarnException, IOException {
    App a = active(index);
    if (!a.registered) {
      throw new ApplicationMasterNotRegisteredException("Application Master is trying to unregister before registering for: "
          + a.attempt);
    }
    a.diagnostics = req.getDiagnostics() == null ? "" : req.getDiagnostics();
    a.finalStatus = req.getFinalApplicationStatus().toString();
    if (req.getTrackingUrl() != null && !req.getTrackingUrl().isEmpty()) {
      a.trackingUrl = req.getTrackingUrl();
    }
    // Like the real RM, the first call only records the request.
    if (!a.unregisterAsked) {
      a.unregisterAsked = true;
      log("finish " + a.attempt + " " + a.finalStatus + ": " + a.diagnostics);
      return FinishApplicationMasterResponse.newInstance(false);
    }
    a.state = "FINISHED";
    killAll(a, false);
    return FinishApplicationMasterResponse.newInstance(true);
  }
}
