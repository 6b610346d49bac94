package wire

import (
	"regexp"
	"strings"
)

// jsonPointer finds the "[json-pointer:/blocks/0/text]" of Slack's
// response_metadata messages.
var jsonPointer = regexp.MustCompile(`json-pointer:([^\]\s]+)`)

// JSONPointers are the JSON pointers Slack's response_metadata messages
// name (the parts of a post it refused), space-separated; "" for none.
func JSONPointers(messages []string) string {
	var pointers []string
	for _, m := range messages {
		for _, sm := range jsonPointer.FindAllStringSubmatch(m, -1) {
			pointers = append(pointers, sm[1])
		}
	}
	return strings.Join(pointers, " ")
}
