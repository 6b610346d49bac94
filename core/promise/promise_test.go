package promise

import (
	"strings"
	"testing"
	"time"
)

// TestPhrases checks common forms and hard negatives in each language.
func TestPhrases(t *testing.T) {
	for _, c := range []struct {
		text string
		want Verdict
	}{
		{"I'll remind you at 5.", Yes},
		{"I’ll check in tomorrow morning!", Yes},
		{"I'll ask you tomorrow how it went.", Yes},
		{"I'm going to text you tonight.", Yes},
		{"Tomorrow is Friday.", No},
		{"You'll do great tomorrow!", No},
		{"I'll keep that in mind.", No},
		{"I will not forget your birthday.", No},
		{"I'll remember that.", No},
		{"Let me know if you need anything.", No},
		{"Feel free to write whenever.", No},
		{"I reminded you yesterday.", No},
		{"I won't bother you tomorrow.", No},
		{"I'll tell you a story.", No},
		{"Should I remind you tomorrow?", Unsure},
		{"If you want, I can remind you.", Unsure},
		{"Te escribo mañana.", Yes},
		{"Mañana te lo recuerdo.", Yes},
		{"Te avisaré cuando sea la hora.", Yes},
		{"Mañana es viernes.", No},
		{"Lo tendré en cuenta.", No},
		{"No olvidaré tu cumpleaños.", No},
		{"No te escribiré mañana, descansa.", No},
		{"Te recuerdo que hoy tienes cita.", No},
		{"Ich melde mich morgen.", Yes},
		{"Ich werde dich um 5 daran erinnern.", Yes},
		{"Ich werde mich immer daran erinnern.", No},
		{"Morgen ist Freitag.", No},
		{"Ich werde dich morgen nicht stören.", No},
		{"Soll ich dich morgen erinnern?", Unsure},
		{"Je te rappellerai ce soir.", Yes},
		{"Je t'écris demain.", Yes},
		{"Je te rappelle que c'est demain.", No},
		{"Je ne t'écrirai pas demain.", No},
		{"Demain c'est vendredi.", No},
		{"Напишу тебе завтра.", Yes},
		{"Завтра напомню.", Yes},
		{"Я не напишу тебе завтра.", No},
		{"Напомню, что завтра пятница.", No},
		{"Я буду иметь это в виду.", No},
		{"我明天提醒你", Yes},
		{"明天我再问你", Yes},
		{"我会提醒你的。", Yes},
		{"我会记住的。", No},
		{"明天是星期五。", No},
		{"我昨天提醒过你。", No},
		{"明天我不提醒你了。", No},
		{"要不要我明天提醒你？", Unsure},
		{"You wrote: \"I'll remind you tomorrow\". Cute!", No},
		{"```\n// I'll remind you tomorrow\n```", No},
		{"> I'll message you tomorrow\n\nThat's what your friend said?", No},
	} {
		if got := Detect(c.text).Verdict; got != c.want {
			t.Errorf("Detect(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestFindingWords checks the promising words and the time words.
func TestFindingWords(t *testing.T) {
	for _, c := range []struct{ text, phrase, when string }{
		{"Great! I'll check in tomorrow morning to see how it went.", "I'll check in tomorrow morning", "tomorrow morning"},
		{"OK — **I'll remind you at 5 pm.**", "I'll remind you at 5 pm", "at 5 pm"},
		{"Tomorrow I'll ask you how it went.", "Tomorrow I'll ask", "Tomorrow"},
		{"I'll get back to you.", "I'll get back to you", ""},
		{"¡Suerte! Te escribo mañana.", "Te escribo mañana", "mañana"},
		{"Ich melde mich morgen früh bei dir.", "Ich melde mich morgen früh", "morgen früh"},
		{"Je te rappellerai à 18h.", "Je te rappellerai à 18h", "à 18h"},
		{"Хорошо, напишу тебе завтра вечером.", "напишу тебе завтра вечером", "завтра вечером"},
		{"好的，我明天8点提醒你。", "我明天8点提醒你", "明天8点"},
	} {
		f := Detect(c.text)
		if f.Verdict != Yes || f.Phrase != c.phrase || f.When != c.when {
			t.Errorf("Detect(%q) = %+v, want Yes %q %q", c.text, f, c.phrase, c.when)
		}
	}
	if f := Detect("Tomorrow is Friday."); f != (Finding{}) {
		t.Errorf("no promise: %+v, want the zero Finding", f)
	}
}

func FuzzDetect(f *testing.F) {
	for _, r := range loadReplies(f) {
		f.Add(r.text)
	}
	f.Add("I'll remind you at ")
	f.Add("“unclosed I'll text you tomorrow")
	f.Add("\xff\xfe I'll ping you in 5")
	f.Add("我明天8点")
	f.Fuzz(func(t *testing.T, s string) {
		got := Detect(s)
		if got.Phrase != "" && !strings.Contains(s, got.Phrase) {
			t.Fatalf("Phrase %q is not in %q", got.Phrase, s)
		}
		if got.When != "" && !strings.Contains(s, got.When) {
			t.Fatalf("When %q is not in %q", got.When, s)
		}
		if got.Verdict == No && (got.Phrase != "" || got.When != "") {
			t.Fatalf("No with words: %+v", got)
		}
	})
}

// nothingPromised is a typical reply of about 400 characters with no
// promise in it, though it speaks of tomorrow and of reminders.
const nothingPromised = "That sounds like a really long day, and honestly you handled it better than " +
	"most people would. Tomorrow is Friday, so the week is almost over! I'll keep in mind that " +
	"mornings are hard for you right now. **A few ideas:** take a short walk after lunch, drink " +
	"some water before coffee, and maybe set your own reminder for the dentist. Let me know if you " +
	"want to talk about the meeting later — I'm always here 🙂"

const promised = "That sounds like a really long day, and honestly you handled it better than " +
	"most people would. Get some rest tonight. I'll check in tomorrow morning to see how the " +
	"meeting went, and I'll remind you about the dentist at 5 pm."

func BenchmarkDetectNothingPromised(b *testing.B) {
	if Detect(nothingPromised).Verdict != No {
		b.Fatal("the reply promises")
	}
	b.ReportAllocs()
	for b.Loop() {
		Detect(nothingPromised)
	}
}

func BenchmarkDetectPromise(b *testing.B) {
	if Detect(promised).Verdict != Yes {
		b.Fatal("the reply promises nothing")
	}
	b.ReportAllocs()
	for b.Loop() {
		Detect(promised)
	}
}

// TestLongInputStaysLinear guards against quadratic work on one huge
// sentence full of cues.
func TestLongInputStaysLinear(t *testing.T) {
	for _, unit := range []string{"i won't remind you at 5 ", "我不会提醒你，", "te escribo no ", "**“"} {
		long := strings.Repeat(unit, 20000)
		start := time.Now()
		Detect(long)
		if d := time.Since(start); d > time.Second {
			t.Errorf("%d bytes of %q took %v", len(long), unit, d)
		}
	}
}
