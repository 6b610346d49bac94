package admin

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/store"
)

// newPairingCmd is `parley pairing list|approve CODE|deny CODE`: the users
// who asked to talk to a bot under bot.dm_policy: pairing, and the owner's
// answer. An approval is kept in the database: the user's next message is
// answered by every replica, without a restart.
func newPairingCmd(e Env) *cobra.Command {
	pairing := &cobra.Command{
		Use:   "pairing",
		Short: "List, approve or deny the codes of users asking to talk to the bot (bot.dm_policy: pairing)",
		Args:  NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	var bot string
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the codes waiting for an answer, newest first",
		Args:  NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return e.WithBotStore(c, bot, func(st *store.Store, several bool) error {
				ps, err := st.Pairings(c.Context(), time.Now(), all)
				if err != nil {
					return err
				}
				if len(ps) == 0 {
					fmt.Fprintln(e.Out(), "no codes are waiting")
					return nil
				}
				w := tabwriter.NewWriter(e.Out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, botColumn(several, "BOT")+"CODE\tSTATUS\tPLATFORM\tUSER\tNAME\tASKED (UTC)\tEXPIRES (UTC)")
				for _, p := range ps {
					expires := p.ExpiresAt.UTC().Format(time.DateTime)
					if p.Status != access.Pending {
						expires = "-"
					}
					fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", botColumn(several, p.BotID), p.Code, p.Status, p.Platform,
						p.UserID, dash(clip(p.DisplayName, 30)), p.CreatedAt.UTC().Format(time.DateTime), expires)
				}
				return w.Flush()
			})
		},
	}
	list.Flags().StringVar(&bot, "bot", "", "only this bot's codes (default: every bot's)")
	list.Flags().BoolVar(&all, "all", false, "the users approved too")
	pairing.AddCommand(list, decideCmd(e, true), decideCmd(e, false))
	return pairing
}

// decideCmd is `parley pairing approve CODE` or `deny CODE`.
func decideCmd(e Env, approve bool) *cobra.Command {
	use, short, done := "deny CODE", "Deny a code: its user is not let in", "denied"
	if approve {
		use, short, done = "approve CODE", "Approve a code: its user's next message is answered", "approved"
	}
	var bot string
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || access.NormalizeCode(args[0]) == "" {
				return UsageError{fmt.Errorf("%s takes one code, e.g. %s K7XM2QPA", c.CommandPath(), c.CommandPath())}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return e.WithBotStore(c, bot, func(st *store.Store, _ bool) error {
				p, err := st.DecidePairing(c.Context(), args[0], approve, "cli", time.Now())
				if err != nil {
					return err
				}
				who := string(p.Platform) + " user " + p.UserID
				if p.DisplayName != "" {
					who += " (" + p.DisplayName + ")"
				}
				fmt.Fprintf(e.Out(), "%s %s for bot %s\n", done, who, p.BotID)
				return nil
			})
		},
	}
	c.Flags().StringVar(&bot, "bot", "", "the bot the code was given by (default: any)")
	return c
}
