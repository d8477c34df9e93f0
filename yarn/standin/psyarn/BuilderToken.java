package psyarn;

import java.util.Arrays;
import org.apache.hadoop.security.token.SecretManager;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.Token;
import org.apache.hadoop.yarn.security.ContainerTokenIdentifier;
import org.apache.hadoop.yarn.server.utils.BuilderUtils;

/** Container tokens made and checked with Hadoop's own identifier and secret manager. */
final class BuilderToken {
  private BuilderToken() {}

  static Token create(Tokens.Containers sm, ContainerId cid, NodeId node, String user, Resource r, long rmId)
      throws java.io.IOException {
    ContainerTokenIdentifier id = new ContainerTokenIdentifier(cid, node.toString(), user, r,
        System.currentTimeMillis() + 3_600_000L, sm.keyId(), rmId, Priority.newInstance(0), 0L);
    return BuilderUtils.newContainerToken(node, sm.createPassword(id), id);
  }

  static ContainerTokenIdentifier verify(Tokens.Containers sm, Token t) throws Exception {
    ContainerTokenIdentifier id = new ContainerTokenIdentifier();
    id.readFields(new java.io.DataInputStream(new java.io.ByteArrayInputStream(t.getIdentifier().array())));
    byte[] want = sm.retrievePassword(id);
    if (!Arrays.equals(want, t.getPassword().array())) {
      throw new SecretManager.InvalidToken("container token password mismatch");
    }
    return id;
  }
}
