package discordtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Discord's attachment URLs are signed and expire after about a day: ex
// (expiry) and is (issue time), Unix seconds in hex, and hm, a signature
// over the path and both. The CDN answers an expired or badly signed URL
// 404 ("This content is no longer available."), and POST
// /attachments/refresh-urls signs the URLs of files that still exist
// afresh. The fake does the same; ExpireAttachmentURLs lets a test make
// every URL given so far expire at once, as a day would.

// defaultURLLifetime is how long a signed attachment URL serves.
const defaultURLLifetime = 24 * time.Hour

// signedURLLocked is the signed URL of the file at path, valid for the
// fake's URL lifetime from now. Callers hold s.mu.
func (s *state) signedURLLocked(path string) string {
	if s.urlKey == nil {
		s.urlKey = []byte(randomHex(32))
		s.urlValid = map[string]bool{}
	}
	life := s.urlLife
	if life == 0 {
		life = defaultURLLifetime
	}
	now := time.Now()
	ex, is := strconv.FormatInt(now.Add(life).Unix(), 16), strconv.FormatInt(now.Unix(), 16)
	mac := hmac.New(sha256.New, s.urlKey)
	mac.Write([]byte(path + "|" + ex + "|" + is + "|" + strconv.Itoa(len(s.urlValid))))
	hm := hex.EncodeToString(mac.Sum(nil))
	s.urlValid[hm] = true
	return s.srv.URL + (&url.URL{Path: path}).EscapedPath() + "?ex=" + ex + "&is=" + is + "&hm=" + hm + "&"
}

// validURLLocked reports whether q signs an attachment URL that still
// serves. Callers hold s.mu.
func (s *state) validURLLocked(q url.Values) bool {
	ex, err := strconv.ParseInt(q.Get("ex"), 16, 64)
	return err == nil && s.urlValid[q.Get("hm")] && time.Now().Unix() < ex
}

// ExpireAttachmentURLs makes every attachment URL given so far expire, as
// a day does on Discord: downloads of them get 404 until refreshed.
func (s *fileStore) ExpireAttachmentURLs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.urlValid)
}

// SetAttachmentURLLifetime sets how long the attachment URLs given from
// now on serve (default 24 h); a negative one gives URLs already expired.
func (s *fileStore) SetAttachmentURLLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urlLife = d
}

// refreshURLs is POST /attachments/refresh-urls: {"attachment_urls":
// [...]} (at most 50) to {"refreshed_urls": [{"original", "refreshed"}]},
// a fresh URL for each file the fake still has; others are left out.
func (s *fileStore) refreshURLs(w http.ResponseWriter, r *http.Request, _ string) {
	var in struct {
		URLs []string `json:"attachment_urls"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.URLs) == 0 || len(in.URLs) > 50 {
		writeError(w, http.StatusBadRequest, apiError{Code: 50035, Message: "Invalid Form Body"})
		return
	}
	type refreshed struct {
		Original  string `json:"original"`
		Refreshed string `json:"refreshed"`
	}
	out := []refreshed{}
	s.mu.Lock()
	for _, raw := range in.URLs {
		u, err := url.Parse(raw)
		if err != nil || !strings.HasPrefix(u.Path, "/attachments/") {
			continue
		}
		if _, ok := s.files[u.Path]; ok {
			out = append(out, refreshed{Original: raw, Refreshed: s.signedURLLocked(u.Path)})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"refreshed_urls": out})
}
