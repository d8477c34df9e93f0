package psyarn;

import java.io.IOException;
import java.net.InetSocketAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.ipc.Server;
import org.apache.hadoop.yarn.api.ApplicationMasterProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.*;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.ipc.YarnRPC;

/**
 * The scheduler port (ApplicationMasterProtocol) of one of the stand-in's two ResourceManagers,
 * rm1 or rm2: Hadoop's own IPC server, PB wrapper and AMRMToken SASL. Both act on the same
 * applications (as HA RMs share a state store); each application is served by one of them at a
 * time, and the other answers Hadoop's StandbyException, as an RM in standby or in transition.
 */
final class Scheduler implements ApplicationMasterProtocol {
  private final Rm rm;
  private final int index;
  final Server server;

  Scheduler(Rm rm, int index, Configuration serverConf, String host) {
    this.rm = rm;
    this.index = index;
    server = YarnRPC.create(serverConf).getServer(ApplicationMasterProtocol.class, this,
        new InetSocketAddress(host, 0), serverConf, rm.amrm, 4);
    server.start();
  }

  @Override
  public RegisterApplicationMasterResponse registerApplicationMaster(RegisterApplicationMasterRequest req)
      throws YarnException, IOException {
    return rm.register(index, req);
  }

  @Override
  public AllocateResponse allocate(AllocateRequest req) throws YarnException, IOException {
    return rm.allocate(index, req);
  }

  @Override
  public FinishApplicationMasterResponse finishApplicationMaster(FinishApplicationMasterRequest req)
      throws YarnException, IOException {
    return rm.finish(index, req);
  }
}
