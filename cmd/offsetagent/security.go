package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/offsetagent/offsetagent/agent"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
)

// clusters are the Kafka connections of export and migrate: A's (--from-brokers, MirrorMaker
// 2's offset syncs) and B's (--to-brokers: requests, results, state records, checkpoints).
type clusters struct {
	from, to *clientconfig.Connections
	// fromPrincipal and toPrincipal describe A's and B's principals for messages
	// (clientconfig.Security.Principal).
	fromPrincipal, toPrincipal string
}

// clusters builds A's and B's connections: from --from-command-config and
// --to-command-config, each falling back to the agent's environment (OFFSETAGENT_SASL_*,
// OFFSETAGENT_TLS_* or OFFSETAGENT_COMMAND_CONFIG) when not given. The environment also gives
// B's topic names (the returned Config).
func (f *fleetFlags) clusters(ctx context.Context, stderr io.Writer) (agent.Config, clusters, error) {
	warnUnknown(stderr, unknownVariables(os.Environ()))
	cfg, notes, err := loadConfigNotes(ctx)
	if err != nil {
		return cfg, clusters{}, err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "offsetagent: note: %s\n", n)
	}
	cl := clusters{fromPrincipal: cfg.Security.Principal(), toPrincipal: cfg.Security.Principal()}
	if f.fromCommandConfig == "" || f.toCommandConfig == "" {
		// The environment's settings serve the cluster without a file of its own.
		env, err := clientconfig.NewConnections(cfg.Security)
		if err != nil {
			return cfg, clusters{}, err
		}
		cl.from, cl.to = env, env
	}
	for _, c := range []struct {
		flag, path string
		conns      **clientconfig.Connections
	}{{"--from-command-config", f.fromCommandConfig, &cl.from}, {"--to-command-config", f.toCommandConfig, &cl.to}} {
		if c.path == "" {
			continue
		}
		sec, notes, err := clientconfig.ReadCommandConfig(c.path)
		if err != nil {
			return cfg, cl, fmt.Errorf("%s: %w", c.flag, err)
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "offsetagent: note: %s\n", n)
		}
		if *c.conns, err = clientconfig.NewConnections(sec); err != nil {
			return cfg, cl, fmt.Errorf("%s: %w", c.flag, err)
		}
		if c.conns == &cl.from {
			cl.fromPrincipal = sec.Principal()
		} else {
			cl.toPrincipal = sec.Principal()
		}
	}
	return cfg, cl, nil
}

// connectClient is the HTTP client of a Connect REST URL given by urlFlag, with the
// properties file of configFlag (path, optional) and basic auth from the variable userVar.
// A URL that carries a password still works, with one warning on stderr that says where it
// is visible and what to use instead.
func connectClient(url, urlFlag, path, configFlag, userVar string, stderr io.Writer) (*http.Client, error) {
	var cs clientconfig.ConnectSecurity
	if path != "" {
		var err error
		if cs, err = clientconfig.ReadConnectConfig(path); err != nil {
			return nil, fmt.Errorf("%s: %w", configFlag, err)
		}
	}
	cs, err := cs.WithUserInfo(os.Getenv(userVar), userVar)
	if err != nil {
		return nil, err
	}
	hc, inURL, err := clientconfig.ConnectHTTPClient(url, cs, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", urlFlag, err)
	}
	if inURL {
		fmt.Fprintf(stderr, "offsetagent: warning: %s carries a password, visible to every user in ps and /proc/PID/cmdline and kept in shell history: put it in %s (basic.auth.user.info) or %s instead\n",
			urlFlag, configFlag, userVar)
	}
	return hc, nil
}
