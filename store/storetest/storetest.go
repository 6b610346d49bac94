// Package storetest is the conformance suite of store: one set of cases
// that every database the store supports must pass, in the manner of river's
// riverdrivertest. store runs it against SQLite always and against
// PostgreSQL when one is configured.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// Opener returns a store on a fresh, empty, unmigrated database of its own,
// closed (and the database dropped) by t.Cleanup.
type Opener func(t *testing.T) *store.Store

// Exercise runs every case as a parallel subtest of t, each on a database
// open gives it.
func Exercise(t *testing.T, open func(t *testing.T) *store.Store) {
	t.Helper()
	for _, c := range slices.Concat(messageCases(), runCases(), jobCases(), memoryCases(), consoleCases(), botCases(), erasureCases()) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// storeCase is one case of the suite, named as its subtest.
type storeCase struct {
	name string
	run  func(t *testing.T, open Opener)
}

// messageCases are the cases of the schema, conversations, their
// messages and their deletion.
func messageCases() []storeCase {
	return []storeCase{
		{"MigrateTwiceIsNoop", testMigrateTwice},
		{"MigrateConcurrently", testMigrateConcurrently},
		{"PendingMigrations", testPendingMigrations},
		{"PluginMigrations", testPluginMigrations},
		{"PluginMigrationsConcurrently", testPluginMigrationsConcurrently},
		{"PluginDatabase", testPluginDatabase},
		{"OverviewMigration", testOverviewMigration},
		{"RecordInboundCreatesConversationOnce", testRecordInboundCreatesOnce},
		{"SetMessageText", testSetMessageText},
		{"RecordInboundUpdatesNamesKeepsTimeZone", testRecordInboundUpdatesNames},
		{"SeqGapFreeUnderConcurrentWriters", testSeqConcurrentWriters},
		{"PlanningReusesQueuedRun", testPlanningReusesQueuedRun},
		{"RecordInboundWithoutPlan", testRecordInboundWithoutPlan},
		{"RoutedMessageIdempotencyAndFirstRecord", testRoutedMessageIdempotencyAndFirstRecord},
		{"RedeliveryStoredOnce", testRedeliveryStoredOnce},
		{"RepliesWithNULAreKept", testRepliesWithNULAreKept},
		{"RecentMessagesOrderAndLimit", testRecentMessages},
		{"AppendMessage", testAppendMessage},
		{"NotFound", testNotFound},
		{"TimesUTCMicrosecond", testTimesUTC},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"DeliveryStates", testDeliveryStates},
		{"DeleteConversationCascades", testDeleteCascades},
		{"DeleteBlockedByAutomations", testDeleteBlockedByAutomations},
		{"DeleteDisabledAutomationsDoNotBlock", testDeleteDisabledAutomationsDoNotBlock},
		{"DeleteConfirmedTakesEverything", testDeleteConfirmedTakesEverything},
		{"DeleteUnknownConversation", testDeleteUnknownConversation},
		{"DeleteRacesAJobInsert", testDeleteRacesAJobInsert},
	}
}

// runCases are the cases of runs: claiming, the busy policies,
// heartbeats, completion and reaping.
func runCases() []storeCase {
	return []storeCase{
		{"ClaimRunNothingDue", testClaimNothingDue},
		{"ClaimRunFutureRunAfter", testClaimFuture},
		{"ClaimRunConversationBusy", testClaimConversationBusy},
		{"ClaimRunOldestFirst", testClaimOldestFirst},
		{"ClaimRunScopedToPlatforms", testClaimScoped},
		{"RecordInboundClaimsADueTurn", testRecordInboundClaims},
		{"CompleteRunAndClaim", testCompleteAndClaim},
		{"HasPendingRuns", testHasPendingRuns},
		{"DebounceRunAfter", testDebounceRunAfter},
		{"BusyPolicies", testBusyPolicies},
		{"HeartbeatRunsReportsStops", testHeartbeatRunsReportsStops},
		{"StaleProactiveSkipped", testStaleProactiveSkipped},
		{"CronTurnDeferredNotSkipped", testCronTurnDeferredNotSkipped},
		{"DatabaseRefusesSecondRunning", testDatabaseRefusesSecondRunning},
		{"ConcurrentClaimers", testConcurrentClaimers},
		{"NextRunAfter", testNextRunAfter},
		{"ClaimRunsTakesManyAtOnce", testClaimRunsTakesManyAtOnce},
		{"HeartbeatRun", testHeartbeat},
		{"CompleteRunByNonOwner", testCompleteNonOwner},
		{"CompleteRunAppendsReply", testCompleteAppendsReply},
		{"CompleteRunRejectsNonFinalStatus", testCompleteNonFinal},
		{"ReapStaleRuns", testReapStale},
		{"ReapStaleQueuesALoneTurnOnce", testReapStaleQueuesALoneTurnOnce},
		{"ReapStaleReadsAnsweredSeq", testReapStaleReadsAnsweredSeq},
		{"CommandsAreNotUserTurns", testCommandsAreNotUserTurns},
		{"ReapStaleIgnoresCommandAnswers", testReapStaleIgnoresCommandAnswers},
		{"ReapHandsOnGrownMessages", testReapHandsOnGrownMessages},
		{"TapAnswersAQuestionOnce", testTapAnswersAQuestionOnce},
		{"TapAnswersACommandsQuestionOnce", testTapAnswersACommandsQuestionOnce},
		{"MessageFilesKeptUntilSent", testMessageFilesKeptUntilSent},
		{"RunModelStored", testRunModelStored},
	}
}

// jobCases are the cases of jobs: scheduled messages, recurring turns
// and proactive messages.
func jobCases() []storeCase {
	return []storeCase{
		{"JobRoundTrip", testJobRoundTrip},
		{"ProactiveJobLifecycle", testProactiveJobLifecycle},
		{"ProactiveJobDroppedWhenTheUserWrote", testProactiveJobDroppedWhenTheUserWrote},
		{"ProactiveJobDroppedForANewerRecord", testProactiveJobDroppedForANewerRecord},
		{"ProactiveJobReleasedAndLeaseExpiry", testProactiveJobReleasedAndLeaseExpiry},
		{"ProactiveRunSkippedSettlesItsJob", testProactiveRunSkippedSettlesItsJob},
		{"ProactiveJobWaitsForAQueuedTurn", testProactiveJobWaitsForAQueuedTurn},
		{"TwoSchedulersSendEachJobOnce", testTwoSchedulersSendEachJobOnce},
		{"ScheduledMessageKeepsItsFormat", testScheduledMessageKeepsItsFormat},
		{"ClaimDueJobsScopedToPlatforms", testClaimDueJobsScopedToPlatforms},
		{"RecurringJobLifecycle", testRecurringJobLifecycle},
		{"CronOccurrenceRunsOnce", testCronOccurrenceRunsOnce},
		{"CronTurnWaitsForAQueuedRun", testCronTurnWaitsForAQueuedRun},
		{"CancelRecurringWhileClaimed", testCancelRecurringWhileClaimed},
		{"RetryJob", testRetryJob},
	}
}

// memoryCases are the cases of what the bot remembers: session records
// and search (the plugins' facts and mood are the plugins' tests).
func memoryCases() []storeCase {
	return []storeCase{
		{"SessionRecordRoundTrip", testSessionRecordRoundTrip},
		{"SessionRecordsSplitAtTheGap", testSessionRecordsSplitAtTheGap},
		{"FreezePromptKeepsTheFirst", testFreezePromptKeepsTheFirst},
		{"SummarizedRecords", testSummarizedRecords},
		{"FinalMood", testFinalMood},
		{"AppendTriggerJoinsOrStartsARecord", testAppendTriggerJoinsOrStartsARecord},
		{"EndSessionRecord", testEndSessionRecord},
		{"ClaimEndedRecords", testClaimEndedRecords},
		{"SearchMessages", testSearchMessages},
		{"SearchManyMessages", testSearchManyMessages},
		{"SearchBackfill", testSearchBackfill},
		{"SearchAfterTheNewestAreDeleted", testSearchAfterTheNewestAreDeleted},
	}
}

// consoleCases are the cases of what the console reads, and the users'
// limits.
func consoleCases() []storeCase {
	return []storeCase{
		{"ConversationsList", testConversationsList},
		{"ConversationsByActivity", testConversationsByActivity},
		{"ConsoleSessionsRevoked", testConsoleSessionsRevoked},
		{"Activity", testActivity},
		{"RecentFailures", testRecentFailures},
		{"TokensByDay", testTokensByDay},
		{"JobsAcross", testJobsAcross},
		{"SearchConversations", testSearchConversations},
		{"ConversationTokens", testConversationTokens},
		{"SeedLarge", testSeedLarge},
		{"LimitMessages", testLimitMessages},
		{"LimitTurnsAndTokens", testLimitTurnsAndTokens},
		{"LimitedMessages", testLimitedMessages},
	}
}

// testBundle is what a case works with.
type testBundle struct {
	ctx context.Context
	st  *store.Store
	// t0 is the base time of the case; nothing reads the wall clock.
	t0 time.Time
}

// setup opens and migrates a fresh store.
func setup(t *testing.T, open Opener) *testBundle {
	t.Helper()
	st := open(t)
	require.NoError(t, st.Migrate(t.Context()))
	return &testBundle{
		ctx: t.Context(),
		st:  st,
		t0:  time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC),
	}
}

// at is t0 plus d.
func (b *testBundle) at(d time.Duration) time.Time { return b.t0.Add(d) }

// inbound records a user message on thread of the telegram platform.
func (b *testBundle) inbound(t *testing.T, thread, text string, now time.Time, plan bool) core.InboundResult {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform:        telegram,
		ChannelThreadID: thread,
		ChannelUserID:   "user-" + thread,
		DisplayName:     "Ann",
		TimeZone:        "Europe/Berlin",
		Text:            text,
		Now:             now,
		PlanRun:         plan,
	})
	require.NoError(t, err)
	return res
}

// claimed plans a run on a new thread and claims it for owner.
func (b *testBundle) claimed(t *testing.T, thread, owner string, now time.Time) *core.Run {
	t.Helper()
	b.inbound(t, thread, "hi", now, true)
	run, err := b.st.ClaimRun(b.ctx, owner, now)
	require.NoError(t, err)
	require.NotNil(t, run)
	return run
}

// count returns the number of rows of table matching where.
func (b *testBundle) count(t *testing.T, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", table, where)
	require.NoError(t, b.st.DB().WithContext(b.ctx).Raw(q, args...).Row().Scan(&n))
	return n
}

func ptr[T any](v T) *T { return &v }
