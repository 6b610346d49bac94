package promise

// Chinese has no spaces between words: its cues are substrings, looked
// for in the sentence as it is.
var (
	// zhStrong promise on their own with a future word or a time: "我会提醒你".
	zhStrong = []string{"提醒你", "提醒您", "联系你", "联系您", "找你", "给你发消息", "给你发信息",
		"发消息给你", "发信息给你", "给你留言", "通知你", "叫你起床", "喊你", "问候你", "跟进",
		"回复你", "给你打电话", "来看看你", "看看你怎么样", "关心一下你", "催你", "叫醒你"}
	// zhWeak promise only with a time: "明天问你", "晚点告诉你".
	zhWeak = []string{"问你", "问问你", "告诉你", "跟你说", "和你说", "给你发", "发给你", "给你讲",
		"问一下你", "问下你", "跟你讲", "和你聊", "跟你聊", "找您", "叫你"}
	// zhFuture mark the bot's own future or intent before the verb.
	zhFuture = []string{"会", "再", "到时", "记得", "一定", "就来", "我来", "准时"}
	// zhNeg, zhPast, zhOffer and zhCond undo or soften a verb in its clause.
	zhNeg   = []string{"不", "别", "没", "勿"}
	zhPast  = []string{"昨天", "刚才", "上次", "之前", "已经", "前天", "那天"}
	zhOffer = []string{"要不要我", "需要我", "要我", "我可以", "我能", "想让我", "让我", "可以帮你", "好不好", "好吗"}
	// zhAsk hold 不 and ask rather than deny: "要不要我明天提醒你？".
	zhAsk  = []string{"要不要", "好不好", "是不是", "可不可以", "需不需要"}
	zhCond = []string{"如果你", "要是你", "你要是", "如果需要", "如果你愿意", "假如你"}
	// zhAfter right after the verb make it past: "提醒过你".
	zhAfter = []string{"过", "了"}
	// zhTimes longest first, so that "明天早上" wins over "明天".
	zhTimes = []string{"明天早上", "明天晚上", "明天下午", "明天中午", "明天上午", "今天晚上", "今天下午",
		"晚些时候", "过一会儿", "明早", "明晚", "明天", "今晚", "晚点", "晚一点", "待会儿", "待会",
		"等会儿", "等会", "一会儿", "稍后", "回头", "晚上", "下午", "早上", "下周", "下星期", "周末",
		"到时候", "之后", "过几天", "过几个小时", "几个小时后", "过一会", "过两天", "下班后", "下班以后", "回家后",
		"结束后", "睡前", "睡觉前", "以后", "每天", "后天", "小时后", "分钟后", "周一", "周二", "周三", "周四",
		"周五", "周六", "周日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期天"}
	// zhClauses end a clause: a time or a negation beyond one is not the verb's.
	zhClauses = []string{"，", ",", "：", ":", "、", "；", " ", "\n"}
	// zhNumerals may stand before 点 in a clock time ("八点", "8点").
	zhNumerals = "0123456789一二三四五六七八九十两半"
)
