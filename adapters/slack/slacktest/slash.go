package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// slashCommands sends slash commands to the app, over Socket Mode or by
// POST, and collects its answers.
type slashCommands struct {
	*state
	*delivery
}

// channel_name values of slash commands.
const (
	// ChannelNameDM is what Slack sends as channel_name for a command
	// typed in a direct message, the bot's or another person's.
	ChannelNameDM = "directmessage"
	// ChannelNamePrivate is a private channel's channel_name.
	ChannelNamePrivate = "privategroup"
)

// envelopeSlash is the Socket Mode envelope type of a slash command.
const envelopeSlash = "slash_commands"

// SlashResponse is the app's answer to a slash command: in Socket Mode
// the payload of its ack; with a commands URL the HTTP status and body.
type SlashResponse struct {
	// Status is the HTTP answer's status; 0 in Socket Mode.
	Status int
	// Body is the ack's payload or the HTTP answer's body; empty when the
	// app answered nothing (Slack then shows the user nothing).
	Body []byte
}

// Text returns the "text" of a JSON answer ("" if there is none), what
// Slack shows the user who typed the command.
func (r SlashResponse) Text() string {
	var m struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(r.Body, &m)
	return m.Text
}

// slashWire is a slash command's payload: form fields in an HTTP POST,
// a JSON object of strings in a Socket Mode envelope.
type slashWire struct {
	Token               string `json:"token"`
	TeamID              string `json:"team_id"`
	TeamDomain          string `json:"team_domain"`
	ChannelID           string `json:"channel_id"`
	ChannelName         string `json:"channel_name"`
	UserID              string `json:"user_id"`
	UserName            string `json:"user_name"`
	Command             string `json:"command"`
	Text                string `json:"text"`
	APIAppID            string `json:"api_app_id"`
	IsEnterpriseInstall string `json:"is_enterprise_install"`
	ResponseURL         string `json:"response_url"`
	TriggerID           string `json:"trigger_id"`
}

func (w slashWire) form() url.Values {
	return url.Values{
		"token": {w.Token}, "team_id": {w.TeamID}, "team_domain": {w.TeamDomain},
		"channel_id": {w.ChannelID}, "channel_name": {w.ChannelName},
		"user_id": {w.UserID}, "user_name": {w.UserName}, "command": {w.Command}, "text": {w.Text},
		"api_app_id": {w.APIAppID}, "is_enterprise_install": {w.IsEnterpriseInstall},
		"response_url": {w.ResponseURL}, "trigger_id": {w.TriggerID},
	}
}

// UseSlashCommandsURL makes slash commands go as signed, form-encoded HTTP
// POSTs to url, as Slack does for an app not in Socket Mode (each
// command's Request URL). Until it is called they go over Socket Mode.
func (s *slashCommands) UseSlashCommandsURL(url string) {
	if url == "" {
		panic("slacktest: UseSlashCommandsURL needs a URL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commandsURL = url
}

// SendSlashCommand has from type command ("/new") with text (what
// follows it, possibly "") in their DM with the bot, opening the DM first
// if needed. It returns the DM channel and the command's trigger_id, the
// key of its SlashResponse.
func (s *slashCommands) SendSlashCommand(from User, command, text string) (channelID, triggerID string) {
	s.mu.Lock()
	channelID, _ = s.dmLocked(from.ID)
	s.mu.Unlock()
	return channelID, s.SendSlashCommandIn(channelID, ChannelNameDM, from, command, text)
}

// SendSlashCommandIn has from type command with text in channelID, whose
// channel_name Slack sends as channelName (ChannelNameDM for any direct
// message, "privategroup", or a public channel's name). It returns the
// trigger_id. In Socket Mode the command is a slash_commands envelope
// (redelivered like events when it is not acked); with a commands URL it
// is POSTed once, as Slack does not retry slash commands.
func (s *slashCommands) SendSlashCommandIn(channelID, channelName string, from User, command, text string) (triggerID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	s.nextTrigger++
	triggerID = fmt.Sprintf("%d.%d.%s", 1000000000+s.nextTrigger, 4242, randomHex(16))
	w := slashWire{
		Token: verificationToken, TeamID: teamID, TeamDomain: teamName, ChannelID: channelID, ChannelName: channelName,
		UserID: from.ID, UserName: s.users[from.ID].Name, Command: command, Text: text, APIAppID: appID,
		IsEnterpriseInstall: "false", ResponseURL: s.srv.URL + "/commands/" + url.PathEscape(triggerID), TriggerID: triggerID,
	}
	ev := &event{id: triggerID, body: mustJSON(w), kind: envelopeSlash}
	s.events[triggerID] = ev
	if s.commandsURL != "" {
		s.wg.Add(1)
		go s.postSlash(s.commandsURL, ev, w.form())
	} else {
		s.deliverLocked(ev, 0, true)
	}
	s.notify()
	return triggerID
}

// postSlash POSTs a slash command to target once and records the answer.
func (s *slashCommands) postSlash(target string, ev *event, form url.Values) {
	defer s.wg.Done()
	status, body := s.postForm(target, []byte(form.Encode()))
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.deliveries++
	ev.acked = status >= 200 && status <= 299
	ev.response = &SlashResponse{Status: status, Body: body}
	s.notify()
}

// postForm makes one signed form POST; status 0 when it got no answer.
func (s *slashCommands) postForm(target string, body []byte) (int, []byte) {
	ctx, cancel := context.WithTimeout(s.ctx, httpAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(string(body)))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	SignRequest(req, body, s.signingSecret, time.Now())
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	return resp.StatusCode, b
}

// PostSlashCommand POSTs a form-encoded slash command body to url as
// Slack would, signed with the server's secret unless header already has
// X-Slack-Signature, and returns the answer. It is not a delivery: for
// testing signature checks and malformed commands.
func (s *slashCommands) PostSlashCommand(ctx context.Context, url string, body []byte, header http.Header) (status int, respBody []byte, err error) {
	return s.postSigned(ctx, url, "application/x-www-form-urlencoded", "slash command", body, header)
}

// WaitSlashResponse waits until the app answered the slash command
// triggerID (acked it, or answered its POST) and returns the answer;
// after timeout it fails the test. Call it from the test goroutine.
func (s *slashCommands) WaitSlashResponse(t testing.TB, triggerID string, timeout time.Duration) SlashResponse {
	t.Helper()
	var out SlashResponse
	s.waitFor(t, timeout,
		func() bool {
			ev := s.events[triggerID]
			if ev == nil || ev.response == nil {
				return false
			}
			out = *ev.response
			return true
		},
		func() string { return fmt.Sprintf("an answer to slash command %s", triggerID) })
	return out
}
