package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core"
)

func newRunCmd(e *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run the bot with the configured adapters and the web chat",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := e.loadConfig(c)
			if err != nil {
				return err
			}
			ctx := c.Context()
			a, err := buildApp(ctx, cfg, e.logger, appOptions{
				// The terminal belongs to `parley chat` unless the owner enabled it.
				wantAdapter: func(_ string, enabled bool) bool { return enabled },
				serveHTTP:   true,
				lookup:      e.lookup,
			})
			if err != nil {
				return err
			}
			if err := a.start(ctx); err != nil {
				_ = a.stop()
				return err
			}
			if a.http != nil {
				e.logger.Info("parley is running", "web_chat", "http://"+a.http.Addr()+"/")
			}
			a.reloadOnHangUp(ctx)
			e.logger.Info("stopping: draining in-flight turns")
			if err := a.stop(); err != nil {
				return err
			}
			e.logger.Info("stopped")
			return nil
		},
	}
}

func newChatCmd(e *cliEnv) *cobra.Command {
	var bot, logFile string
	c := &cobra.Command{
		Use:   "chat",
		Short: "Talk to the bot in the terminal (same core and store as run)",
		Long: "Talk to the bot in the terminal, with the same core and store as run.\n\n" +
			"Log lines would land between the prompts, so only errors are logged\n" +
			"to the terminal; --log-file FILE keeps every line at log.level instead\n" +
			"(--log-level still wins for the terminal).",
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if logFile != "" {
				f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					return usageError{Err: fmt.Errorf("--log-file: %w", err)}
				}
				defer f.Close()
				e.logTo = f
			} else if !c.Flags().Changed("log-level") {
				e.flags.logLevel = "error"
			}
			cfg, err := e.loadConfig(c)
			if err != nil {
				return err
			}
			ctx := c.Context()
			var term *terminal.Adapter
			a, err := buildApp(ctx, cfg, e.logger, appOptions{
				onlyBot: cmp.Or(bot, cfg.BotConfigs()[0].BotID),
				// By the adapter's name ("terminal"), not its platform
				// ("console"): see terminal.Platform.
				wantAdapter: func(name string, _ bool) bool { return name == terminal.Name },
				configure: func(ad core.Adapter) {
					if ta, ok := ad.(*terminal.Adapter); ok {
						ta.In, ta.Out = e.io.In, e.io.Out
						term = ta
					}
				},
			})
			if err != nil {
				return err
			}
			if term == nil {
				_ = a.stop()
				return fmt.Errorf("the terminal adapter is not available")
			}
			if err := a.start(ctx); err != nil {
				_ = a.stop()
				return err
			}
			select {
			case <-ctx.Done():
			case <-term.Done():
				// Input ended: let the last turn answer before leaving.
				waitIdle(ctx, a)
			}
			return a.stop()
		},
	}
	c.Flags().StringVar(&bot, "bot", "", "the bot to talk to (default: the config's first)")
	c.Flags().StringVar(&logFile, "log-file", "", "append the log to this file, at log.level (default: only errors, to the terminal)")
	return c
}

// waitIdle waits until the terminal's conversations have no queued or
// running run, bounded. Runs are kept by platform, so this asks for
// terminal.Platform ("console"), not the adapter's name.
func waitIdle(ctx context.Context, a *app) {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout+a.cfg.LLM.Timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		busy, err := a.bots[0].store.HasPendingRuns(ctx, terminal.Platform)
		if err != nil || !busy {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func newMigrateCmd(e *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database schema",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := e.loadConfig(c)
			if err != nil {
				return err
			}
			st, err := openStore(c.Context(), cfg, e.logger, nil)
			if err != nil {
				return err
			}
			defer st.Close()
			v, err := st.SchemaVersion(c.Context())
			if err != nil {
				return fmt.Errorf("reading schema version: %w", err)
			}
			fmt.Fprintf(e.io.Out, "schema at version %d (%s)\n", v, cfg.Store.Driver)
			return nil
		},
	}
}
