package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is `parley health`: GET a running parley's /healthz and exit
// 0 on 200, 1 on anything else. It is the container health check (the
// runtime image has no curl), so it never talks to the model or a
// platform: /healthz answers from the store and the adapters' states.
func newHealthCmd(e *cliEnv) *cobra.Command {
	var target string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "health",
		Short: "Check a running parley's /healthz: exit 0 when it answers 200, else 1",
		Long: "Check a running parley's /healthz: exit 0 when it answers 200, else 1.\n" +
			"The URL is --url, else http://HOST:PORT/healthz from the config's http.listen\n" +
			"(a wildcard host such as 0.0.0.0 is asked on loopback). For container and\n" +
			"load-balancer health checks: it never calls the model.",
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if target == "" {
				// A probe that runs every few seconds logs only problems.
				if !c.Flags().Changed("log-level") {
					e.flags.logLevel = "warn"
				}
				cfg, err := e.loadConfig(c)
				if err != nil {
					return err
				}
				u, err := healthzURL(cfg.HTTP.Listen)
				if err != nil {
					return usageError{Err: err}
				}
				target = u
			}
			return checkHealth(c.Context(), target, timeout, e.io.Out)
		},
	}
	c.Flags().StringVar(&target, "url", "", "the /healthz URL (default: from http.listen in the config)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return c
}

// healthzURL is the /healthz URL of a server listening on listen, asked on
// loopback when listen names no host or a wildcard one.
func healthzURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("http.listen %q: %w", listen, err)
	}
	if port == "" || port == "0" {
		return "", fmt.Errorf("http.listen %q has no fixed port: pass --url", listen)
	}
	switch ip := net.ParseIP(host); {
	case host == "" || (ip != nil && ip.Equal(net.IPv4zero)):
		host = "127.0.0.1"
	case ip != nil && ip.Equal(net.IPv6unspecified):
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}

// checkHealth GETs target and copies its body (the components' states) to
// out; anything but 200 is an error.
func checkHealth(ctx context.Context, target string, timeout time.Duration, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return usageError{Err: fmt.Errorf("--url: %w", err)}
	}
	// No proxy: the server checked is on this machine or this network.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if s := strings.TrimSpace(string(body)); s != "" {
		fmt.Fprintln(out, s)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", target, resp.Status)
	}
	return nil
}

// newReloadCmd is `parley reload`: ask the running parley on http.listen to
// read its config again (POST /api/v1/reload with http.api_token), as
// SIGHUP does. Its bots added, changed or removed are started, restarted
// or stopped; the others run on. A config that does not load, or that
// changes a section every bot shares, is refused: exit 1 with the reason,
// the running config kept.
func newReloadCmd(e *cliEnv) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "reload",
		Short: "Make the running parley read its config again (as SIGHUP does)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := e.loadConfig(c)
			if err != nil {
				return err
			}
			health, err := healthzURL(cfg.HTTP.Listen)
			if err != nil {
				return usageError{Err: err}
			}
			if cfg.HTTP.APIToken.Reveal() == "" {
				return usageError{Err: fmt.Errorf("http.api_token is empty: the running parley has no API to ask (send it SIGHUP instead)")}
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			target := strings.TrimSuffix(health, "/healthz") + "/api/v1/reload"
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+cfg.HTTP.APIToken.Reveal())
			client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
			resp, err := client.Do(req)
			if err != nil {
				return fmt.Errorf("reload: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			fmt.Fprintln(e.io.Out, strings.TrimSpace(string(body)))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("reload: %s answered %s", target, resp.Status)
			}
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait (a bot stopped drains its turns first)")
	return c
}
