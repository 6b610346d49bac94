package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/app/firstrun"
	"github.com/parleybot/parley/core/config"
)

func newInitCmd(e *cliEnv) *cobra.Command {
	var a firstrun.Answers
	c := &cobra.Command{
		Use:   "init",
		Short: "Ask for the model, the platforms and the database, check each, and write a config file",
		Long: `init asks a few questions (the model server, its key and model; a token
for each platform you want; where the database goes), checks each answer
live as doctor does (the model answers, the token is taken), and writes a
commented config file (-c, default config.yaml) with a fresh api_token
for the console. An existing file is replaced only when you say so (or
--force). --non-interactive asks nothing: the flags and the defaults are
the answers, and a failed check fails the command unless --no-checks.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			w := &firstrun.Wizard{In: e.io.In, Out: e.io.Out, Path: e.flags.config, Lookup: e.lookup, Check: initCheck(e.lookup)}
			err := w.Run(c.Context(), a)
			if err != nil && !errors.Is(err, context.Canceled) {
				return usageError{Err: err}
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&a.ModelURL, "model-url", "", "the model server's base URL (default "+firstrun.DefaultModelURL+")")
	f.StringVar(&a.APIKey, "api-key", "", "the model server's API key, written to the file")
	f.StringVar(&a.APIKeyEnv, "api-key-env", "", "write the key as ${NAME}, read from the environment at start, e.g. OPENAI_API_KEY")
	f.StringVar(&a.Model, "model", "", "the model (default "+firstrun.DefaultModel+")")
	f.StringVar(&a.TelegramToken, "telegram-token", "", "a Telegram bot token, from @BotFather")
	f.StringVar(&a.DiscordToken, "discord-token", "", "a Discord bot token")
	f.StringVar(&a.SlackBotToken, "slack-bot-token", "", "a Slack bot token (xoxb-…)")
	f.StringVar(&a.SlackAppToken, "slack-app-token", "", "a Slack app-level token for Socket Mode (xapp-…)")
	f.StringVar(&a.TelegramAPIURL, "telegram-api-url", "", "the Bot API's base URL (default Telegram's)")
	f.StringVar(&a.DiscordAPIURL, "discord-api-url", "", "Discord's API origin (default Discord's)")
	f.StringVar(&a.SlackAPIURL, "slack-api-url", "", "Slack's Web API base URL (default Slack's)")
	f.StringVar(&a.Database, "database", "", "a SQLite file or a postgres:// URL (default "+firstrun.DefaultDatabase+")")
	f.BoolVar(&a.NonInteractive, "non-interactive", false, "ask nothing: take the flags and the defaults")
	f.BoolVar(&a.Force, "force", false, "replace the config file if it exists")
	f.BoolVar(&a.NoChecks, "no-checks", false, "write the file without checking the model and the tokens")
	return c
}

// initCheck checks one part ("llm", an adapter's name) of a config init
// is writing, with doctor's probes; no secret is in what it returns.
func initCheck(lookup func(string) (string, bool)) firstrun.Checker {
	return func(ctx context.Context, yaml, part string) (string, error) {
		cfg, err := config.Parse("config.yaml", []byte(yaml), lookup)
		if err != nil {
			return "", err
		}
		checks, done, err := doctorChecks(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			return "", err
		}
		defer done()
		secrets := secretsIn(cfg, checks)
		for _, c := range checks {
			if c.name != part {
				continue
			}
			r := runCheck(ctx, c)
			if r.err != nil {
				return "", errors.New(redactAll(oneLine(r.err.Error()), secrets))
			}
			return redactAll(oneLine(r.detail), secrets), nil
		}
		return "", fmt.Errorf("nothing to check for %s", part)
	}
}
