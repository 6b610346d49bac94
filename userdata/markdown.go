package userdata

import (
	"fmt"
	"strings"

	"github.com/parleybot/parley/core"
)

// stamp is how the transcript writes a time, in the user's zone.
const stamp = "Mon 2 Jan 2006 15:04"

// Markdown is d as a readable transcript: who and when, the conversation,
// then what the bot keeps about the user, section by section. Text that
// people or the model wrote is quoted, so that a line of it never reads
// as a heading or a speaker of the transcript.
func (d Data) Markdown() string {
	var b strings.Builder
	d.header(&b)
	section(&b, "Conversation", len(d.Messages), func() {
		for _, m := range d.Messages {
			writeMessage(&b, m)
		}
	})
	section(&b, "What I remember", len(d.Facts), func() {
		for _, f := range d.Facts {
			fmt.Fprintf(&b, "- %s · %s (since %s)\n", f.Key, oneLine(f.Text), f.Created.Format(stamp))
		}
	})
	section(&b, "Earlier sessions", len(d.Summaries), func() {
		for _, s := range d.Summaries {
			writeSummary(&b, s)
		}
	})
	section(&b, "Scheduled", len(d.Jobs), func() {
		for _, j := range d.Jobs {
			writeJob(&b, j)
		}
	})
	section(&b, "Mood", len(d.Mood), func() {
		for _, m := range d.Mood {
			fmt.Fprintf(&b, "- %s · valence %+.2f, arousal %+.2f · %s", m.Time.Format(stamp), m.Valence, m.Arousal, m.Source)
			if m.Reason != "" {
				fmt.Fprintf(&b, " · %s", oneLine(m.Reason))
			}
			b.WriteString("\n")
		}
	})
	section(&b, "Limits", len(d.Limits), func() {
		for _, l := range d.Limits {
			fmt.Fprintf(&b, "- %s · message %d held by the limit %s\n", l.Time.Format(stamp), l.Seq, l.Limit)
		}
	})
	return b.String()
}

func (d Data) header(b *strings.Builder) {
	fmt.Fprintf(b, "# Your data with %s\n\n", d.BotID)
	fmt.Fprintf(b, "Everything stored about you with this bot, exported %s (%s).\n\n", d.ExportedAt.Format(stamp), d.TimeZone)
	fmt.Fprintf(b, "- Name: %s\n", oneLine(d.DisplayName))
	fmt.Fprintf(b, "- Platform: %s, user id %s\n", d.Platform, d.UserID)
	fmt.Fprintf(b, "- Bot: %s, conversation %d\n", d.BotID, d.ConversationID)
	fmt.Fprintf(b, "- Time zone: %s (every time below is in it)\n", d.TimeZone)
}

// section writes a titled section, body or a line saying it is empty.
func section(b *strings.Builder, title string, n int, body func()) {
	if !strings.HasSuffix(b.String(), "\n\n") {
		b.WriteString("\n") // one blank line before, not two
	}
	fmt.Fprintf(b, "## %s\n\n", title)
	if n == 0 {
		b.WriteString("Nothing stored.\n")
		return
	}
	body()
}

func writeMessage(b *strings.Builder, m Message) {
	fmt.Fprintf(b, "**%s** · %s", speaker(m), m.Time.Format(stamp))
	if m.Edited && !m.Deleted {
		b.WriteString(" · edited")
	}
	if m.Delivery == string(core.DeliveryFailed) || m.Delivery == string(core.DeliveryDropped) {
		b.WriteString(" · not delivered")
	}
	if m.Limited != "" {
		fmt.Fprintf(b, " · held by the limit %s", m.Limited)
	}
	b.WriteString("\n\n")
	if m.Deleted {
		b.WriteString("(deleted)\n\n")
		return
	}
	body := make([]string, 0, 1+len(m.Files))
	if m.Text != "" {
		body = append(body, m.Text)
	}
	for _, f := range m.Files {
		body = append(body, "Attached: "+fileLine(f))
	}
	if len(body) > 0 {
		quote(b, "", strings.Join(body, "\n"))
	}
}

// speaker names who wrote m, as the user sees it.
func speaker(m Message) string {
	switch {
	case m.Role == string(core.RoleAssistant):
		return "Bot"
	case m.Role == string(core.RoleUser) && m.Source == string(core.SourceCronTurn):
		// A recurring job's trigger event, stored as the user's turn.
		return "Scheduled job"
	case m.Role == string(core.RoleUser):
		return "You"
	}
	return "System"
}

func fileLine(f File) string {
	name := f.Name
	if name == "" {
		name = "a file"
	}
	details := []string{f.Kind}
	if f.MIME != "" {
		details = append(details, f.MIME)
	}
	if f.Size > 0 {
		details = append(details, core.ByteSize(f.Size))
	}
	return fmt.Sprintf("%s (%s)", oneLine(name), strings.Join(details, ", "))
}

func writeSummary(b *strings.Builder, s Summary) {
	ended := "ongoing"
	if s.Ended != nil {
		ended = s.Ended.Format(stamp)
	}
	fmt.Fprintf(b, "### Session %d · %s – %s\n\n", s.RecordID, s.Started.Format(stamp), ended)
	if s.Summary == "" {
		b.WriteString("(not summarised)\n\n")
		return
	}
	quote(b, "", s.Summary)
}

func writeJob(b *strings.Builder, j Job) {
	fmt.Fprintf(b, "- %s %d", jobKind(j.Kind), j.ID)
	if j.Name != "" {
		fmt.Fprintf(b, " “%s”", oneLine(j.Name))
	}
	fmt.Fprintf(b, " · %s · due %s", j.Status, j.Due.Format(stamp))
	if j.Recurrence != "" {
		fmt.Fprintf(b, " · repeats %s", j.Recurrence)
	}
	fmt.Fprintf(b, " · made %s\n", j.Created.Format(stamp))
	if j.Text != "" {
		quote(b, "  ", j.Text)
	}
	if j.ImageURL != "" {
		fmt.Fprintf(b, "  > Image: %s\n\n", j.ImageURL)
	}
}

// jobKind names a job's kind for people.
func jobKind(kind string) string {
	switch core.JobKind(kind) {
	case core.JobMessage:
		return "Message"
	case core.JobAgentTurn:
		return "Recurring job"
	case core.JobProactive:
		return "Check-in"
	}
	return "Job (" + kind + ")"
}

// quote writes text as a block quote indented by indent, and a blank
// line after it.
func quote(b *strings.Builder, indent, text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\r\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		b.WriteString(indent)
		if line == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// oneLine is s on one line, for a list item.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
