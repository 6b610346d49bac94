// Package admin holds the CLI's commands for a bot's data, which open the
// store and change it from outside the running bot: `parley jobs`,
// `parley conversations` and `parley pairing`; and the argument checks
// every command of the CLI shares.
package admin

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/store"
)

// Env is what the commands need of the CLI: the store of the loaded
// config, and where to write.
type Env interface {
	// WithStore opens the store of the config, runs f on it and closes it.
	WithStore(c *cobra.Command, f func(st *store.Store) error) error
	// WithBotStore runs f on the store as bot sees it (every bot's rows
	// when bot is ""); several says whether the config runs more than one
	// bot. A bot the config does not run is a UsageError.
	WithBotStore(c *cobra.Command, bot string, f func(st *store.Store, several bool) error) error
	Out() io.Writer
}

// Commands are the commands of this package, for the CLI's root.
func Commands(e Env) []*cobra.Command {
	return []*cobra.Command{newJobsCmd(e), newConversationsCmd(e), newPairingCmd(e)}
}

// UsageError marks a bad flag, argument or config: exit status 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// NoArgs rejects positional arguments as a usage error.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageError{fmt.Errorf("%s takes no arguments, got %q", c.CommandPath(), args)}
	}
	return nil
}

// OneID accepts exactly one argument, a numeric id of what.
func OneID(what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != 1 {
			return UsageError{fmt.Errorf("%s takes one %s id", c.CommandPath(), what)}
		}
		if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
			return UsageError{fmt.Errorf("%s id %q is not a number", what, args[0])}
		}
		return nil
	}
}
