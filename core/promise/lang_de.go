package promise

// german: "Ich melde mich morgen", "Ich werde dich um 5 daran erinnern".
var german = entries{
	kHead:    {"ich werde", "ich werd", "werde ich", "ich will", "ich sag", "ich sage", "ich gebe", "ich geb"},
	kOffer:   {"ich kann", "ich könnte", "soll ich", "kann ich", "möchtest du dass ich", "willst du dass ich"},
	kNeg:     {"nie", "niemals", "kein", "keine"},
	kPostNeg: {"nicht"},
	kStrong: {"erinnern", "melden", "zurückmelden", "bescheid", "kontaktieren", "anschreiben",
		"schreiben", "nachfragen", "nachhaken", "erinnere", "schreibe", "melde"},
	kWeak: {"fragen", "erzählen", "sagen", "schicken"},
	kSelfStrong: {"ich sag dir bescheid", "ich sage dir bescheid", "ich gebe dir bescheid",
		"ich geb dir bescheid", "ich halte dich auf dem laufenden", "ich melde mich wieder",
		"ich melde mich nochmal", "ich melde mich noch mal"},
	kSelfWeak: {"ich melde mich", "ich meld mich", "melde mich", "melde ich mich", "ich erinnere dich",
		"erinnere ich dich", "ich schreibe dir", "ich schreib dir", "schreibe ich dir", "schreib ich dir",
		"ich frage dich", "ich frag dich", "frage ich dich", "frag ich dich", "ich schicke dir",
		"ich schick dir", "ich hake nach", "ich hake", "hake ich", "ich frage nach", "ich frag nach", "ich erinnere sie",
		"ich schreibe ihnen", "ich melde mich bei dir", "ich erzähle dir", "ich erzähl dir",
		"ich schaue nach dir", "ich schau nach dir", "ich sage dir", "ich sag dir"},
	kTime: {"morgen", "morgen früh", "morgen abend", "morgen nachmittag", "morgen mittag", "heute abend",
		"heute nachmittag", "später", "nachher", "bald", "nächste woche", "in einer stunde",
		"in ein paar stunden", "in ein paar tagen", "am wochenende", "übermorgen", "montag", "dienstag",
		"mittwoch", "donnerstag", "freitag", "samstag", "sonntag", "am montag", "am dienstag",
		"am mittwoch", "am donnerstag", "am freitag", "am samstag", "am sonntag", "heute später",
		"jeden tag", "jeden morgen", "jeden abend", "gleich morgen", "in einer halben stunde"},
	kAt:    {"um", "gegen", "in"},
	kBreak: {"dass", "ob"},
	// Remembering is not reminding: "ich werde mich immer daran erinnern".
	kIgnore: {"mich daran erinnern", "mich erinnern", "mich immer daran erinnern", "mich gern daran erinnern",
		"mich gerne daran erinnern", "mich immer erinnern", "erinnere mich", "erinnere dich an"},
	kCond: {"wenn du willst", "wenn du möchtest", "falls du", "wenn du magst", "wenn es dir hilft"},
}
