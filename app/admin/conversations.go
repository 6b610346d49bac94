package admin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// newConversationsCmd is `parley conversations list|delete`: who the bot
// talks to, and forgetting one of them entirely.
func newConversationsCmd(e Env) *cobra.Command {
	convs := &cobra.Command{
		Use:   "conversations",
		Short: "List or delete conversations",
		Args:  NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	var limit, offset int
	var bot string
	list := &cobra.Command{
		Use:   "list",
		Short: "List conversations, oldest first",
		Args:  NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if limit < 1 {
				return UsageError{fmt.Errorf("--limit must be at least 1, got %d", limit)}
			}
			if offset < 0 {
				return UsageError{fmt.Errorf("--offset must not be negative, got %d", offset)}
			}
			return e.WithBotStore(c, bot, func(st *store.Store, several bool) error {
				cs, err := st.Conversations(c.Context(), limit, offset)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(e.Out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, botColumn(several, "BOT")+"ID\tPLATFORM\tTHREAD\tUSER\tNAME\tTIME ZONE\tLAST MESSAGE (UTC)")
				for _, cv := range cs {
					last := "-"
					if cv.LastMessageAt != nil {
						last = cv.LastMessageAt.UTC().Format(time.DateTime)
					}
					fmt.Fprintf(w, "%s%d\t%s\t%s\t%s\t%s\t%s\t%s\n", botColumn(several, cv.BotID), cv.ID, cv.Platform, dash(cv.ChannelThreadID),
						dash(cv.ChannelUserID), dash(clip(cv.DisplayName, 30)), dash(cv.TimeZone), last)
				}
				return w.Flush()
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 100, "at most this many")
	list.Flags().IntVar(&offset, "offset", 0, "skip this many first")
	list.Flags().StringVar(&bot, "bot", "", "only this bot's conversations (default: every bot's)")

	var confirm bool
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a conversation with its messages, memory and jobs",
		Long: "Delete a conversation with its messages, memory and jobs.\n\n" +
			"While recurring jobs are enabled on it, nothing is deleted unless --confirm is given.",
		Args: OneID("conversation"),
		RunE: func(c *cobra.Command, args []string) error {
			id, _ := strconv.ParseInt(args[0], 10, 64)
			return e.WithStore(c, func(st *store.Store) error {
				d, err := st.DeleteConversation(c.Context(), id, confirm)
				if errors.Is(err, core.ErrBlockedByAutomations) {
					return blockedError{id: id, automations: d.Automations}
				}
				if err != nil {
					return err
				}
				switch d.Jobs {
				case 0:
					fmt.Fprintf(e.Out(), "conversation %d deleted\n", id)
				case 1:
					fmt.Fprintf(e.Out(), "conversation %d deleted with 1 job\n", id)
				default:
					fmt.Fprintf(e.Out(), "conversation %d deleted with %d jobs\n", id, d.Jobs)
				}
				return nil
			})
		},
	}
	del.Flags().BoolVar(&confirm, "confirm", false, "delete it even with recurring jobs enabled, and the jobs with it")
	convs.AddCommand(list, del)
	return convs
}

// blockedError is a deletion refused for the recurring jobs it would stop;
// it names them so the user knows what --confirm deletes.
type blockedError struct {
	id          int64
	automations []core.Automation
}

func (e blockedError) Error() string {
	jobs := make([]string, len(e.automations))
	for i, a := range e.automations {
		state := "disabled"
		if a.Enabled {
			state = "enabled"
		}
		if a.Name == "" {
			jobs[i] = fmt.Sprintf("job %d (%s)", a.ID, state)
			continue
		}
		jobs[i] = fmt.Sprintf("job %d %q (%s)", a.ID, a.Name, state)
	}
	return fmt.Sprintf("conversation %d has recurring jobs bound to it: %s; run again with --confirm to delete them with the conversation",
		e.id, strings.Join(jobs, ", "))
}

func (e blockedError) Unwrap() error { return core.ErrBlockedByAutomations }

// dash shows an empty value as "-" so columns stay readable.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// botColumn is a list's first column, the row's bot, when the config runs
// several bots; nothing with one.
func botColumn(several bool, bot string) string {
	if !several {
		return ""
	}
	return bot + "\t"
}
