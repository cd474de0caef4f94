package secured_test

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/integration/realkafka/tier"
)

// cluster is one secured Kafka cluster: a broker, its CA, the fixture's admin client and a
// Connect worker with its own principal.
type cluster struct {
	name      string
	dir       string
	ca        *testCA
	adminCert issued
	broker    *realkafka.Broker
	admin     *kgo.Client
	worker    *realkafka.Worker
	connect   tier.Connect
	// users are the SCRAM users made so far: name -> password.
	users map[string]string
	// restUser and restPass are the worker's basic auth credentials.
	restUser, restPass string
}

// startTimeout bounds each JVM's start: the two clusters' four JVMs start at once.
const startTimeout = 5 * time.Minute

// scramIterations is the SCRAM iteration count of the users the fixture makes (Kafka's minimum
// is 4096).
const scramIterations = 4096

// startCluster starts cluster name: its CA and certificates, a secured broker, the admin
// client, the Connect worker's user and ACLs, and the worker serving HTTPS with basic auth.
func startCluster(ctx context.Context, name string) (*cluster, error) {
	dir, err := env.Subdir(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "broker"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "worker"), 0o755); err != nil {
		return nil, err
	}
	ca, err := newCA(dir, "cluster "+name)
	if err != nil {
		return nil, fmt.Errorf("make the CA: %w", err)
	}
	brokerCert, err := ca.issue("broker", 2)
	if err != nil {
		return nil, err
	}
	c := &cluster{name: name, dir: dir, ca: ca, users: map[string]string{}}
	if c.adminCert, err = ca.issue("admin", 3); err != nil {
		return nil, err
	}
	c.broker, err = realkafka.StartBroker(ctx, realkafka.BrokerConfig{Lib: env.Lib, Dir: filepath.Join(dir, "broker"),
		// Four JVMs start at once on a shared two-core machine.
		StartTimeout: startTimeout,
		Secure: &realkafka.ListenerSecurity{
			ClientProtocol: "SASL_SSL",
			Props: map[string]string{
				"ssl.keystore.type":                                   "PEM",
				"ssl.keystore.location":                               brokerCert.Both,
				"ssl.truststore.type":                                 "PEM",
				"ssl.truststore.location":                             ca.File,
				"sasl.enabled.mechanisms":                             "SCRAM-SHA-512",
				"listener.name.client.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
				"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
				"allow.everyone.if.no.acl.found":                      "false",
				"super.users":                                         "User:CN=broker;User:CN=admin",
			},
			Probe: c.adminTransport(),
		}})
	if err != nil {
		return nil, err
	}
	env.AtExit(c.broker.Stop)
	if c.admin, err = newAdminClient(c); err != nil {
		return nil, err
	}
	env.AtExit(c.admin.Close)
	if err := c.startWorker(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// startWorker makes the worker's SCRAM user and its ACLs, and starts it with REST on HTTPS
// behind basic auth.
func (c *cluster) startWorker(ctx context.Context) error {
	c.connect = env.ConnectNames(c.name)
	user := "connect-" + c.name
	pass, err := c.addUser(ctx, user)
	if err != nil {
		return err
	}
	// The worker runs every connector: its own principal may use every topic and group.
	if err := c.grant(ctx, "User:"+user,
		acl{kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll},
		acl{kmsg.ACLResourceTypeGroup, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll},
		acl{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationCreate},
		acl{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribeConfigs},
	); err != nil {
		return err
	}
	restCert, err := c.ca.issue("connect-rest", 4)
	if err != nil {
		return err
	}
	wdir := filepath.Join(c.dir, "worker")
	p12 := filepath.Join(wdir, "rest.p12")
	storePass := randomSecret()
	out, err := exec.CommandContext(ctx, "openssl", "pkcs12", "-export", "-in", restCert.CertFile, "-inkey", restCert.KeyFile,
		"-name", "rest", "-out", p12, "-passout", "pass:"+storePass).CombinedOutput()
	if err != nil {
		return fmt.Errorf("make the REST keystore: %w\n%s", err, out)
	}
	c.restUser, c.restPass = "rest-"+c.name, randomSecret()
	restUser, restPass := c.restUser, c.restPass
	usersFile := filepath.Join(wdir, "rest-users.properties")
	if err := os.WriteFile(usersFile, []byte(restUser+": "+restPass+"\n"), 0o600); err != nil {
		return err
	}
	jaas := filepath.Join(wdir, "rest-jaas.conf")
	if err := os.WriteFile(jaas, []byte("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n  file=\""+usersFile+"\";\n};\n"), 0o600); err != nil {
		return err
	}
	extra := map[string]string{
		"rest.extension.classes":                "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension",
		"listeners.https.ssl.keystore.type":     "PKCS12",
		"listeners.https.ssl.keystore.location": p12,
		"listeners.https.ssl.keystore.password": storePass,
		"listeners.https.ssl.key.password":      storePass,
	}
	for k, v := range c.clientProps(user, pass) {
		for _, prefix := range []string{"", "producer.", "consumer.", "admin."} {
			extra[prefix+k] = v
		}
	}
	c.worker, err = realkafka.StartWorker(ctx, realkafka.WorkerConfig{Lib: env.Lib, Dir: wdir,
		Brokers: []string{c.broker.Addr}, GroupID: c.connect.Group, ConfigTopic: c.connect.Config,
		OffsetsTopic: c.connect.Offsets, StatusTopic: c.connect.Status, Extra: extra,
		JVMProperties: map[string]string{"java.security.auth.login.config": jaas},
		REST:          &realkafka.RESTSecurity{TLS: c.adminTLS(), User: restUser, Password: restPass},
		StartTimeout:  startTimeout,
	})
	if err != nil {
		return err
	}
	env.AtExit(c.worker.Stop)
	return nil
}

// clientProps are Kafka client properties for user on the cluster's SASL_SSL listener.
func (c *cluster) clientProps(user, pass string) map[string]string {
	return map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-512",
		"sasl.jaas.config":        fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, pass),
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": c.ca.File,
	}
}

// writeProps writes props as a Kafka client properties file into the cluster's folder.
func (c *cluster) writeProps(name string, props map[string]string) (string, error) {
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	path := filepath.Join(c.dir, name)
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

func randomSecret() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// addUser makes a SCRAM-SHA-512 user with a fresh password through AlterUserScramCredentials,
// and waits until the broker authenticates it.
func (c *cluster) addUser(ctx context.Context, user string) (string, error) {
	pass := randomSecret()
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	salted, err := pbkdf2.Key(sha512.New, pass, salt, scramIterations, sha512.Size)
	if err != nil {
		return "", err
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = user, 2, scramIterations, salt, salted // 2: SCRAM-SHA-512
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return "", fmt.Errorf("create SCRAM user %s: %w", user, err)
	}
	for _, r := range resp.Results {
		if err := kerrOf(r.ErrorCode, r.ErrorMessage); err != nil {
			return "", fmt.Errorf("create SCRAM user %s: %w", user, err)
		}
	}
	c.users[user] = pass
	return pass, c.waitDescribed(ctx, func() (bool, error) {
		d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = user
		d.Users = append(d.Users, u)
		resp, err := d.RequestWith(ctx, c.admin)
		if err != nil {
			return false, err
		}
		return len(resp.Results) == 1 && resp.Results[0].ErrorCode == 0 && len(resp.Results[0].CredentialInfos) > 0, nil
	})
}

// acl is one ACL binding without its principal: allow Op on a resource from any host.
type acl struct {
	Resource kmsg.ACLResourceType
	Name     string
	Pattern  kmsg.ACLResourcePatternType
	Op       kmsg.ACLOperation
}

func (a acl) String() string {
	return fmt.Sprintf("%s %s %q (%s)", a.Op, a.Resource, a.Name, a.Pattern)
}

// grant creates the ACLs for principal and waits until the broker's authorizer shows them.
func (c *cluster) grant(ctx context.Context, principal string, acls ...acl) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = a.Resource, a.Name, a.Pattern
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = principal, "*", a.Op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return fmt.Errorf("create ACLs for %s: %w", principal, err)
	}
	for i, r := range resp.Results {
		if err := kerrOf(r.ErrorCode, r.ErrorMessage); err != nil {
			return fmt.Errorf("create ACL %s for %s: %w", acls[i], principal, err)
		}
	}
	for _, a := range acls {
		if err := c.waitDescribed(ctx, func() (bool, error) { return c.hasACL(ctx, principal, a) }); err != nil {
			return fmt.Errorf("ACL %s for %s: %w", a, principal, err)
		}
	}
	return nil
}

// revoke deletes the ACLs of principal and waits until the broker's authorizer no longer shows
// them.
func (c *cluster) revoke(ctx context.Context, principal string, acls ...acl) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, a := range acls {
		f := kmsg.NewDeleteACLsRequestFilter()
		name, p, host := a.Name, principal, "*"
		f.ResourceType, f.ResourceName, f.ResourcePatternType = a.Resource, &name, a.Pattern
		f.Principal, f.Host, f.Operation, f.PermissionType = &p, &host, a.Op, kmsg.ACLPermissionTypeAllow
		req.Filters = append(req.Filters, f)
	}
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return fmt.Errorf("delete ACLs of %s: %w", principal, err)
	}
	for i, r := range resp.Results {
		if err := kerrOf(r.ErrorCode, r.ErrorMessage); err != nil {
			return fmt.Errorf("delete ACL %s of %s: %w", acls[i], principal, err)
		}
	}
	for _, a := range acls {
		if err := c.waitDescribed(ctx, func() (bool, error) {
			has, err := c.hasACL(ctx, principal, a)
			return !has, err
		}); err != nil {
			return fmt.Errorf("ACL %s of %s still there: %w", a, principal, err)
		}
	}
	return nil
}

// hasACL asks the broker (its authorizer's view, which DescribeAcls reads) whether principal
// has a.
func (c *cluster) hasACL(ctx context.Context, principal string, a acl) (bool, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	name, p, host := a.Name, principal, "*"
	req.ResourceType, req.ResourceName, req.ResourcePatternType = a.Resource, &name, a.Pattern
	req.Principal, req.Host, req.Operation, req.PermissionType = &p, &host, a.Op, kmsg.ACLPermissionTypeAllow
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return false, err
	}
	if err := kerrOf(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return false, err
	}
	for _, r := range resp.Resources {
		if len(r.ACLs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// waitDescribed polls done every 50 ms for up to 10 s.
func (c *cluster) waitDescribed(ctx context.Context, done func() (bool, error)) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := done()
		if err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not seen within 10 s (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createTopic creates a topic as the admin (compacted when compact).
func (c *cluster) createTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		val := v
		cfg.Name, cfg.Value = k, &val
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, r := range resp.Topics {
		if err := kerrOf(r.ErrorCode, r.ErrorMessage); err != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	return nil
}

func kerrOf(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}
