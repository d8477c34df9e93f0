package psyarn;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.File;
import java.security.KeyStore;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.util.ConverterUtils;
import org.codehaus.jackson.JsonNode;
import org.codehaus.jackson.map.ObjectMapper;
import org.codehaus.jackson.node.ObjectNode;

/**
 * The RM REST endpoints a client submits with (`/ws/v1/cluster/apps...`), as the real RM answers
 * them, over HTTP and, with a keystore, HTTPS.
 */
final class Rest {
  private final Rm rm;
  private final ObjectMapper json = new ObjectMapper();
  final HttpServer http;
  /** The same endpoints over TLS (yarn.http.policy=HTTPS_ONLY), when a keystore is given. */
  final HttpsServer https;

  /**
   * `keystore`: a PKCS12 file with the server's key and certificate chain (scripts/yarn-up.sh
   * makes one with keytool, signed by a test CA), or null for HTTP only.
   */
  Rest(Rm rm, String host, File keystore, char[] password) throws Exception {
    this.rm = rm;
    http = HttpServer.create(new InetSocketAddress(host, 0), 16);
    serve(http);
    if (keystore == null) {
      https = null;
      return;
    }
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (java.io.InputStream in = new java.io.FileInputStream(keystore)) {
      ks.load(in, password);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, password);
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(kmf.getKeyManagers(), null, null);
    https = HttpsServer.create(new InetSocketAddress(host, 0), 16);
    https.setHttpsConfigurator(new HttpsConfigurator(tls));
    serve(https);
  }

  private void serve(HttpServer s) {
    s.createContext("/ws/v1/cluster/apps", this::handle);
    s.createContext("/ws/v1/cluster/nodes", this::nodes);
    s.createContext("/ws/v1/psyarn/failover", this::failover);
    s.start();
  }

  private void send(HttpExchange x, int code, Object body) throws IOException {
    byte[] b = body == null ? new byte[0] : json.writeValueAsString(body).getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", "application/json");
    x.sendResponseHeaders(code, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      try (OutputStream o = x.getResponseBody()) {
        o.write(b);
      }
    }
    x.close();
  }

  private static Map<String, Object> error(String msg) {
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("exception", "BadRequestException");
    e.put("message", msg);
    return Collections.singletonMap("RemoteException", (Object) e);
  }

  /** `GET /ws/v1/cluster/nodes`, in the real RM's shape (only the fields a client reads here). */
  private void nodes(HttpExchange x) throws IOException {
    if (!x.getRequestMethod().equals("GET")) {
      send(x, 405, error(x.getRequestMethod() + " /ws/v1/cluster/nodes is not supported"));
      return;
    }
    List<Object> list = new ArrayList<>();
    for (Node n : rm.nodes) {
      Map<String, Object> e = new LinkedHashMap<>();
      e.put("rack", n.rack);
      e.put("state", "RUNNING");
      e.put("id", n.id.getHost() + ":" + n.id.getPort());
      e.put("nodeHostName", n.id.getHost());
      e.put("nodeHTTPAddress", "127.0.0.1:" + n.httpPort);
      list.add(e);
    }
    send(x, 200, Collections.singletonMap("nodes", Collections.singletonMap("node", list)));
  }

  private void handle(HttpExchange x) throws IOException {
    try {
      String path = x.getRequestURI().getPath().replaceAll("/+$", "");
      String query = x.getRequestURI().getQuery() == null ? "" : x.getRequestURI().getQuery();
      String method = x.getRequestMethod();
      String rest = path.substring("/ws/v1/cluster/apps".length());
      boolean writable = !method.equals("GET");
      String user = null;
      for (String kv : query.split("&")) {
        if (kv.startsWith("user.name=")) {
          user = kv.substring("user.name=".length());
        }
      }
      if (writable && user == null) {
        send(x, 403, error("Unable to obtain user name, user not authenticated"));
        return;
      }
      if (method.equals("POST") && rest.equals("/new-application")) {
        ApplicationId id = rm.newApp();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("application-id", id.toString());
        Map<String, Object> cap = new LinkedHashMap<>();
        cap.put("memory", 8192);
        cap.put("vCores", 8);
        r.put("maximum-resource-capability", cap);
        send(x, 200, r);
      } else if (method.equals("POST") && rest.isEmpty()) {
        submit(x, json.readTree(x.getRequestBody()), user);
      } else if (rest.matches("/application_[0-9]+_[0-9]+(/state)?")) {
        String id = rest.split("/")[1];
        Rm.App a = rm.apps.get(ConverterUtils.toApplicationId(id));
        if (a == null) {
          send(x, 404, error("app with id: " + id + " not found"));
        } else if (method.equals("GET") && rest.endsWith("/state")) {
          send(x, 200, Collections.singletonMap("state", a.state));
        } else if (method.equals("GET")) {
          send(x, 200, Collections.singletonMap("app", report(a)));
        } else if (method.equals("PUT") && rest.endsWith("/state")) {
          String target = json.readTree(x.getRequestBody()).path("state").getTextValue();
          if (!"KILLED".equals(target)) {
            send(x, 400, error("Only 'KILLED' is allowed as a target state."));
            return;
          }
          boolean was = Rm.isFinal(a.state);
          rm.kill(a);
          send(x, was ? 200 : 202, Collections.singletonMap("state", a.state));
        } else {
          send(x, 405, error(method + " " + path + " is not supported"));
        }
      } else {
        send(x, 404, error("no such resource: " + method + " " + path));
      }
    } catch (Exception e) {
      rm.log("REST error: " + e);
      send(x, 400, error(e.toString()));
    }
  }

  /**
   * Test control, not a Hadoop API: `PUT /ws/v1/psyarn/failover?app=ID` moves a running
   * application to the other RM now; `PUT ...?name=NAME` arms the next application submitted
   * under that name to fail over right after its first allocate that carries asks.
   */
  private void failover(HttpExchange x) throws IOException {
    try {
      String q = x.getRequestURI().getQuery() == null ? "" : x.getRequestURI().getQuery();
      if (!x.getRequestMethod().equals("PUT")) {
        send(x, 405, error("PUT only"));
      } else if (q.startsWith("app=")) {
        Rm.App a = rm.apps.get(ConverterUtils.toApplicationId(q.substring(4)));
        if (a == null) {
          send(x, 404, error("no application " + q.substring(4)));
          return;
        }
        rm.failover(a);
        send(x, 200, Collections.singletonMap("activeRm", "rm" + (a.activeRm + 1)));
      } else if (q.startsWith("name=")) {
        rm.failoverOnAsk.add(java.net.URLDecoder.decode(q.substring(5), "UTF-8"));
        send(x, 200, Collections.singletonMap("armed", q.substring(5)));
      } else {
        send(x, 400, error("give app=ID or name=NAME"));
      }
    } catch (Exception e) {
      send(x, 400, error(e.toString()));
    }
  }

  private Map<String, Object> report(Rm.App a) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("id", a.id.toString());
    r.put("user", a.user);
    r.put("name", a.name);
    r.put("queue", a.queue);
    r.put("state", a.state);
    r.put("finalStatus", a.finalStatus);
    r.put("progress", a.progress * 100);
    r.put("trackingUI", "ApplicationMaster");
    r.put("trackingUrl", a.trackingUrl);
    r.put("diagnostics", a.diagnostics);
    r.put("applicationType", a.type);
    r.put("startedTime", a.submitted);
    return r;
  }

  /**
   * The submission's `credentials` ({"tokens": {"entry": [...]}, "secrets": {"entry": [...]}}), decoded
   * as the real RM's RMWebServices does (tokens from their URL-safe string form, secrets from base64)
   * and serialized with Hadoop's own Credentials, as the AM container's tokens.
   */
  private static java.nio.ByteBuffer credentials(JsonNode spec) throws IOException {
    org.apache.hadoop.security.Credentials creds = new org.apache.hadoop.security.Credentials();
    JsonNode c = spec.path("credentials");
    for (JsonNode e : c.path("tokens").path("entry")) {
      org.apache.hadoop.security.token.Token<org.apache.hadoop.security.token.TokenIdentifier> t =
          new org.apache.hadoop.security.token.Token<>();
      t.decodeFromUrlString(e.path("value").getTextValue());
      creds.addToken(new org.apache.hadoop.io.Text(e.path("key").getTextValue()), t);
    }
    for (JsonNode e : c.path("secrets").path("entry")) {
      byte[] secret = new org.apache.commons.codec.binary.Base64(0, null, true).decode(e.path("value").getTextValue());
      creds.addSecretKey(new org.apache.hadoop.io.Text(e.path("key").getTextValue()), secret);
    }
    org.apache.hadoop.io.DataOutputBuffer out = new org.apache.hadoop.io.DataOutputBuffer();
    creds.writeTokenStorageToStream(out);
    return java.nio.ByteBuffer.wrap(out.getData(), 0, out.getLength());
  }

  private void submit(HttpExchange x, JsonNode body, String user) throws Exception {
    String id = body.path("application-id").getTextValue();
    Rm.App a = id == null ? null : rm.apps.get(ConverterUtils.toApplicationId(id));
    if (a == null) {
      send(x, 400, error("application-id missing or unknown: " + id));
      return;
    }
    a.name = body.path("application-name").getTextValue() == null ? "" : body.path("application-name").getTextValue();
    a.type = body.path("application-type").getTextValue() == null ? "" : body.path("application-type").getTextValue();
    if (body.path("queue").getTextValue() != null) {
      a.queue = body.path("queue").getTextValue();
    }
    a.user = user;
    a.memory = body.path("resource").path("memory").getIntValue();
    a.vcores = body.path("resource").path("vCores").getIntValue();
    if (body.path("max-app-attempts").getIntValue() > 0) {
      a.maxAttempts = body.path("max-app-attempts").getIntValue();
    }
    JsonNode spec = body.path("am-container-spec");
    Map<String, LocalResource> res = new HashMap<>();
    for (JsonNode e : spec.path("local-resources").path("entry")) {
      JsonNode v = e.path("value");
      res.put(e.path("key").getTextValue(), LocalResource.newInstance(
          ConverterUtils.getYarnUrlFromURI(new URI(v.path("resource").getTextValue())),
          LocalResourceType.valueOf(v.path("type").getTextValue()),
          LocalResourceVisibility.valueOf(v.path("visibility").getTextValue()),
          v.path("size").getLongValue(), v.path("timestamp").getLongValue()));
    }
    Map<String, String> env = new HashMap<>();
    for (JsonNode e : spec.path("environment").path("entry")) {
      env.put(e.path("key").getTextValue(), e.path("value").getTextValue());
    }
    List<String> cmds = Collections.singletonList(spec.path("commands").path("command").getTextValue());
    ContainerLaunchContext clc = ContainerLaunchContext.newInstance(res, env, cmds, null, credentials(spec), null);
    rm.log("submit " + a.id + " by " + user + ": " + cmds);
    rm.submitOrFail(a, clc);
    x.getResponseHeaders().set("Location", "/ws/v1/cluster/apps/" + a.id);
    send(x, 202, null);
  }
}
