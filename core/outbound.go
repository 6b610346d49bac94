package core

// RoutedOrigin reports whether a job's origin is the API's (a message the
// bot owner's systems routed into the conversation).
func RoutedOrigin(origin string) bool {
	switch origin {
	case "api", "connector", "system":
		return true
	}
	return false
}
