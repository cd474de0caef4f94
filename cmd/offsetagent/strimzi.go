package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/offsetagent/offsetagent/migrate/strimzi"
)

// strimziFlags are migrate's flags for a Connect cluster the Strimzi operator manages.
type strimziFlags struct {
	cluster, manifests, namespace, apiVersion string
	secret, secretFile                        string
	verify                                    bool
}

func (f *strimziFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cluster, "to-strimzi-cluster", "", "B is the Connect cluster of this KafkaConnect resource, whose connectors the Strimzi operator manages: place offsets only and write KafkaConnector manifests (--manifests)")
	fs.StringVar(&f.manifests, "manifests", "", "with --to-strimzi-cluster or --verify: the directory of the KafkaConnector manifests")
	fs.StringVar(&f.namespace, "strimzi-namespace", "", "metadata.namespace of the manifests (default: none, the namespace they are applied in)")
	fs.StringVar(&f.apiVersion, "strimzi-api-version", strimzi.StrimziV1, "KafkaConnector API version of the manifests: v1 (Strimzi 0.49 and later; the only one from 1.0) or v1beta2 (operators before 1.0)")
	fs.StringVar(&f.secret, "strimzi-secret", "", "with --to-strimzi-cluster: NAMESPACE/NAME of a Kubernetes Secret; each config value that holds a secret is written as ${secrets:NAMESPACE/NAME:KEY} (Strimzi's KubernetesSecretConfigProvider) and its value goes to --strimzi-secret-file")
	fs.StringVar(&f.secretFile, "strimzi-secret-file", "", "with --strimzi-secret: where the Secret manifest with the values goes (mode 0600; not inside --manifests)")
	fs.BoolVar(&f.verify, "verify", false, "verify an earlier run's cutover, nothing else: with --cutover-report FILE (that run's), on B's brokers, that each moved connector continues from the offsets placed, and rewrite FILE; with --manifests DIR, through B's REST API (--to-connect-url), that each connector of an operator-managed B runs with the offsets placed")
}

// target is the StrimziTarget of the flags, nil without --to-strimzi-cluster.
func (f *strimziFlags) target() *strimzi.Target {
	if f.cluster == "" {
		return nil
	}
	return &strimzi.Target{Cluster: f.cluster, Dir: f.manifests, Namespace: f.namespace, APIVersion: f.apiVersion,
		Secret: f.secret, SecretFile: f.secretFile, Words: flagWords}
}

// run does what these flags make of migrate before a migration: done with --verify (0 when
// every connector runs with the offsets placed) or with flags that do not go together.
func (f *strimziFlags) run(ctx context.Context, connectURL string, hc *http.Client, stdout, stderr io.Writer) (code int, done bool) {
	switch {
	case f.verify && f.cluster != "":
		fmt.Fprintln(stderr, "offsetagent migrate: --verify checks an earlier run's connectors: not with --to-strimzi-cluster")
		return 2, true
	case f.verify && f.manifests != "":
		return f.runVerify(ctx, connectURL, hc, stdout, stderr), true
	case f.verify:
		return 0, false // the cutover report's verification (cutover.go)
	case f.manifests != "" && f.cluster == "":
		fmt.Fprintln(stderr, "offsetagent migrate: --manifests goes with --to-strimzi-cluster or --verify")
		return 2, true
	case (f.secret != "" || f.secretFile != "") && f.cluster == "":
		fmt.Fprintln(stderr, "offsetagent migrate: --strimzi-secret and --strimzi-secret-file go with --to-strimzi-cluster")
		return 2, true
	}
	return 0, false
}

// runVerify is migrate --verify: 0 when every connector runs with the offsets placed.
func (f *strimziFlags) runVerify(ctx context.Context, connectURL string, hc *http.Client, stdout, stderr io.Writer) int {
	if f.manifests == "" || connectURL == "" {
		fmt.Fprintln(stderr, "offsetagent migrate --verify: needs --manifests DIR and --to-connect-url")
		return 2
	}
	vs, err := strimzi.VerifyStrimzi(ctx, strimzi.VerifyOptions{Dir: f.manifests, ConnectURL: connectURL, HTTPClient: hc})
	if err != nil {
		fmt.Fprintf(stderr, "offsetagent migrate --verify: %s\n", errorText(err))
		return 2
	}
	if ok, err := writeVerified(stdout, vs); err != nil || !ok {
		return 1
	}
	return 0
}
