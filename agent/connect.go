package agent

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/clientconfig"
	"github.com/offsetagent/offsetagent/internal/connectrest"
)

// connectValidator is the Connect REST client that validates configs, at
// OFFSETAGENT_CONNECT_URL, or nil (no validation with Connect) when that is not set.
func connectValidator(cfg Config, log *slog.Logger) (handlers.ConfigValidator, error) {
	if cfg.ConnectURL == "" {
		return nil, nil
	}
	hc, err := connectHTTPClient(cfg, log)
	if err != nil {
		return nil, err
	}
	c, err := connectrest.New(cfg.ConnectURL, hc)
	if err != nil {
		return nil, fmt.Errorf("OFFSETAGENT_CONNECT_URL: %w", err)
	}
	return handlers.NewConnectValidator(c), nil
}

// connectHTTPClient is the client of the agent's OFFSETAGENT_CONNECT_URL, with
// OFFSETAGENT_CONNECT_CONFIG and OFFSETAGENT_CONNECT_USER_INFO.
func connectHTTPClient(cfg Config, log *slog.Logger) (*http.Client, error) {
	var cs clientconfig.ConnectSecurity
	if cfg.ConnectConfig != "" {
		var err error
		if cs, err = clientconfig.ReadConnectConfig(cfg.ConnectConfig); err != nil {
			return nil, fmt.Errorf("OFFSETAGENT_CONNECT_CONFIG: %w", err)
		}
	}
	cs, err := cs.WithUserInfo(cfg.ConnectUserInfo, "OFFSETAGENT_CONNECT_USER_INFO")
	if err != nil {
		return nil, err
	}
	hc, inURL, err := clientconfig.ConnectHTTPClient(cfg.ConnectURL, cs, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("OFFSETAGENT_CONNECT_URL: %w", err)
	}
	if inURL && log != nil {
		log.Warn("OFFSETAGENT_CONNECT_URL carries a password, readable wherever the environment is (docker inspect, /proc/PID/environ, manifests): put it in OFFSETAGENT_CONNECT_USER_INFO or basic.auth.user.info of OFFSETAGENT_CONNECT_CONFIG")
	}
	return hc, nil
}
