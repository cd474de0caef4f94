// Package secured is the real tier's secured variant: Apache Kafka brokers that let no one in
// without credentials and an ACL, and Connect workers that serve REST over HTTPS with basic
// auth, with offsetagent's agent and migrate running against them with exactly the ACLs the
// operations and migration runbooks list.
//
// Its tests (in _test.go files only) run on package tier's harness and start, once for the
// package and at the first test that needs them (tier.Config.Peers and Lazy), two secured
// clusters, A and B, each with a certificate authority of its own that the test generates:
//   - a KRaft broker (package realkafka's, with ListenerSecurity) whose client listener is
//     SASL_SSL with SCRAM-SHA-512 only, whose inter-broker and controller listeners are SSL with
//     client certificates, with StandardAuthorizer and allow.everyone.if.no.acl.found=false. The
//     fixture's admin is a super user by its client certificate (User:CN=admin) on the internal
//     listener; it creates the SCRAM users (AlterUserScramCredentials) and the ACLs (CreateAcls,
//     DeleteAcls) through Kafka's admin API, never at format time;
//   - a Connect worker with its own SCRAM principal and ACLs, serving REST on
//     https://127.0.0.1:PORT with connect-basic-auth-extension's BasicAuthSecurityRestExtension
//     (a JAAS file for its PropertyFileLoginModule). The fixture still judges every byte through
//     that REST API, with basic auth.
//
// Connect's REST server (Jetty) reads a Java keystore type, which has no PEM type: the worker's
// REST key material is a PKCS#12 file that openssl makes from the generated PEM. The brokers
// read PEM (ssl.keystore.type=PEM) and so do offsetagent's clients.
//
// The environment is package realkafka's (OFFSETAGENT_KAFKA_VERSION, OFFSETAGENT_KAFKA_CACHE,
// OFFSETAGENT_REQUIRE_REAL_KAFKA); without java (or mvn and no cached jars) the tests skip, or
// fail under OFFSETAGENT_REQUIRE_REAL_KAFKA=1.
// OFFSETAGENT_SECURED_AGENT_BIN runs them against another agent binary (an older build, to see
// what they catch in it) instead of building this tree's.
package secured
