package wire

// PermanentReason explains the Web API errors retrying cannot fix; ""
// for the others.
func PermanentReason(code string) string {
	switch code {
	case "channel_not_found":
		return "channel not found: the DM does not exist or the bot cannot see it"
	case "is_archived":
		return "the DM is archived (is the user's account deactivated?)"
	case "user_not_found":
		return "user not found"
	case "user_disabled":
		return "the user's account is deactivated"
	case "cannot_dm_bot":
		return "the user is a bot, which cannot be sent DMs"
	case "messages_tab_disabled":
		return "the app's Messages tab is turned off (App Home settings)"
	case "not_in_channel":
		return "the bot is not in this conversation"
	case "restricted_action":
		return "the workspace does not allow the bot to post here"
	case "msg_too_long":
		return "the message is too long for Slack"
	case "no_text":
		return "slack rejected the message as empty"
	case "message_not_found":
		return "the message is gone (deleted, or never the bot's)"
	case "cant_update_message", "edit_window_closed":
		return "slack does not let the bot edit this message"
	case "invalid_blocks":
		return "slack rejected the message's blocks"
	}
	return ""
}
