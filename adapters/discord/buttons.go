package discord

import (
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
)

// Discord's limits on a message's buttons: action rows of up to 5
// buttons, up to 5 rows; a label of up to 80 characters, a custom_id of
// up to 100.
const (
	maxRowButtons   = 5
	maxButtonRows   = 5
	maxButtonLabel  = 80
	maxButtonCustom = 100
)

// chosenMark is put before the label of the button a tap chose, when the
// question is closed.
const chosenMark = "✓ "

// choiceComponents renders choices as action rows of grey (secondary)
// buttons, five to a row, each with the choice's label and its Data as
// custom_id; nil for none. A choice Discord would refuse (no data, data
// too long) or past Discord's 25 buttons is left out: the core's data and
// counts are well within the limits.
func choiceComponents(choices []core.Choice) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	var row []discordgo.MessageComponent
	for _, c := range choices {
		if c.Data == "" || len(c.Data) > maxButtonCustom {
			continue
		}
		row = append(row, discordgo.Button{Label: buttonLabel(c.Label, c.Data), Style: discordgo.SecondaryButton, CustomID: c.Data})
		if len(row) == maxRowButtons {
			rows, row = append(rows, discordgo.ActionsRow{Components: row}), nil
		}
		if len(rows) == maxButtonRows {
			return rows
		}
	}
	if len(row) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: row})
	}
	return rows
}

// buttonLabel is label cut to Discord's 80 characters; a button needs a
// label, so an empty one shows the data.
func buttonLabel(label, data string) string {
	if label == "" {
		label = data
	}
	if utf8.RuneCountInString(label) <= maxButtonLabel {
		return label
	}
	return string([]rune(label)[:maxButtonLabel-1]) + "…"
}

// withChoices puts msg's buttons on the last of bodies, the part a user
// reads last.
func withChoices(bodies []*messageBody, choices []core.Choice) []*messageBody {
	if len(bodies) > 0 {
		bodies[len(bodies)-1].Components = choiceComponents(choices)
	}
	return bodies
}

// closedComponents are a question's buttons once a tap on the button
// tapped chose label: every button stays where it was, disabled, and the
// chosen one turns green with a ✓ before its label, so the user sees
// what they answered and cannot tap again. shown are the message's
// components as the interaction carried them; when they hold no button
// (an interaction without its message's components), the question shows
// one disabled "✓ label" button.
func closedComponents(shown []discordgo.MessageComponent, tapped, label string) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	found := false
	for _, c := range shown {
		var row discordgo.ActionsRow
		switch r := c.(type) {
		case *discordgo.ActionsRow:
			row = *r
		case discordgo.ActionsRow:
			row = r
		default:
			continue
		}
		var buttons []discordgo.MessageComponent
		for _, bc := range row.Components {
			var b discordgo.Button
			switch v := bc.(type) {
			case *discordgo.Button:
				b = *v
			case discordgo.Button:
				b = v
			default:
				continue
			}
			b.Disabled, b.ID = true, 0
			if b.CustomID == tapped && tapped != "" {
				b.Style, b.Label, found = discordgo.SuccessButton, buttonLabel(chosenMark+b.Label, b.CustomID), true
			}
			buttons = append(buttons, b)
		}
		if len(buttons) > 0 {
			rows = append(rows, discordgo.ActionsRow{Components: buttons})
		}
	}
	if found {
		return rows
	}
	custom := tapped
	if custom == "" || len(custom) > maxButtonCustom {
		custom = "chosen"
	}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: buttonLabel(chosenMark+label, custom), Style: discordgo.SuccessButton, CustomID: custom, Disabled: true},
	}}}
}

// buttonLabelOf is the label of the button with customID among a
// message's components, "" if it has none.
func buttonLabelOf(shown []discordgo.MessageComponent, customID string) string {
	for _, c := range shown {
		var inner []discordgo.MessageComponent
		switch r := c.(type) {
		case *discordgo.ActionsRow:
			inner = r.Components
		case discordgo.ActionsRow:
			inner = r.Components
		}
		for _, bc := range inner {
			switch b := bc.(type) {
			case *discordgo.Button:
				if b.CustomID == customID {
					return b.Label
				}
			case discordgo.Button:
				if b.CustomID == customID {
					return b.Label
				}
			}
		}
	}
	return ""
}
