package promise

// english: "I'll remind you at 5", "I'm going to check in tomorrow".
var english = entries{
	kHead: {"i'll", "i will", "i'm going to", "i am going to", "i'm gonna", "i shall", "i promise to",
		"i plan to"},
	kOffer: {"i can", "i could", "want me to", "like me to", "should i", "shall i", "can i",
		"i'd be happy to", "i'm happy to", "happy to", "i'd love to"},
	kNeg: {"won't", "not", "never", "don't", "wont"},
	kStrong: {"remind", "check in", "check on", "check back", "message you", "text you", "ping you",
		"write to you", "get back to you", "get back", "follow up", "reach out", "be in touch",
		"touch base", "circle back", "let you know", "keep you posted", "update you", "nudge you",
		"send you a reminder", "send a reminder", "drop you a", "give you a nudge", "give you a shout",
		"wake you", "come back to you", "check up on you", "look in on you", "call you"},
	kWeak: {"ask", "tell", "send", "write", "message", "text", "check", "share", "ping", "nudge"},
	kTime: {"tomorrow", "tmrw", "tonight", "later", "later today", "later tonight", "this evening",
		"this afternoon", "this weekend", "in the morning", "in the evening", "in the afternoon",
		"tomorrow morning", "tomorrow evening", "tomorrow afternoon", "tomorrow night", "next week",
		"in an hour", "in a few hours", "in a couple of hours", "in a few days", "in a bit",
		"in a while", "soon", "first thing", "monday", "tuesday", "wednesday", "thursday", "friday",
		"saturday", "sunday", "on monday", "on tuesday", "on wednesday", "on thursday", "on friday",
		"on saturday", "on sunday", "after your", "before your", "every day", "every morning", "daily",
		"every evening", "in half an hour",
		// Times bound to an event rather than a clock.
		"once you", "when you get back", "when you get home", "when you're back", "when you wake up",
		"after the", "before the", "after work", "after lunch", "after dinner", "after school", "before bed",
		"when you land", "when it's time"},
	// Reminding someone that they matter is said now, not later.
	kIgnore: {"remind you that", "remind you how", "remind you of how"},
	kAt:     {"at", "around", "in", "by"},
	kBreak:  {"that", "whether", "because", "if"},
	kCond: {"if you want", "if you'd like", "if you like", "if that helps", "if you need", "if you wish",
		"if it helps", "just say the word"},
}
