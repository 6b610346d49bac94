package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A question with choices is a bot message whose buttons the user taps
// (docs/contracts.md, "Choices"). The core stores the question with its
// choices (Message.Metadata "choices"), gives each button Data naming the
// question and the choice, and hands the adapter OutboundMessage.Choices;
// an adapter that can (Capabilities.Choices) renders them as buttons, and
// for any other the core writes them as numbered lines. A tap comes back
// through Host.HandleTap: the core checks it against its record (the data
// alone is never trusted), stores the choice as the user's message, and
// says how to acknowledge it.

// Limits of a question, as tool offer_choices takes them.
const (
	MinChoices     = 2
	MaxChoices     = 8
	MaxChoiceLabel = 40 // characters
)

// Choice is one button of an outbound message.
type Choice struct {
	// Label is what the button shows, and what the user says by tapping
	// it (at most MaxChoiceLabel characters).
	Label string
	// Data is what the platform carries back on a tap (at most 64 bytes,
	// Telegram's callback_data): the core's name for the button.
	Data string
}

// Tap is a user's tap on a button: InboundMessage.Tap. The message's
// Text, if the platform sends one, is the button's label; the core reads
// the label from its own record.
type Tap struct {
	// Data is the tapped button's Data, as the platform returned it.
	Data string
	// MessageID is the platform id of the message the button is on.
	MessageID string
	// ID is the platform's id of the tap (Telegram's callback query id,
	// Discord's interaction id, Slack's action trigger): a tap delivered
	// again has the same ID, and is stored once.
	ID string
}

// TapAnswer is how an adapter acknowledges a tap (Telegram's
// answerCallbackQuery, Discord's interaction response, Slack's ack).
type TapAnswer struct {
	// Chosen is the label of the choice the tap made, "" when the tap
	// made none (the question was answered, the button is not one the
	// core knows in this conversation). With a choice made the adapter
	// closes or marks the question's buttons.
	Chosen string
	// Notice is a short text to show the user with the acknowledgement
	// ("Already answered."), "" for none.
	Notice string
}

// Notices of a tap that makes no choice.
const (
	NoticeAlreadyAnswered = "Already answered."
	NoticeStaleButton     = "This button no longer works."
)

// ChoiceData names choice i of the question stored as message id: the
// Data of its button.
func ChoiceData(messageID int64, i int) string {
	return "q" + strconv.FormatInt(messageID, 10) + "." + strconv.Itoa(i)
}

// Errors of a tap the store refuses (core.InboundRecord.Answers).
var (
	// ErrAlreadyAnswered: the question took its one answer already.
	ErrAlreadyAnswered = errors.New("the question was answered already")
	// ErrStaleChoice: no such question in the conversation, or no such
	// choice (forged data, another user's button, a deleted message).
	ErrStaleChoice = errors.New("no such question or choice in this conversation")
)

// ErrNotChoiceData is returned by ParseChoiceData for data that does not
// name a question's choice.
var ErrNotChoiceData = errors.New("not a question's button")

// ParseChoiceData reads ChoiceData's message id and choice index.
func ParseChoiceData(data string) (messageID int64, i int, err error) {
	rest, ok := strings.CutPrefix(data, "q")
	if !ok {
		return 0, 0, ErrNotChoiceData
	}
	id, idx, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, 0, ErrNotChoiceData
	}
	messageID, err1 := strconv.ParseInt(id, 10, 64)
	i, err2 := strconv.Atoi(idx)
	// Only the spelling ChoiceData writes: one button, one data.
	if err1 != nil || err2 != nil || messageID <= 0 || i < 0 || i >= MaxChoices || ChoiceData(messageID, i) != data {
		return 0, 0, fmt.Errorf("%w: %q", ErrNotChoiceData, data)
	}
	return messageID, i, nil
}

// ChoicesKey is the Message.Metadata key holding a question's choice
// labels; ChoiceDataKey, when set, their data (buttons the core answers
// itself, such as a reminder's), else ChoiceData of the message's id.
// OneAnswerKey, true on a message with ChoiceDataKey, makes its buttons
// a question that takes one answer (a command's confirmation).
const (
	ChoicesKey    = "choices"
	ChoiceDataKey = "choice_data"
	OneAnswerKey  = "one_answer"
)

// MessageChoices are the buttons stored message m shows, none if it asks
// nothing (or asks a question and is not stored: its buttons need its id).
func MessageChoices(m Message) []Choice {
	labels := ChoiceLabels(m)
	if len(labels) == 0 {
		return nil
	}
	data := metaStrings(m.Metadata[ChoiceDataKey])
	if len(data) != len(labels) && m.ID == 0 {
		return nil
	}
	out := make([]Choice, len(labels))
	for i, l := range labels {
		out[i] = Choice{Label: l, Data: ChoiceData(m.ID, i)}
		if len(data) == len(labels) {
			out[i].Data = data[i]
		}
	}
	return out
}

// ChoiceLabels are the labels of the buttons message m shows, nil if it
// shows none.
func ChoiceLabels(m Message) []string { return metaStrings(m.Metadata[ChoicesKey]) }

// QuestionChoices are the choices m asks the user to pick from (a
// question's, whose tap is the user's answer), nil for a message without
// buttons or whose buttons the core answers itself (a reminder's).
func QuestionChoices(m Message) []string {
	if m.Metadata[ChoiceDataKey] != nil {
		return nil
	}
	return ChoiceLabels(m)
}

// metaStrings reads a list of strings from metadata, as stored or as
// read back from JSON.
func metaStrings(x any) []string {
	switch v := x.(type) {
	case []string:
		return v
	case []any: // read back from JSON
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Question is what tool offer_choices asks the user during a turn: sent
// after the turn's reply, with a button per choice.
type Question struct {
	Text    string
	Choices []string
}

// TapHandler takes the taps of the buttons an adapter rendered; the Host
// handed to adapters implements it.
type TapHandler interface {
	// HandleTap records the tap msg (msg.Tap set) as the user's choice when
	// it names an open question of msg's conversation, and returns how to
	// acknowledge it. It answers within the platform's deadline for an
	// acknowledgement (Discord's 3 s): it stores, it does not wait for a
	// turn. An error means the tap could not be recorded now (the
	// database is down): acknowledge it without a choice.
	HandleTap(ctx context.Context, msg InboundMessage) (TapAnswer, error)
}
