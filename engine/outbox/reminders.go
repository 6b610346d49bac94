package outbox

import (
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
)

// A reminder (a scheduled message the model set) carries buttons the core
// answers without the model: snooze it, or mark it done.
const (
	ReminderSnooze10 = "10"
	ReminderSnooze60 = "60"
	ReminderDone     = "d"
)

// OriginSnooze is the Job.Origin of a reminder snoozed by its button.
const OriginSnooze = "snooze"

// ReminderChoices are the buttons of the reminder job jobID.
func ReminderChoices(jobID int64) []core.Choice {
	id := "r" + strconv.FormatInt(jobID, 10) + "."
	return []core.Choice{{Label: "Snooze 10 min", Data: id + ReminderSnooze10}, {Label: "Snooze 1 h", Data: id + ReminderSnooze60},
		{Label: "Done", Data: id + ReminderDone}}
}

// ParseReminderData reads ReminderChoices' job id and action.
func ParseReminderData(data string) (jobID int64, action string, ok bool) {
	rest, ok := strings.CutPrefix(data, "r")
	if !ok {
		return 0, "", false
	}
	id, action, ok := strings.Cut(rest, ".")
	jobID, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || jobID <= 0 {
		return 0, "", false
	}
	switch action {
	case ReminderSnooze10, ReminderSnooze60, ReminderDone:
		return jobID, action, true
	}
	return 0, "", false
}
