// Package prompts holds the prompt templates the core renders for the
// model outside a conversation's own words: each has an id, a version and
// the sha256 of its text, so a run record says exactly which prompt a run
// was given. A change to a template's text is a new version.
package prompts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"text/template"
)

// Template is a named, versioned prompt template (text/template syntax;
// a variable it names but is not given is an error, not "<no value>").
type Template struct {
	id      string
	version int
	text    string
	sum     string
	tmpl    *template.Template
}

// New parses a template; it panics on a syntax error, as templates are
// written in the source.
func New(id string, version int, text string) *Template {
	t := template.Must(template.New(id).Option("missingkey=error").Parse(text))
	sum := sha256.Sum256([]byte(text))
	return &Template{id: id, version: version, text: text, sum: hex.EncodeToString(sum[:]), tmpl: t}
}

// ID is the template's name, e.g. "cron.agent_turn.reminder".
func (t *Template) ID() string { return t.id }

// Version is the template's version.
func (t *Template) Version() int { return t.version }

// SHA256 is the hex sha256 of the template's text.
func (t *Template) SHA256() string { return t.sum }

// Ref is how a transcript names the template: "id@vN".
func (t *Template) Ref() string { return fmt.Sprintf("%s@v%d", t.id, t.version) }

// Render fills the template with vars.
func (t *Template) Render(vars map[string]string) (string, error) {
	var b strings.Builder
	if err := t.tmpl.Execute(&b, vars); err != nil {
		return "", fmt.Errorf("rendering prompt %s: %w", t.Ref(), err)
	}
	return strings.TrimSpace(b.String()), nil
}

// CronAgentTurn is the execution prompt of a recurring job's turn. It
// reaches the model with the trigger event, never the transcript.
var CronAgentTurn = New("cron.agent_turn.reminder", 1, `This turn was started by a scheduled job, not by a message from them.
Job: "{{.job_name}}" (job {{.job_id}}), set up earlier in this conversation to run on the schedule "{{.schedule}}" in their time zone ({{.time_zone}}).
This is the occurrence of {{.occurrence_local}}.{{if .late}} It runs late, at {{.now_local}}: the bot was down when it was due. Say so if the lateness matters.{{end}}
What the job asks of you:
{{.instruction}}

Write the message to send them now, in your own voice, using what you know of them and of this conversation. If, having looked, there is truly nothing to tell them this time, answer with <SILENCE> alone; they will see that the job ran with nothing to report.`)

// builtin are the templates by id.
var builtin = map[string]*Template{CronAgentTurn.ID(): CronAgentTurn}

// Lookup returns the built-in template with the id.
func Lookup(id string) (*Template, bool) {
	t, ok := builtin[id]
	return t, ok
}

// IDs lists the built-in templates' ids, sorted.
func IDs() []string {
	ids := make([]string, 0, len(builtin))
	for id := range builtin {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
