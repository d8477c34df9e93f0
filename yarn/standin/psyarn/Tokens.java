package psyarn;

import java.util.concurrent.ConcurrentHashMap;
import javax.crypto.SecretKey;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.token.SecretManager;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.security.NMTokenIdentifier;
import org.apache.hadoop.yarn.server.security.BaseContainerTokenSecretManager;
import org.apache.hadoop.yarn.server.security.BaseNMTokenSecretManager;
import org.apache.hadoop.yarn.server.security.MasterKeyData;

/** The stand-in's token secret managers: Hadoop's own classes, keyed like the real RM/NM's. */
final class Tokens {
  private Tokens() {}

  /** AMRMTokens: HMAC of the identifier; only live attempts are accepted. */
  static final class AmRm extends SecretManager<AMRMTokenIdentifier> {
    private final SecretKey key = generateSecret();
    final java.util.Set<ApplicationAttemptId> live = ConcurrentHashMap.newKeySet();

    @Override
    protected byte[] createPassword(AMRMTokenIdentifier id) {
      return createPassword(id.getBytes(), key);
    }

    @Override
    public byte[] retrievePassword(AMRMTokenIdentifier id) throws InvalidToken {
      if (!live.contains(id.getApplicationAttemptId())) {
        throw new InvalidToken("Application attempt " + id.getApplicationAttemptId() + " is not running");
      }
      return createPassword(id.getBytes(), key);
    }

    @Override
    public AMRMTokenIdentifier createIdentifier() {
      return new AMRMTokenIdentifier();
    }
  }

  /** NMTokens of one node: the shared master key, plus the check that a token names this node. */
  static final class NodeNm extends BaseNMTokenSecretManager {
    /** Set once the node's server is bound (its port is part of the node id). */
    private volatile NodeId node;

    NodeNm(MasterKeyData key, NodeId node) {
      this.currentMasterKey = key;
      this.node = node;
    }

    void setNode(NodeId node) {
      this.node = node;
    }

    /** The master key, shared by every node of the stand-in. */
    MasterKeyData key() {
      return currentMasterKey;
    }

    static MasterKeyData newKey() {
      return new BaseNMTokenSecretManager() {
        MasterKeyData make() {
          return createNewMasterKey();
        }
      }.make();
    }

    @Override
    public byte[] retrievePassword(NMTokenIdentifier id) throws InvalidToken {
      if (!node.equals(id.getNodeId())) {
        throw new InvalidToken("Given NMToken for application : " + id.getApplicationAttemptId()
            + " is not valid for current node manager.expected : " + node + " found : " + id.getNodeId());
      }
      return super.retrievePassword(id);
    }
  }

  /** Container tokens: one key for the whole stand-in. */
  static final class Containers extends BaseContainerTokenSecretManager {
    Containers(Configuration conf) {
      super(conf);
      this.currentMasterKey = createNewMasterKey();
    }

    int keyId() {
      return currentMasterKey.getMasterKey().getKeyId();
    }
  }
}
