package llm_test

import (
	"context"
	"testing"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// BenchmarkSpeak measures a Speak against the fake, from the call to the
// checked Ogg Opus bytes: what Parley adds to a text-to-speech model's own
// time (a reply of 173 characters: 3.5 s of audio in 6 pages).
func BenchmarkSpeak(b *testing.B) {
	bundle := setupSpeaker(b, nil)
	bundle.srv.Speech.Respond(llmtest.Generates)
	text := "Your table for two is booked at eight tonight at Luigi's. " +
		"I'll remind you at seven, and I've added it to your calendar. " +
		"Would you like me to send the address to Ada as well?"
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		audio, err := bundle.sp.Speak(ctx, text)
		if err != nil || len(audio) == 0 {
			b.Fatalf("speak: %v", err)
		}
	}
}
