package slacktest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// reactions answers reactions.add and reactions.remove as Slack does and
// sends users' reactions, edits and deletions of their DMs as events.
type reactions struct {
	*state
	*delivery
}

// reactionOn is one reaction on a message: who made it, and the emoji's
// name as Slack keeps it (an alias made canonical: thumbsup is +1).
type reactionOn struct {
	user string
	name string
}

// emojiAlias is the name Slack keeps for an alias it takes (thumbsup is
// +1), or name itself.
func emojiAlias(name string) string {
	switch name {
	case "thumbsup":
		return "+1"
	case "thumbsdown":
		return "-1"
	case "satisfied":
		return "laughing"
	case "rofl":
		return "rolling_on_the_floor_laughing"
	case "heavy_exclamation_mark":
		return "exclamation"
	case "poop", "shit":
		return "hankey"
	case "pencil":
		return "memo"
	case "email":
		return "e-mail"
	case "hand_with_index_and_middle_fingers_crossed":
		return "crossed_fingers"
	}
	return name
}

// standardEmoji are the names of Slack's standard emoji the fake knows
// (Slack has thousands; these are the common ones), aliases apart.
const standardEmoji = `+1 -1 heart orange_heart yellow_heart green_heart blue_heart purple_heart
black_heart white_heart broken_heart two_hearts sparkling_heart joy rolling_on_the_floor_laughing grinning
smiley smile grin laughing sweat_smile slightly_smiling_face upside_down_face wink blush innocent heart_eyes
smiling_face_with_3_hearts kissing_heart sunglasses thinking_face face_with_raised_eyebrow neutral_face
expressionless face_with_rolling_eyes smirk grimacing relieved sleeping exploding_head partying_face confused
worried open_mouth astonished flushed pleading_face cry sob scream disappointed sweat weary triumph rage angry
hugging_face handshake pray clap raised_hands wave ok_hand v crossed_fingers muscle eyes brain tada
confetti_ball birthday gift trophy first_place_medal fire sparkles star star2 zap 100 rocket bulb
white_check_mark heavy_check_mark ballot_box_with_check x negative_squared_cross_mark warning question
exclamation no_entry no_entry_sign heavy_plus_sign heavy_minus_sign point_right point_left point_up point_up_2
point_down hourglass_flowing_sand hourglass alarm_clock date calendar pushpin paperclip memo pencil2 books e-mail
bell lock key moneybag musical_note tea coffee beer beers pizza cake apple rainbow sunny rain_cloud snowflake
rose sunflower dog cat unicorn_face robot_face ghost hankey see_no_evil hear_no_evil speak_no_evil zzz
speech_balloon ok cool new smile_cat skull`

// canonicalEmoji is the name Slack keeps for name, and whether Slack knows
// it: a standard emoji, by its name or an alias, with an optional skin
// tone ("+1::skin-tone-2").
func canonicalEmoji(name string) (string, bool) {
	base, tone, toned := strings.Cut(name, "::")
	if toned && (len(tone) != len("skin-tone-2") || !strings.HasPrefix(tone, "skin-tone-") || tone[10] < '2' || tone[10] > '6') {
		return "", false
	}
	base = emojiAlias(base)
	if !slices.Contains(strings.Fields(standardEmoji), base) {
		return "", false
	}
	if toned {
		return base + "::" + tone, true
	}
	return base, true
}

// reactionTargetLocked finds the message reactions.add or .remove names:
// channel_not_found for a conversation the fake does not know (Slack
// wants its id; a user id is not one), message_not_found for a ts that is
// no message there (or a deleted one). Callers hold s.mu.
func (s *state) reactionTargetLocked(p params) (key, code string) {
	ch, ts := p["channel"], p["timestamp"]
	if _, ok := s.channels[ch]; !ok || ch == "" {
		return "", "channel_not_found"
	}
	key = ch + "/" + ts
	if m, ok := s.botMsgs[key]; ok && !m.Deleted {
		return key, ""
	}
	if _, ok := s.inbound[key]; ok {
		return key, ""
	}
	return "", "message_not_found"
}

// reactionsAdd adds the bot's reaction name to a message, as Slack does:
// invalid_name for a name Slack does not know, already_reacted when the
// bot has it already. In a DM the bot's own reaction comes back as a
// reaction_added event, as Slack sends the app every reaction there.
func (s *reactions) reactionsAdd(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, code := s.reactionTargetLocked(p)
	if code != "" {
		return nil, code
	}
	name, ok := canonicalEmoji(p["name"])
	if !ok {
		return nil, "invalid_name"
	}
	r := reactionOn{user: botUserID, name: name}
	if slices.Contains(s.reactions[key], r) {
		return nil, "already_reacted"
	}
	s.reactions[key] = append(s.reactions[key], r)
	if s.echo && s.channels[p["channel"]] == channelIM {
		s.emitLocked(s.reactionEventLocked(botUserID, p["channel"], p["timestamp"], name, false))
	}
	s.notify()
	return result{}, ""
}

// reactionsRemove takes back the bot's reaction name: no_reaction when
// the bot has none of that name on the message.
func (s *reactions) reactionsRemove(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, code := s.reactionTargetLocked(p)
	if code != "" {
		return nil, code
	}
	name, ok := canonicalEmoji(p["name"])
	if !ok {
		return nil, "invalid_name"
	}
	i := slices.Index(s.reactions[key], reactionOn{user: botUserID, name: name})
	if i < 0 {
		return nil, "no_reaction"
	}
	s.reactions[key] = slices.Delete(s.reactions[key], i, i+1)
	if s.echo && s.channels[p["channel"]] == channelIM {
		s.emitLocked(s.reactionEventLocked(botUserID, p["channel"], p["timestamp"], name, true))
	}
	s.notify()
	return result{}, ""
}

// reactionEventLocked is a reaction_added (or _removed) event by user on
// message ts of channel; item_user is the message's author. Callers hold
// s.mu.
func (s *state) reactionEventLocked(user, channel, ts, name string, removed bool) []byte {
	typ := "reaction_added"
	if removed {
		typ = "reaction_removed"
	}
	author := s.dmUser[channel]
	if _, ok := s.botMsgs[channel+"/"+ts]; ok {
		author = botUserID
	}
	return mustJSON(map[string]any{
		"type":      typ,
		"user":      user,
		"reaction":  name,
		"item_user": author,
		"item":      map[string]any{"type": "message", "channel": channel, "ts": ts},
		"event_ts":  s.nextTSLocked(),
	})
}

// ReactDM sends the event of from adding (or, when removed, taking back)
// the reaction name ("+1", "tea", Slack's names) on message ts of their
// DM with the bot: a bot message or their own. It returns the event_id.
// The reaction is kept as Slack keeps it, by its canonical name; a name
// Slack does not know is sent as it is, for tests of the unexpected.
func (s *reactions) ReactDM(from User, ts, name string, removed bool) (eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	ch, _ := s.dmLocked(from.ID)
	key := ch + "/" + ts
	if c, ok := canonicalEmoji(name); ok {
		name = c
	}
	r := reactionOn{user: from.ID, name: name}
	if i := slices.Index(s.reactions[key], r); removed && i >= 0 {
		s.reactions[key] = slices.Delete(s.reactions[key], i, i+1)
	} else if !removed && i < 0 {
		s.reactions[key] = append(s.reactions[key], r)
	}
	return s.emitLocked(s.reactionEventLocked(from.ID, ch, ts, name, removed))
}

// DeleteDM sends the message_deleted event of from deleting their DM
// message ts, with the message as it was in previous_message, and returns
// the event_id.
func (s *reactions) DeleteDM(from User, ts string) (eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	ch, _ := s.dmLocked(from.ID)
	key := ch + "/" + ts
	prev := s.inbound[key]
	delete(s.inbound, key)
	delete(s.reactions, key)
	now := s.nextTSLocked()
	return s.emitLocked(mustJSON(map[string]any{
		"type":             "message",
		"subtype":          "message_deleted",
		"hidden":           true,
		"deleted_ts":       ts,
		"channel":          ch,
		"previous_message": map[string]any{"type": "message", "text": prev, "user": from.ID, "team": teamID, "ts": ts},
		"ts":               now,
		"event_ts":         now,
		"channel_type":     channelIM,
	}))
}

// UnfurlDM sends the message_changed event Slack sends when it adds a
// link's preview to from's DM message ts: the text as it was, with an
// attachment; no person edited anything. It returns the event_id.
func (s *reactions) UnfurlDM(from User, ts, link string) (eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, _ := s.dmLocked(from.ID)
	text := s.inbound[ch+"/"+ts]
	msg := func(attachments []any) map[string]any {
		return map[string]any{"type": "message", "text": text, "user": from.ID, "team": teamID, "ts": ts, "attachments": attachments}
	}
	now := s.nextTSLocked()
	return s.emitLocked(mustJSON(map[string]any{
		"type":             "message",
		"subtype":          "message_changed",
		"hidden":           true,
		"message":          msg([]any{map[string]any{"id": 1, "from_url": link, "title": "A page", "original_url": link}}),
		"previous_message": msg(nil),
		"channel":          ch,
		"ts":               now,
		"event_ts":         now,
		"channel_type":     channelIM,
	}))
}

// BotReactions returns the names of the bot's reactions on message ts of
// channel, in the order they were made, as Slack keeps them (+1 for
// thumbsup).
func (s *reactions) BotReactions(channel, ts string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botReactionsLocked(channel, ts)
}

func (s *state) botReactionsLocked(channel, ts string) []string {
	var out []string
	for _, r := range s.reactions[channel+"/"+ts] {
		if r.user == botUserID {
			out = append(out, r.name)
		}
	}
	return out
}

// WaitBotReactions waits until the bot's reactions on message ts of
// channel are want, in order, and fails the test after timeout (call it
// from the test goroutine) with those there were.
func (s *reactions) WaitBotReactions(t testing.TB, channel, ts string, want []string, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, func() bool { return slices.Equal(s.botReactionsLocked(channel, ts), want) },
		func() string {
			return fmt.Sprintf("the bot's reactions on %s/%s to be %q, got %q", channel, ts, want, s.BotReactions(channel, ts))
		})
}
