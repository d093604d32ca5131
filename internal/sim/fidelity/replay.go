package fidelity

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/sim/catalog"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// Options shape a replay.
type Options struct {
	// TimeFactor is the recorded world's latency scale (world.Options.TimeFactor); zero is 1, a
	// real account's.
	TimeFactor float64
	// Dir holds the Object Storage stand-in's buckets (default: a temporary directory).
	Dir string
}

// Result is one exchange replayed: the stand-in's answer and the verdict, or why it was not
// replayed (Skipped).
type Result struct {
	Exchange
	Route   string
	Got     Answer
	Verdict Verdict
	Skipped string
	// Waited is how far the stand-in's clock was moved on for its answer to reach the recorded
	// state (behind).
	Waited time.Duration
}

// Why exchanges are not replayed.
const (
	skipNoAnswer  = "no answer was recorded (the request failed on the wire)"
	skipBefore    = "it acts on a resource made before the recording began"
	skipNoGitHub  = "GitHub exchanges are recorded, not replayed: the GitHub stand-in needs the recording's repository, App and users made first"
	skipNoService = "the service of the exchange is not known"
	skipRedacted  = "its path names a value the recorder redacted (an access key): the stand-in cannot be asked for it"
	skipDenied    = "the recorded key was refused a permission (permissions_denied): the replay acts as the organization's owner, and keys' policies are not replayed"
)

// ReplayDir replays the recording in dir (Load) against fresh stand-ins.
func ReplayDir(ctx context.Context, dir string, o Options) (*Report, error) {
	ex, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return Replay(ctx, ex, o)
}

// Replay sends each exchange, in order, to a fresh stand-in of its service (the Scaleway
// emulator, versitygw behind the Scaleway dialect) and compares the answers (Compare). The
// stand-ins' ids, ETags, upload ids and version ids are substituted for the recorded ones as they
// are learned, and the emulator's clock follows the recorded answers' Date headers (scaled by
// the recorded world's TimeFactor), so its resources move through their states as the recorded
// ones did.
func Replay(ctx context.Context, ex []Exchange, o Options) (*Report, error) {
	r := &replayer{scw: newScwReplay(o.TimeFactor)}
	defer r.close()
	rep := &Report{}
	for _, x := range ex {
		res := Result{Exchange: x}
		switch {
		case x.Response.Code == 0:
			res.Skipped = skipNoAnswer
		case x.Service == record.Scaleway:
			r.scw.replay(&res)
		case x.Service == record.ObjectStorage:
			if r.s3 == nil {
				s, err := newS3Replay(ctx, o.Dir, ex)
				if err != nil {
					return nil, err
				}
				r.s3 = s
			}
			r.s3.replay(ctx, &res)
		case x.Service == record.GitHub:
			res.Skipped = skipNoGitHub
		default:
			res.Skipped = skipNoService
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

type replayer struct {
	scw *scwReplay
	s3  *s3Replay
}

func (r *replayer) close() {
	if r.s3 != nil {
		r.s3.close()
	}
}

// subst maps what the recording named to what the stand-in named (ids, ETags, upload ids).
type subst map[string]string

func (s subst) apply(v string) string {
	// In one pass, longest first: the emulator draws its ids from a fixed seed, so a recorded id
	// is often the stand-in's id of another resource, and a second pass would swap them back.
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return len(keys[i]) > len(keys[j]) || len(keys[i]) == len(keys[j]) && keys[i] < keys[j]
	})
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, s[k])
	}
	return strings.NewReplacer(pairs...).Replace(v)
}

func (s subst) learn(recorded, got string) {
	if recorded != "" && got != "" && recorded != got {
		if _, ok := s[recorded]; !ok {
			s[recorded] = got
		}
	}
	// An ETag is quoted in a header and escaped in a document: its bare value too.
	if r, g := strings.Trim(recorded, `"`), strings.Trim(got, `"`); r != recorded && r != "" && g != "" && r != g {
		if _, ok := s[r]; !ok {
			s[r] = g
		}
	}
}

// scwReplay is the Scaleway emulator of a replay, served in-process.
type scwReplay struct {
	emu    *scwsim.Emulator
	clock  *clock
	ids    subst
	secret string
	factor float64
}

const replaySecret = "00000000-0000-4000-8000-000000000000"

func newScwReplay(factor float64) *scwReplay {
	c := &clock{}
	return &scwReplay{clock: c, ids: subst{}, secret: replaySecret, factor: factor,
		emu: scwsim.New(scwsim.Options{SecretKey: replaySecret, TimeFactor: factor, Clock: c.Now,
			OrgQuotas: scwsim.DocumentedQuotas(), Objects: anyImage{},
			Extra: map[string]http.Handler{"/product-catalog/": catalog.Handler()}})}
}

var uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (s *scwReplay) replay(res *Result) {
	x := res.Exchange
	u, err := url.Parse(x.Request.URL)
	if err != nil {
		res.Skipped = skipNoService
		return
	}
	res.Route = scwsim.EndpointKey(x.Request.Method, u.Path)
	if strings.Contains(u.Path, record.Redacted) {
		res.Skipped = skipRedacted
		return
	}
	if d, err := http.ParseTime(x.Response.Headers.Get("Date")); err == nil {
		// The end of the recorded second: the stand-in is never behind what the recording saw.
		s.clock.atLeast(d.Add(time.Second - time.Nanosecond))
	}
	unknown := false
	for _, id := range uuidRe.FindAllString(u.Path, -1) {
		if _, ok := s.ids[id]; !ok {
			unknown = true
		}
	}
	target := s.ids.apply(u.Path)
	if u.RawQuery != "" {
		target += "?" + s.ids.apply(u.RawQuery)
	}
	body := s.ids.apply(x.Request.Body)
	send := func() Answer {
		req := httptest.NewRequest(x.Request.Method, target, strings.NewReader(body))
		if ct := x.Request.Headers.Get("Content-Type"); ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("X-Auth-Token", s.secret)
		w := httptest.NewRecorder()
		s.emu.ServeHTTP(w, req)
		return Answer{Code: w.Code, Body: w.Body.String()}
	}
	res.Got = send()
	// A Date header times an answer to the second: the stand-in may be a transition behind the
	// recording. A refusal for a state (the recording's call went through) or a resource still
	// going away (the recording's was gone) is asked again as the stand-in's clock moves on, by
	// doubling steps up to half an hour of the recorded world's time; every such wait is counted.
	for step := s.scaled(time.Second); behind(x.Response.Code, res.Got) && res.Waited < s.scaled(30*time.Minute); step *= 2 {
		s.clock.atLeast(s.clock.Now().Add(step))
		res.Got, res.Waited = send(), res.Waited+step
	}
	if unknown && x.Response.Code/100 == 2 && res.Got.Code == http.StatusNotFound {
		res.Skipped = skipBefore
		return
	}
	if x.Response.Code == http.StatusForbidden && res.Got.Code/100 == 2 && strings.Contains(x.Response.Body, `"permissions_denied"`) {
		res.Skipped = skipDenied
		return
	}
	learnIDs(x.Response.Body, res.Got.Body, s.ids)
	res.Verdict = Compare(Answer{Code: x.Response.Code, Body: x.Response.Body}, res.Got, scalewayType(res.Route, x.Response.Code))
	if !res.Verdict.Match() && transition(x.Request.Method, x.Response.Code, x.Response.Body, res.Got) {
		res.Verdict = Verdict{} // a transition the stand-in finished first (the clock is ahead)
	}
}

// behind tells an answer of the stand-in that its clock has not reached the recorded one's state:
// a call the recording saw go through refused for a state (409, or 400: Elastic Metal's "not
// delivered"), or a resource the recording saw gone still there, in a transient state.
func behind(recorded int, got Answer) bool {
	switch {
	case recorded/100 == 2:
		return got.Code == http.StatusConflict || got.Code == http.StatusBadRequest
	case recorded == http.StatusNotFound && got.Code/100 == 2:
		return transient(got.Body)
	}
	return false
}

func transient(body string) bool {
	for _, s := range []string{`"deleting"`, `"stopping"`, `"terminating"`} {
		if strings.Contains(body, s) {
			return true
		}
	}
	return false
}

// scaled is d of the latency profile on the stand-in's clock (the recorded world's scale).
func (s *scwReplay) scaled(d time.Duration) time.Duration {
	if s.factor <= 0 {
		return d
	}
	return time.Duration(float64(d) * s.factor)
}

// transition tells a GET that differs only by how far a deletion went: recorded in a transient
// state, gone from the stand-in (whose clock runs up to a second ahead of the recording).
func transition(method string, code int, body string, got Answer) bool {
	return method == http.MethodGet && code/100 == 2 && got.Code == http.StatusNotFound && transient(body)
}

// learnIDs maps the recorded ids to the stand-in's by walking both answers in parallel ("id"
// keys at the same place). A list's elements are paired by what the bot named them (name, else
// tags), never by position: two runs list resources in different orders and numbers.
func learnIDs(recorded, got string, ids subst) {
	var a, b any
	if json.Unmarshal([]byte(recorded), &a) != nil || json.Unmarshal([]byte(got), &b) != nil {
		return
	}
	var walk func(x, y any)
	walk = func(x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok {
				return
			}
			for k, v := range xv {
				if k == "id" {
					s, _ := v.(string)
					g, _ := yv[k].(string)
					ids.learn(s, g)
					continue
				}
				walk(v, yv[k])
			}
		case []any:
			yv, ok := y.([]any)
			if !ok {
				return
			}
			theirs := map[string][]any{}
			for _, e := range yv {
				if k := elementKey(e); k != "" {
					theirs[k] = append(theirs[k], e)
				}
			}
			mine := map[string]int{}
			for _, e := range xv {
				mine[elementKey(e)]++
			}
			for _, e := range xv {
				if k := elementKey(e); k != "" && mine[k] == 1 && len(theirs[k]) == 1 {
					walk(e, theirs[k][0])
				}
			}
		}
	}
	walk(a, b)
}

// elementKey is what identifies a listed resource across two runs: its name, else its tags.
func elementKey(e any) string {
	m, ok := e.(map[string]any)
	if !ok {
		return ""
	}
	if n, ok := m["name"].(string); ok && n != "" {
		return "name:" + n
	}
	if t, ok := m["tags"].([]any); ok && len(t) > 0 {
		b, _ := json.Marshal(t)
		return "tags:" + string(b)
	}
	return ""
}

// clock is the emulator's clock in a replay: it only moves forward.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		return time.Now()
	}
	return c.t
}

func (c *clock) atLeast(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

// anyImage serves a QCOW2 header for every object a snapshot import reads: the recording keeps
// no object's bytes, only that the bot imported one.
type anyImage struct{}

func (anyImage) Open(context.Context, string, string, string) (io.ReadCloser, int64, error) {
	h := make([]byte, 64)
	copy(h, "QFI\xfb")
	binary.BigEndian.PutUint32(h[4:], 3)
	binary.BigEndian.PutUint64(h[24:], 1<<30) // virtual size: 1 GiB
	return io.NopCloser(strings.NewReader(string(h))), int64(len(h)), nil
}

// s3Replay is the Object Storage stand-in of a replay: versitygw behind the Scaleway dialect.
type s3Replay struct {
	srv       *objstore.Server
	dir       string
	ownDir    bool
	buckets   map[string]bool
	versioned map[string]bool
	tokens    subst
	hc        *http.Client
}

func newS3Replay(ctx context.Context, dir string, ex []Exchange) (*s3Replay, error) {
	r := &s3Replay{dir: dir, buckets: map[string]bool{}, versioned: map[string]bool{}, tokens: subst{},
		hc: &http.Client{Timeout: time.Minute}}
	if dir == "" {
		d, err := os.MkdirTemp("", "pocbot-fidelity-")
		if err != nil {
			return nil, err
		}
		r.dir, r.ownDir = d, true
	}
	srv, err := objstore.StartVersity(ctx, r.dir+"/s3")
	if err != nil {
		r.close()
		return nil, fmt.Errorf("fidelity: the Object Storage stand-in: %w", err)
	}
	r.srv = srv
	// A bucket whose recorded answers carry version ids was versioned (bot init makes the state
	// bucket so); the stand-in's is made alike.
	for _, x := range ex {
		if x.Service == record.ObjectStorage && x.Response.Headers.Get("X-Amz-Version-Id") != "" {
			if b, _, ok := bucketKey(x.Request.URL, x.Request.Host); ok {
				r.versioned[b] = true
			}
		}
	}
	return r, nil
}

func (r *s3Replay) close() {
	if r.srv != nil {
		_ = r.srv.Close()
	}
	if r.ownDir {
		_ = os.RemoveAll(r.dir)
	}
}

// bucketKey reads the bucket and the key of an Object Storage URL, path-style
// (https://s3.fr-par.scw.cloud/BUCKET/KEY, a loopback stand-in) or virtual-hosted
// (https://BUCKET.s3.fr-par.scw.cloud/KEY).
func bucketKey(raw, host string) (bucket, key string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false
	}
	h := u.Hostname()
	if b, rest, found := strings.Cut(h, ".s3."); found && rest != "" && !strings.HasPrefix(h, "s3.") {
		return b, strings.TrimPrefix(u.Path, "/"), b != ""
	}
	p := strings.TrimPrefix(u.Path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key, bucket != ""
}

// s3Route names an Object Storage operation: method, whether it is on a key, and the
// sub-resources of its query (list-type, uploads, uploadId, partNumber, versioning, …).
func s3Route(method, key string, q url.Values) string {
	var sub []string
	for k := range q {
		if !strings.HasPrefix(strings.ToLower(k), "x-amz-") && k != "prefix" && k != "delimiter" && k != "max-keys" &&
			k != "continuation-token" && k != "start-after" && k != "encoding-type" && k != "key-marker" && k != "version-id-marker" {
			sub = append(sub, k)
		}
	}
	sort.Strings(sub)
	route := method + " /{bucket}"
	if key != "" {
		route += "/{key}"
	}
	if len(sub) > 0 {
		route += "?" + strings.Join(sub, "&")
	}
	return route
}

// dropped are the request headers a replay does not send as recorded: the signature (the
// stand-in's keys sign again), and the checksums of bytes the recording did not keep.
var dropped = []string{"Authorization", "X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Security-Token", "Content-Length",
	"Content-Md5", "X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Trailer", "X-Amz-Decoded-Content-Length", "Amz-Sdk-Invocation-Id",
	"Amz-Sdk-Request", "User-Agent", "Accept-Encoding", "Content-Encoding"}

var elidedSize = regexp.MustCompile(`^` + regexp.QuoteMeta(record.ElidedPrefix) + `(\d+) bytes`)

func (r *s3Replay) replay(ctx context.Context, res *Result) {
	x := res.Exchange
	bucket, key, ok := bucketKey(x.Request.URL, x.Request.Host)
	u, err := url.Parse(x.Request.URL)
	if !ok || err != nil {
		res.Skipped = skipNoService
		return
	}
	res.Route = s3Route(x.Request.Method, key, u.Query())
	if err := r.ensureBucket(ctx, bucket); err != nil {
		res.Got, res.Verdict = Answer{}, Verdict{Why: err.Error()}
		return
	}
	target := r.srv.Endpoint + "/" + bucket
	if key != "" {
		target += "/" + (&url.URL{Path: key}).EscapedPath()
	}
	if u.RawQuery != "" {
		target += "?" + r.tokens.apply(u.RawQuery)
	}
	var body io.Reader = strings.NewReader(r.tokens.apply(x.Request.Body))
	size := int64(len(x.Request.Body))
	if m := elidedSize.FindStringSubmatch(x.Request.Body); m != nil {
		size, _ = strconv.ParseInt(m[1], 10, 64)
		body = io.LimitReader(zeros{}, size) // an object's bytes: the recording kept their size
	}
	req, err := http.NewRequestWithContext(ctx, x.Request.Method, target, body)
	if err != nil {
		res.Verdict = Verdict{Why: err.Error()}
		return
	}
	req.ContentLength = size
	for k, vs := range x.Request.Headers {
		ck := http.CanonicalHeaderKey(k)
		if strings.HasPrefix(ck, "X-Amz-Checksum-") || contains(dropped, ck) {
			continue
		}
		for _, v := range vs {
			req.Header.Add(ck, r.tokens.apply(v))
		}
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: r.srv.AccessKey, SecretAccessKey: r.srv.SecretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", objstore.Region, time.Now()); err != nil {
		res.Verdict = Verdict{Why: err.Error()}
		return
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		res.Verdict = Verdict{Why: "the stand-in did not answer: " + err.Error()}
		return
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	res.Got = Answer{Code: resp.StatusCode, Body: string(b)}
	if strings.HasPrefix(x.Response.Body, record.ElidedPrefix) {
		res.Got.Body = record.ElidedPrefix + "the stand-in's bytes>"
	}
	for _, h := range []string{"ETag", "X-Amz-Version-Id"} {
		r.tokens.learn(x.Response.Headers.Get(h), resp.Header.Get(h))
	}
	for _, el := range []string{"UploadId", "ETag", "VersionId"} {
		learnElements(el, x.Response.Body, res.Got.Body, r.tokens)
	}
	res.Verdict = Compare(Answer{Code: x.Response.Code, Body: x.Response.Body}, res.Got, nil)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// learnElements pairs the values of element el in the recorded and the stand-in's documents, in
// their order.
func learnElements(el, recorded, got string, s subst) {
	re := regexp.MustCompile(`<` + el + `>([^<]*)</` + el + `>`)
	a, b := re.FindAllStringSubmatch(recorded, -1), re.FindAllStringSubmatch(got, -1)
	for i := range min(len(a), len(b)) {
		s.learn(a[i][1], b[i][1])
		// The same value quoted (an ETag in a header) or escaped in XML.
		for _, q := range []string{"&#34;", "&quot;"} {
			s.learn(strings.ReplaceAll(a[i][1], q, `"`), strings.ReplaceAll(b[i][1], q, `"`))
		}
	}
}

func (r *s3Replay) ensureBucket(ctx context.Context, name string) error {
	if r.buckets[name] {
		return nil
	}
	if err := r.srv.CreateBucket(ctx, name); err != nil {
		return err
	}
	if r.versioned[name] {
		if _, err := r.srv.Client().PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			return fmt.Errorf("fidelity: version the bucket %s: %w", name, err)
		}
	}
	r.buckets[name] = true
	return nil
}
