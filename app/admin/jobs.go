package admin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// newJobsCmd is `parley jobs list|cancel`: what the bot promised to send,
// and taking a promise back.
func newJobsCmd(e Env) *cobra.Command {
	jobs := &cobra.Command{
		Use:   "jobs",
		Short: "List or cancel scheduled messages, recurring jobs and follow-ups",
		Args:  NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	var conv int64
	var status string
	var limit int
	var bot string
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Args:  NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			switch core.JobStatus(status) {
			case "", core.JobPending, core.JobSending, core.JobSent, core.JobCancelled, core.JobFailed:
			default:
				return UsageError{fmt.Errorf("--status %q: want pending, sending, sent, cancelled or failed", status)}
			}
			if limit < 1 {
				return UsageError{fmt.Errorf("--limit must be at least 1, got %d", limit)}
			}
			return e.WithBotStore(c, bot, func(st *store.Store, several bool) error {
				js, err := st.Jobs(c.Context(), conv, core.JobStatus(status), limit)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(e.Out(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, botColumn(several, "BOT")+"ID\tCONVERSATION\tKIND\tSTATUS\tDUE (UTC)\tATTEMPTS\tTEXT\tLAST ERROR")
				for _, j := range js {
					whose := ""
					if several {
						// A job says its conversation; the conversation its bot.
						cv, err := st.Conversation(c.Context(), j.ConversationID)
						if err != nil {
							return err
						}
						whose = cv.BotID
					}
					fmt.Fprintf(w, "%s%d\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", botColumn(several, whose), j.ID, j.ConversationID, j.Kind, j.Status,
						j.DueAt.UTC().Format(time.DateTime), j.Attempts, clip(jobText(j), 40), clip(j.LastError, 40))
				}
				return w.Flush()
			})
		},
	}
	list.Flags().Int64Var(&conv, "conversation", 0, "only this conversation's jobs")
	list.Flags().StringVar(&status, "status", "", "only jobs with this status: pending, sending, sent, cancelled, failed")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many")
	list.Flags().StringVar(&bot, "bot", "", "only this bot's jobs (default: every bot's)")
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending job",
		Args:  OneID("job"),
		RunE: func(c *cobra.Command, args []string) error {
			id, _ := strconv.ParseInt(args[0], 10, 64)
			return e.WithStore(c, func(st *store.Store) error {
				j, err := st.Job(c.Context(), id)
				if err != nil {
					return fmt.Errorf("cancelling job %d: %w", id, err)
				}
				if _, err := st.CancelJob(c.Context(), j.ConversationID, id, "cli"); err != nil {
					if errors.Is(err, core.ErrNotPending) {
						return fmt.Errorf("cancelling job %d: it is %s, not pending", id, j.Status)
					}
					return fmt.Errorf("cancelling job %d: %w", id, err)
				}
				fmt.Fprintf(e.Out(), "job %d cancelled: %s\n", id, clip(jobText(j), 60))
				return nil
			})
		},
	}
	jobs.AddCommand(list, cancel)
	return jobs
}

// jobText is what a job is, in a line: a recurring job's name and
// schedule, another's text.
func jobText(j core.Job) string {
	if j.Kind == core.JobAgentTurn {
		return fmt.Sprintf("%s (%s)", j.Name, j.Recurrence)
	}
	return j.Text
}

// clip keeps the first n characters of s on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
