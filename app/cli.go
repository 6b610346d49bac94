package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/app/admin"
	"github.com/parleybot/parley/store"
)

// Exit statuses (docs/contracts.md): 0 clean stop, 2 bad config or flag, 1 anything else.
const (
	exitOK     = 0
	exitFail   = 1
	exitConfig = 2
)

// IO is the process's standard streams, injected so tests can drive the CLI.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// usageError marks a bad flag, argument or config: exit status 2.
type usageError = admin.UsageError

// globalFlags are shared by every command.
type globalFlags struct {
	config    string
	logFormat string
	logLevel  string
}

// Run runs the CLI with args and returns the exit status. It is Main
// without the process around it (signals, os.Exit), so tests and other
// programs can run whole commands in-process.
func Run(ctx context.Context, args []string, stdio IO, lookup func(string) (string, bool)) int {
	root := newRoot(stdio, lookup)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stdio.Err, "parley:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitConfig
	}
	return exitFail
}

func newRoot(stdio IO, lookup func(string) (string, bool)) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "parley",
		Short:         "Parley runs LLM companion bots in direct messages",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{Err: fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.StringVarP(&g.config, "config", "c", "config.yaml", "config file (built-in defaults when the default file is absent)")
	pf.StringVar(&g.logFormat, "log-format", "", "log format: text or json (overrides log.format)")
	pf.StringVar(&g.logLevel, "log-level", "", "log level: debug, info, warn or error (overrides log.level)")

	env := &cliEnv{flags: g, io: stdio, lookup: lookup}
	root.AddCommand(
		newRunCmd(env),
		newChatCmd(env),
		newMigrateCmd(env),
		newDoctorCmd(env),
		newInitCmd(env),
		newVersionCmd(stdio),
		newHealthCmd(env),
		newReloadCmd(env),
	)
	root.AddCommand(admin.Commands(env)...)
	// Unknown subcommands and positional args are usage errors too.
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{Err: fmt.Errorf("unknown command %q (see 'parley --help')", args[0])}
		}
		return nil
	}
	root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return root
}

// noArgs rejects positional arguments as a usage error.
var noArgs = admin.NoArgs

func newVersionCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and platform",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(stdio.Out, versionLine())
			return nil
		},
	}
}

// WithStore loads the config, opens the store, runs f on it and closes it:
// the frame of every command that reads or edits the database.
func (e *cliEnv) WithStore(c *cobra.Command, f func(st *store.Store) error) error {
	cfg, err := e.loadConfig(c)
	if err != nil {
		return err
	}
	st, err := openStore(c.Context(), cfg, e.logger, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

// WithBotStore runs f on the store as bot sees it (its rows only), or on
// every bot's rows when bot is ""; several says whether the config runs
// more than one bot (lists then show each row's bot). A bot the config
// does not run is a usage error naming those it does.
func (e *cliEnv) WithBotStore(c *cobra.Command, bot string, f func(st *store.Store, several bool) error) error {
	cfg, err := e.loadConfig(c)
	if err != nil {
		return err
	}
	var ids []string
	for _, bc := range cfg.BotConfigs() {
		ids = append(ids, bc.BotID)
	}
	if bot != "" && !slices.Contains(ids, bot) {
		return usageError{Err: fmt.Errorf("--bot %q: the config runs %s", bot, strings.Join(ids, ", "))}
	}
	st, err := openStore(c.Context(), cfg, e.logger, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	view := st.AllBots()
	if bot != "" {
		view = st.ForBot(bot)
	}
	return f(view, len(ids) > 1)
}

// Out is where a command writes its output.
func (e *cliEnv) Out() io.Writer { return e.io.Out }

// cliEnv carries what every command needs to build the app.
type cliEnv struct {
	flags  *globalFlags
	io     IO
	lookup func(string) (string, bool)
	// logger is set once the config is loaded; it writes to logTo when
	// set (parley chat --log-file), else to the error stream.
	logger *slog.Logger
	logTo  io.Writer
}
