package slacktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// openDM opens the bot's DM with u and returns its channel id.
func openDM(t *testing.T, tb *testBundle, u slacktest.User) string {
	t.Helper()
	tb.srv.AddUser(u)
	ch, _, _, err := tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{u.ID}})
	require.NoError(t, err)
	return ch.ID
}

// uploadURL runs files.getUploadURLExternal and the upload POST for data.
func uploadURL(t *testing.T, tb *testBundle, name string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	u, err := tb.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(data)})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(u.UploadURL, tb.srv.URL()+"/upload/v1/"), u.UploadURL)
	require.NoError(t, tb.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: bytes.NewReader(data), Filename: name}))
	return u.FileID
}

func TestUploadFileV2SharesIntoTheDM(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dm := openDM(t, tb, tb.alice)

	f, err := tb.api.UploadFileContext(context.Background(), slack.UploadFileParameters{
		Reader: bytes.NewReader([]byte("%PDF-1.7 …")), FileSize: len("%PDF-1.7 …"), Filename: "report.pdf",
		Title: "Report", Channel: dm, InitialComment: "here it is &amp; *more*",
	})
	require.NoError(t, err)
	require.Equal(t, "Report", f.Title)

	ups := tb.srv.WaitUploads(t, dm, 1, wait)
	require.Len(t, ups, 1)
	require.Equal(t, "here it is &amp; *more*", ups[0].Comment)
	require.NotEmpty(t, ups[0].TS)
	require.Equal(t, []slacktest.UploadedFile{{ID: f.ID, Name: "report.pdf", Title: "Report", Data: []byte("%PDF-1.7 …"),
		MIMEType: "application/pdf"}}, ups[0].Files)
	require.Equal(t, 1, tb.srv.Calls(slacktest.FileUploads))
	require.Empty(t, tb.srv.Sent(dm), "an upload is not a chat.postMessage")
}

func TestCompleteUploadExternalSharesSeveralFilesAsOneMessage(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dm := openDM(t, tb, tb.alice)
	a := uploadURL(t, tb, "a.png", []byte("png"))
	b := uploadURL(t, tb, "b.ogg", []byte("ogg!"))

	res, err := tb.api.CompleteUploadExternalContext(context.Background(), slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: a, Title: "a.png"}, {ID: b}}, Channel: dm,
	})
	require.NoError(t, err)
	require.Equal(t, []slack.FileSummary{{ID: a, Title: "a.png"}, {ID: b}}, res.Files)

	ups := tb.srv.Uploads(dm)
	require.Len(t, ups, 1)
	require.Empty(t, ups[0].Comment)
	require.Len(t, ups[0].Files, 2)
	require.Equal(t, "png", string(ups[0].Files[0].Data))
	require.Equal(t, "ogg!", string(ups[0].Files[1].Data))
	require.Equal(t, "image/png", ups[0].Files[0].MIMEType, "Slack types a file by its name")
	require.Equal(t, "image", ups[0].Files[0].Shown())
	require.Equal(t, "audio/ogg", ups[0].Files[1].MIMEType)
	require.Equal(t, "audio", ups[0].Files[1].Shown(), "an Ogg file plays as audio: a bot sends no voice clips")

	// A completed file cannot be completed again.
	_, err = tb.api.CompleteUploadExternalContext(context.Background(), slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: a}}, Channel: dm,
	})
	require.EqualError(t, err, "file_not_found")
}

func TestUploadFlowErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dm := openDM(t, tb, tb.alice)
	ctx := context.Background()

	// slack-go checks filename and length itself; a bare call shows
	// Slack's own answer.
	require.Equal(t, "invalid_arguments", postForm(t, tb, "files.getUploadURLExternal", url.Values{"filename": {"x.txt"}}))
	require.Equal(t, "invalid_arguments", postForm(t, tb, "files.getUploadURLExternal", url.Values{"length": {"3"}}))
	require.Equal(t, "invalid_arguments", postForm(t, tb, "files.completeUploadExternal", url.Values{"files": {"[]"}}))
	require.Equal(t, "invalid_arguments", postForm(t, tb, "files.getUploadURLExternal",
		url.Values{"filename": {"x.png"}, "length": {"3"}, "alt_txt": {strings.Repeat("a", 1001)}}))
	require.Empty(t, postForm(t, tb, "files.getUploadURLExternal",
		url.Values{"filename": {"x.png"}, "length": {"3"}, "alt_txt": {strings.Repeat("a", 1000)}}))

	_, err := tb.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: "F0NOPE"}}, Channel: dm})
	require.EqualError(t, err, "file_not_found")

	// A file given an upload_url but never POSTed is not found either.
	u, err := tb.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "x.txt", FileSize: 3})
	require.NoError(t, err)
	_, err = tb.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.FileID}}, Channel: dm})
	require.EqualError(t, err, "file_not_found")

	// Bytes of another length than announced are refused.
	err = tb.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: strings.NewReader("four"), Filename: "x.txt"})
	var status slack.StatusCodeError
	require.ErrorAs(t, err, &status)
	require.Equal(t, http.StatusBadRequest, status.Code)

	id := uploadURL(t, tb, "y.txt", []byte("yes"))
	_, err = tb.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: id}}, Channel: "C0ELSEWHERE"})
	require.EqualError(t, err, "not_in_channel")
	require.Empty(t, tb.srv.Uploads(dm))
}

func TestUploadFlowRateLimitsAndFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dm := openDM(t, tb, tb.alice)
	ctx := context.Background()

	tb.srv.RateLimitNext("files.getUploadURLExternal", time.Second)
	_, err := tb.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "x.txt", FileSize: 3})
	var limited *slack.RateLimitedError
	require.ErrorAs(t, err, &limited)
	require.Equal(t, time.Second, limited.RetryAfter)

	u, err := tb.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "x.txt", FileSize: 3})
	require.NoError(t, err)
	tb.srv.RateLimitNext(slacktest.FileUploads, 2*time.Second)
	tb.srv.FailNextStatus(slacktest.FileUploads, http.StatusServiceUnavailable)
	up := func() error {
		return tb.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: strings.NewReader("abc"), Filename: "x.txt"})
	}
	require.ErrorAs(t, up(), &limited)
	require.Equal(t, 2*time.Second, limited.RetryAfter)
	var status slack.StatusCodeError
	require.ErrorAs(t, up(), &status)
	require.Equal(t, http.StatusServiceUnavailable, status.Code)
	require.NoError(t, up(), "the same upload_url takes the bytes after a failure")

	tb.srv.RateLimitNext("files.completeUploadExternal", time.Second)
	_, err = tb.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.FileID}}, Channel: dm})
	require.ErrorAs(t, err, &limited)
	_, err = tb.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.FileID}}, Channel: dm})
	require.NoError(t, err)
	require.Equal(t, "abc", string(tb.srv.WaitUploads(t, dm, 1, wait)[0].Files[0].Data))
	require.Equal(t, 3, tb.srv.Calls(slacktest.FileUploads))
	require.Equal(t, 3, tb.srv.RateLimited())
}

// postForm calls a Web API method with a bare form and returns Slack's
// error code ("" when ok).
func postForm(t *testing.T, tb *testBundle, method string, form url.Values) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, tb.srv.APIURL()+method, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tb.srv.BotToken())
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	res, err := hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	return body.Error
}

func TestUploadIntoADMIsEchoedAsTheBotsFileShare(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusOK))
	tb.srv.UseEventsAPI(rc.url)
	dm := openDM(t, tb, tb.alice)

	f, err := tb.api.UploadFileContext(context.Background(), slack.UploadFileParameters{
		Content: "hello", FileSize: 5, Filename: "hi.txt", Channel: dm, InitialComment: "a note",
	})
	require.NoError(t, err)

	msg, _ := messageOf(t, receive(t, rc.hits).event)
	require.Equal(t, "file_share", msg.SubType)
	require.Equal(t, tb.srv.BotID(), msg.BotID)
	require.Equal(t, tb.srv.BotUserID(), msg.User)
	require.Equal(t, "a note", msg.Text)
	require.Equal(t, dm, msg.Channel)
	require.Equal(t, tb.srv.Uploads(dm)[0].TS, msg.TimeStamp)
	require.Len(t, msg.Message.Files, 1)
	require.Equal(t, f.ID, msg.Message.Files[0].ID)
	require.Equal(t, 5, msg.Message.Files[0].Size)
	require.Equal(t, "text/plain", msg.Message.Files[0].Mimetype)
}

func TestUploadWithoutAKnownExtensionIsTypedByItsBytes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dm := openDM(t, tb, tb.alice)
	png := []byte("\x89PNG\r\n\x1a\n rest of a picture")
	ids := []string{uploadURL(t, tb, "picture", png), uploadURL(t, tb, "blob.xyz", []byte{0, 1, 2, 3})}
	_, err := tb.api.CompleteUploadExternalContext(context.Background(), slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: ids[0]}, {ID: ids[1]}}, Channel: dm,
	})
	require.NoError(t, err)
	files := tb.srv.Uploads(dm)[0].Files
	require.Equal(t, "image/png", files[0].MIMEType)
	require.Equal(t, "image", files[0].Shown())
	require.Equal(t, "application/octet-stream", files[1].MIMEType)
	require.Equal(t, "file", files[1].Shown())
}
