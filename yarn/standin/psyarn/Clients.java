package psyarn;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.ipc.Server;
import org.apache.hadoop.security.AccessControlException;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.ApplicationClientProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.*;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.ipc.RPCUtil;
import org.apache.hadoop.yarn.ipc.YarnRPC;
import org.apache.hadoop.yarn.util.Records;

/**
 * The RM's client port (ApplicationClientProtocol, what the `yarn` CLI and Spark submit through):
 * Hadoop's own IPC server and PB service wrapper, with SIMPLE authentication as on an insecure
 * cluster, so the caller is the user named in the connection context, as in the real
 * ClientRMService. The handlers (new application, submit, report, kill, list, nodes) are ours and act on
 * the same applications as the REST endpoints; every other method answers "not served".
 */
final class Clients implements InvocationHandler {
  private final Rm rm;
  private final boolean standby;
  final Server server;

  /** With `standby`, every call fails with Hadoop's StandbyException (an RM in transition, HA). */
  Clients(Rm rm, Configuration conf, String host, boolean standby) {
    this.rm = rm;
    this.standby = standby;
    ApplicationClientProtocol impl = (ApplicationClientProtocol) Proxy.newProxyInstance(
        ApplicationClientProtocol.class.getClassLoader(), new Class<?>[] {ApplicationClientProtocol.class}, this);
    server = YarnRPC.create(conf).getServer(ApplicationClientProtocol.class, impl, new InetSocketAddress(host, 0), conf,
        null, 4);
    server.start();
  }

  @Override
  public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
    if (m.getDeclaringClass() == Object.class) {
      try {
        return m.invoke(this, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
    if (standby) {
      throw new org.apache.hadoop.ipc.StandbyException("ResourceManager is in standby state");
    }
    String user = UserGroupInformation.getCurrentUser().getShortUserName();
    switch (m.getName()) {
      case "getNewApplication":
        return newApplication();
      case "submitApplication":
        return submit(((SubmitApplicationRequest) args[0]).getApplicationSubmissionContext(), user);
      case "getApplicationReport":
        return GetApplicationReportResponse.newInstance(
            report(app(((GetApplicationReportRequest) args[0]).getApplicationId())));
      case "forceKillApplication":
        return kill(app(((KillApplicationRequest) args[0]).getApplicationId()), user);
      case "getApplications":
        return list((GetApplicationsRequest) args[0]);
      case "getClusterNodes":
        return nodes();
      default:
        throw new YarnException(m.getName() + " is not served by the YARN stand-in");
    }
  }

  /** Every node as running, with its rack (what a rack-aware client needs of the report). */
  private GetClusterNodesResponse nodes() {
    List<NodeReport> reports = new ArrayList<>();
    for (Node n : rm.nodes) {
      reports.add(NodeReport.newInstance(n.id, NodeState.RUNNING, "127.0.0.1:" + n.httpPort, n.rack,
          Resource.newInstance(0, 0), Resource.newInstance(8192, 8), 0, "", System.currentTimeMillis()));
    }
    return GetClusterNodesResponse.newInstance(reports);
  }

  private Rm.App app(ApplicationId id) throws ApplicationNotFoundException {
    Rm.App a = rm.apps.get(id);
    if (a == null) {
      // The real RM's words.
      throw new ApplicationNotFoundException("Application with id '" + id + "' doesn't exist in RM.");
    }
    return a;
  }

  private GetNewApplicationResponse newApplication() {
    GetNewApplicationResponse r = Records.newRecord(GetNewApplicationResponse.class);
    r.setApplicationId(rm.newApp());
    r.setMaximumResourceCapability(Resource.newInstance(8192, 8));
    return r;
  }

  private SubmitApplicationResponse submit(ApplicationSubmissionContext ctx, String user) throws YarnException {
    Rm.App a = app(ctx.getApplicationId());
    if (!"NEW".equals(a.state)) {
      throw new YarnException("Application with id " + a.id + " is already present");
    }
    a.name = ctx.getApplicationName();
    a.type = ctx.getApplicationType();
    a.queue = ctx.getQueue();
    a.user = user;
    a.memory = ctx.getResource().getMemory();
    a.vcores = ctx.getResource().getVirtualCores();
    if (ctx.getMaxAppAttempts() > 0) {
      a.maxAttempts = ctx.getMaxAppAttempts();
    }
    ContainerLaunchContext clc = ctx.getAMContainerSpec();
    rm.log("submit (IPC) " + a.id + " by " + user + ": " + clc.getCommands());
    rm.submitOrFail(a, clc);
    return SubmitApplicationResponse.newInstance();
  }

  private KillApplicationResponse kill(Rm.App a, String user) throws YarnException {
    // As ClientRMService: only the owner (or an admin; the stand-in has none) may kill.
    if (!user.equals(a.user)) {
      throw RPCUtil.getRemoteException(new AccessControlException(
          "User " + user + " cannot perform operation MODIFY_APP on " + a.id));
    }
    rm.kill(a);
    return KillApplicationResponse.newInstance(Rm.isFinal(a.state));
  }

  private GetApplicationsResponse list(GetApplicationsRequest req) {
    List<ApplicationReport> out = new ArrayList<>();
    for (Rm.App a : rm.apps.values()) {
      boolean user = req.getUsers() == null || req.getUsers().isEmpty() || req.getUsers().contains(a.user);
      boolean state = req.getApplicationStates() == null || req.getApplicationStates().isEmpty()
          || req.getApplicationStates().contains(YarnApplicationState.valueOf(a.state));
      boolean type = req.getApplicationTypes() == null || req.getApplicationTypes().isEmpty()
          || req.getApplicationTypes().contains(a.type);
      if (user && state && type) {
        out.add(report(a));
      }
    }
    return GetApplicationsResponse.newInstance(out);
  }

  private static ApplicationReport report(Rm.App a) {
    ApplicationReport r = Records.newRecord(ApplicationReport.class);
    r.setApplicationId(a.id);
    r.setCurrentApplicationAttemptId(a.attempt);
    r.setUser(a.user);
    r.setName(a.name);
    r.setQueue(a.queue);
    r.setYarnApplicationState(YarnApplicationState.valueOf(a.state));
    r.setFinalApplicationStatus(FinalApplicationStatus.valueOf(a.finalStatus));
    r.setProgress(a.progress);
    r.setTrackingUrl(a.trackingUrl);
    // What Hadoop's web proxy forwards to (a real RM reports the proxied URL as trackingUrl; the
    // stand-in keeps the AM's, which tests use to reach the AM's port directly).
    r.setOriginalTrackingUrl(a.trackingUrl);
    r.setDiagnostics(a.diagnostics);
    r.setApplicationType(a.type);
    r.setStartTime(a.submitted);
    return r;
  }
}
