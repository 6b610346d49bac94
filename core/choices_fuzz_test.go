package core

import "testing"

// FuzzChoiceData checks that any data a platform hands back on a tap
// (forged included) either names a question's choice exactly as
// ChoiceData writes it, or is refused: never a panic, never a second
// spelling of one button, never a choice out of range.
func FuzzChoiceData(f *testing.F) {
	for _, s := range []string{"q42.1", "q1.0", "q0.0", "q-1.0", "q42.8", "q42.-1", "q42", "q.1", "r7.10", "", "q9223372036854775807.7",
		"q42.01", "q+42.1", "q42.1.2", "Q42.1", "q 42.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		id, i, err := ParseChoiceData(data)
		if err != nil {
			return
		}
		if id <= 0 || i < 0 || i >= MaxChoices {
			t.Fatalf("%q parsed to message %d choice %d", data, id, i)
		}
		if again := ChoiceData(id, i); again != data {
			t.Fatalf("%q parsed, but writes back as %q", data, again)
		}
		if len(ChoiceData(id, i)) > 64 {
			t.Fatalf("data for message %d choice %d is over Telegram's 64 bytes", id, i)
		}
	})
}
