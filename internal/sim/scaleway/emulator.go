package scaleway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/sim/loopback"
)

// Objects gives the emulator read access to Object Storage, for Block
// snapshot imports. Open must fail when the bucket or key does not exist or
// when the bucket is not in region; the emulator then answers the import with
// the API's invalid-argument error.
type Objects interface {
	Open(ctx context.Context, region, bucket, key string) (io.ReadCloser, int64, error)
}

// Faults configures seeded fault injection.
type Faults struct {
	// Seed makes the fault sequence reproducible for a given request sequence.
	Seed int64
	// Rate5xx and Rate429 are probabilities per request (0..1), decided before
	// the request takes effect: retrying a faulted request is always safe.
	Rate5xx, Rate429 float64
	// RetryAfter is sent in the Retry-After header of 429 answers (default 1s,
	// rounded up to whole seconds as HTTP requires).
	RetryAfter time.Duration
	// PerEndpoint overrides the total fault probability for one endpoint,
	// keyed by EndpointKey (e.g. "POST /instance/v1/zones/{zone}/servers").
	// The override is split between 429 and 5xx in the Rate429:Rate5xx ratio
	// (all 5xx when both are zero).
	PerEndpoint map[string]float64
	// AfterEffectRate is the probability that a mutating request (POST, PUT,
	// PATCH, DELETE) takes effect and is then answered 500 anyway. A client
	// that retries a create blindly on such an answer makes a duplicate; one
	// that looks its resource up by tag first does not.
	AfterEffectRate float64
}

// Hooks let the emulated world react to the emulator. They are called outside
// the emulator's lock, before the answer to the request that observed the
// transition is written (or from the ticker started by Start).
type Hooks struct {
	InstanceRunning func(InstanceEvent)
	InstanceStopped func(id string)
	BaremetalBooted func(BaremetalEvent)
	// Deleted reports a resource that disappeared; kind is a Resource.Kind.
	Deleted func(kind, id string)
}

// InstanceEvent describes an Instance server that just reached "running".
type InstanceEvent struct {
	Zone, ID, Name string
	Tags           []string
	// PublicIPs are the 127.x.y.z addresses of the reserved IPs attached.
	PublicIPs []string
	// UserData is a copy of the server's user data (key -> content).
	UserData map[string][]byte
	// VolumeIDs are the Block volumes attached, boot volume first.
	VolumeIDs []string
}

// BaremetalEvent describes an Elastic Metal server that finished booting.
type BaremetalEvent struct {
	Zone, ID, Name string
	Tags           []string
	// BootType is "normal" or "rescue".
	BootType string
	// IP is the server's 127.x.y.z IPv4 address.
	IP string
	// RescueUser and RescuePassword are set in rescue mode.
	RescueUser, RescuePassword string
	// SSHKeyIDs are the IAM keys given to the rescue reboot in ssh_key_ids,
	// the only keys the rescue image installs; SSHPublicKeys are their public
	// halves.
	SSHKeyIDs     []string
	SSHPublicKeys []string
}

// Options configures an Emulator. The zero value works: real-time latencies,
// no faults, no quotas, secret key "secret".
type Options struct {
	// SecretKey is the value required in X-Auth-Token.
	SecretKey string
	// TimeFactor scales every latency (0.005 makes a 212 s import ~1 s).
	// Zero means 1 (real time).
	TimeFactor float64
	// Latency overrides the default profile (DefaultLatency) field by field:
	// zero fields keep the default.
	Latency Latency
	// Clock returns the current time; defaults to time.Now.
	Clock func() time.Time
	// Quotas limits live resources per type: "instances", "ips",
	// "security_groups", "volumes", "snapshots", "baremetal_servers",
	// "ssh_keys". Absent means unlimited.
	Quotas map[string]int
	// OrgQuotas are the organization's quotas by quota name (orgquota.go): what
	// GET /iam/v1alpha1/quota lists, and what every create of those products is held to.
	// DocumentedQuotas are Scaleway's defaults; nil sets none (unlimited), as Quotas.
	OrgQuotas map[string]int
	// Stock is the number of Elastic Metal servers available per offer name
	// (e.g. "EM-A116X-SSD"); absent offers default to 10. Zero means out of
	// stock.
	Stock map[string]int
	// Objects resolves the objects of snapshot imports; nil makes every
	// import fail as "object not found".
	Objects Objects
	// Faults configures fault injection.
	Faults Faults
	// Hooks are called on state transitions.
	Hooks Hooks
	// Extra mounts other handlers by path prefix (e.g. the product catalog
	// "/product-catalog/"). They see faults but do their own authentication.
	Extra map[string]http.Handler
	// DNSZones, when set, limits the DNS zones that exist in the project; empty accepts any.
	DNSZones []string
	// ForeignDNSZones exist, but in another project: every call on them is refused (403).
	ForeignDNSZones []string
	// Logger receives one debug line per request; defaults to slog.Default().
	Logger *slog.Logger
	// RescueServerDelay shows an Elastic Metal server's rescue_server that long
	// after its rescue boot is ready; HideRescueServer never shows it. No
	// recording shows what rescue_server holds or when (issue 10), so tests
	// try the bot against both.
	RescueServerDelay time.Duration
	HideRescueServer  bool
	// Readings choose, row by row of the assumptions register (internal/assume), how the
	// emulator answers where no source settles it (quota-names, dns-comment, em-delivery,
	// em-patch-delivering, tag-length); a row not named plays its default.
	Readings assume.Readings
	// IPBase is the 127.x.y.z address after which addresses are handed out
	// (default 127.10.0.0). Two emulators on one machine (parallel test
	// packages) need different bases: their stand-in hosts listen on the
	// addresses handed out.
	IPBase string
}

// Resource is one live resource, as listed by Inventory.
type Resource struct {
	Kind, ID, Name, Zone string
	Tags                 []string
}

// Call is one request the emulator answered.
type Call struct {
	Method, Path, Query string
	Status              int
}

// Emulator is the Scaleway API emulator. Create it with New.
type Emulator struct {
	inflight atomic.Int64 // requests being served (Quiesce)
	opts     Options
	lat      Latency
	clock    func() time.Time
	log      *slog.Logger
	extraPx  []string
	mux      *http.ServeMux

	mu       sync.Mutex
	hookMu   sync.Mutex // held while hooks are taken and run: one runner at a time, in order
	faultRnd *rand.Rand
	idRnd    *rand.Rand
	nextIP   uint32
	seq      uint64
	queue    []*event
	pending  []func() // hooks collected under the lock, run after it (runHooks)
	calls    []Call
	srv      table[*server]
	ips      table[*flexIP]
	sgs      table[*secGroup]
	vols     table[*volume]
	snaps    table[*snapshot]
	bms      table[*bmServer]
	keys     map[string]*sshKey
	iamApps  *iamState            // applications, policies, API keys (iam_apps.go)
	records  map[string][]*record // dns zone -> records
	stockUse map[string]int
}

// New returns an emulator configured by o.
func New(o Options) *Emulator {
	if o.SecretKey == "" {
		o.SecretKey = "secret"
	}
	if o.TimeFactor <= 0 {
		o.TimeFactor = 1
	}
	if o.Faults.RetryAfter <= 0 {
		o.Faults.RetryAfter = time.Second
	}
	if o.Latency.BMDelivery == 0 {
		// Register row em-delivery: fast (recent in-stock orders), recorded (the default), slow.
		switch o.Readings.Of(assume.EMDelivery) {
		case "fast":
			o.Latency.BMDelivery = 15 * time.Second
		case "slow":
			o.Latency.BMDelivery = 30 * time.Minute
		}
	}
	e := &Emulator{
		opts:     o,
		lat:      DefaultLatency().merge(o.Latency),
		clock:    o.Clock,
		log:      o.Logger,
		faultRnd: rand.New(rand.NewPCG(uint64(o.Faults.Seed), 0x5ca1e)),
		idRnd:    rand.New(rand.NewPCG(uint64(o.Faults.Seed), 0x1d5)),
		nextIP:   0x7f0a0000, // 127.10.0.0: far from 127.0.0.1
		srv:      table[*server]{},
		ips:      table[*flexIP]{},
		sgs:      table[*secGroup]{},
		vols:     table[*volume]{},
		snaps:    table[*snapshot]{},
		bms:      table[*bmServer]{},
		keys:     map[string]*sshKey{},
		records:  map[string][]*record{},
		stockUse: map[string]int{},
	}
	if e.clock == nil {
		e.clock = time.Now
	}
	if ip := net.ParseIP(o.IPBase).To4(); ip != nil && ip[0] == 127 {
		e.nextIP = uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.mux = e.routes()
	for p := range o.Extra {
		e.extraPx = append(e.extraPx, p)
	}
	// Longest prefix first, so "/a/b" wins over "/a".
	sort.Slice(e.extraPx, func(i, j int) bool { return len(e.extraPx[i]) > len(e.extraPx[j]) })
	return e
}

// Start serves the emulator on 127.0.0.1 (random port) and advances its
// clock-driven states every few milliseconds so hooks fire without polling.
// stop shuts the server down and waits for it.
func (e *Emulator) Start(ctx context.Context) (url string, stop func(), err error) {
	url, stopServe, err := loopback.ServeHTTP(ctx, e, e.log, "scaleway emulator")
	if err != nil {
		return "", nil, err
	}
	tctx, cancel := context.WithCancel(context.Background()) // the ticks run until stop, as the server does
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		t := time.NewTicker(e.tickInterval())
		defer t.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-t.C:
				e.advanceAndRunHooks()
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-tickDone
			stopServe()
		})
	}
	return url, stop, nil
}

// tickInterval is fine enough to keep up with a scaled profile: the shortest
// scaled latency, clamped to [5ms, 250ms].
func (e *Emulator) tickInterval() time.Duration {
	d := time.Duration(float64(time.Second) * e.opts.TimeFactor)
	return min(max(d, 5*time.Millisecond), 250*time.Millisecond)
}

// ---------------------------------------------------------------------------
// Observability

// Inventory lists every live resource, sorted by kind then id.
func (e *Emulator) Inventory() []Resource {
	e.advanceAndRunHooks()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Resource
	for _, s := range e.srv {
		out = append(out, Resource{"instance_server", s.ID, s.Name, string(s.Zone), cp(s.Tags)})
	}
	for _, i := range e.ips {
		out = append(out, Resource{"instance_ip", i.ID, i.Address.String(), string(i.Zone), cp(i.Tags)})
	}
	for _, g := range e.sgs {
		out = append(out, Resource{"instance_security_group", g.ID, g.Name, string(g.Zone), cp(g.Tags)})
	}
	for _, v := range e.vols {
		out = append(out, Resource{"block_volume", v.ID, v.Name, string(v.Zone), cp(v.Tags)})
	}
	for _, s := range e.snaps {
		out = append(out, Resource{"block_snapshot", s.ID, s.Name, string(s.Zone), cp(s.Tags)})
	}
	for _, b := range e.bms {
		out = append(out, Resource{"baremetal_server", b.ID, b.Name, string(b.Zone), cp(b.Tags)})
	}
	for _, k := range e.keys {
		out = append(out, Resource{"iam_ssh_key", k.ID, k.Name, "", nil})
	}
	for z, rs := range e.records {
		for _, r := range rs {
			out = append(out, Resource{"domain_record", r.ID, r.Name, z, nil})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Quiesce waits until no request has been in the emulator for quiet in a row: what a crashed
// client had in flight has then taken effect (or never will), as it has by the time a real rerun
// starts, minutes after the crash.
func (e *Emulator) Quiesce(ctx context.Context, quiet time.Duration) error {
	idleSince := time.Time{}
	for {
		if e.inflight.Load() == 0 {
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if time.Since(idleSince) >= quiet {
				return nil
			}
		} else {
			idleSince = time.Time{}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scaleway emulator: still busy: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Calls returns a copy of the calls answered since the last ResetCalls.
func (e *Emulator) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

// CallCount is len(Calls()) without the copy.
func (e *Emulator) CallCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

// ResetCalls forgets the recorded calls.
func (e *Emulator) ResetCalls() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = nil
}

// UserData returns a copy of an Instance server's user data, nil when the
// server does not exist.
func (e *Emulator) UserData(zone, serverID string) map[string][]byte {
	e.advanceAndRunHooks()
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.srv[serverID]
	if !ok || string(s.Zone) != zone {
		return nil
	}
	return copyUD(s.userData)
}

func copyUD(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

func cp(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string{}, s...)
}

// ---------------------------------------------------------------------------
// Event queue: asynchronous transitions.

type event struct {
	at    time.Time
	seq   uint64
	apply func() // runs under e.mu; may append to e.pending
}

// after schedules fn after the scaled duration d. Caller holds e.mu.
func (e *Emulator) after(d time.Duration, fn func()) {
	e.seq++
	e.queue = append(e.queue, &event{at: e.clock().Add(e.scale(d)), seq: e.seq, apply: fn})
}

func (e *Emulator) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.opts.TimeFactor)
}

// advance applies every due event in (time, sequence) order. Caller holds e.mu.
func (e *Emulator) advance() {
	now := e.clock()
	for {
		idx := -1
		for i, ev := range e.queue {
			if ev.at.After(now) {
				continue
			}
			if idx < 0 || ev.at.Before(e.queue[idx].at) || (ev.at.Equal(e.queue[idx].at) && ev.seq < e.queue[idx].seq) {
				idx = i
			}
		}
		if idx < 0 {
			return
		}
		ev := e.queue[idx]
		e.queue = append(e.queue[:idx], e.queue[idx+1:]...)
		ev.apply()
	}
}

// takeHooks returns and clears the hooks collected under the lock.
func (e *Emulator) takeHooks() []func() {
	h := e.pending
	e.pending = nil
	return h
}

func (e *Emulator) advanceAndRunHooks() { e.runHooks(true) }

// runHooks advances the clock-driven states (when asked), then runs the hooks collected under the
// lock, outside it (a hook may start hosts that call the emulator back). One caller at a time
// takes and runs them: the hooks reach their consumers in the order their transitions happened,
// and one never runs beside another. Taken by whichever goroutine came along (a request's, the
// ticker's) and run unserialized, a worker's delivery could reach the world after the rescue boot
// that followed it, and a deleted server's stop after the next server's boot on its address.
func (e *Emulator) runHooks(advance bool) {
	e.hookMu.Lock()
	defer e.hookMu.Unlock()
	e.mu.Lock()
	if advance {
		e.advance()
	}
	h := e.takeHooks()
	e.mu.Unlock()
	for _, f := range h {
		f()
	}
}

// ---------------------------------------------------------------------------
// HTTP entry point.

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// ServeHTTP answers one API request.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	rec := &recorder{ResponseWriter: w}
	defer func() {
		e.mu.Lock()
		e.calls = append(e.calls, Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status})
		e.mu.Unlock()
		e.log.Debug("scaleway emulator", "method", r.Method, "path", r.URL.Path, "status", rec.status)
	}()
	e.serve(rec, r)
}

func (e *Emulator) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metadata" {
		// The SDK asks the gateway's metadata after some lists and ignores a
		// failure; the real gateway answers it, we need not.
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	var extra http.Handler
	for _, p := range e.extraPx {
		if strings.HasPrefix(r.URL.Path, p) {
			extra = e.opts.Extra[p]
			break
		}
	}
	if extra == nil && r.Header.Get("X-Auth-Token") != e.opts.SecretKey && !e.acceptsSecret(r.Header.Get("X-Auth-Token")) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{
			"message": "authentication is denied", "method": "api_key",
			"reason": "invalid_argument", "type": "denied_authentication",
		})
		return
	}
	if extra == nil && !e.allowed(w, r, r.Header.Get("X-Auth-Token")) {
		return
	}
	key := EndpointKey(r.Method, r.URL.Path)
	afterEffect := false
	e.mu.Lock()
	kind := e.decideFault(key)
	if kind == faultNone && isMutating(r.Method) && e.opts.Faults.AfterEffectRate > 0 {
		afterEffect = e.faultRnd.Float64() < e.opts.Faults.AfterEffectRate
	}
	e.mu.Unlock()
	switch kind {
	case fault429:
		secs := int((e.opts.Faults.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "rate limit exceeded", "type": "too_many_requests"})
		return
	case fault5xx:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"message": "service unavailable", "type": "service_unavailable"})
		return
	}
	if extra != nil {
		extra.ServeHTTP(w, r)
		return
	}
	if afterEffect {
		// The request takes effect; its answer is lost.
		e.route(discardWriter{h: http.Header{}}, r)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "internal error", "type": "internal_error"})
		return
	}
	e.route(w, r)
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

func isMutating(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch || m == http.MethodDelete
}

type faultKind int

const (
	faultNone faultKind = iota
	fault429
	fault5xx
)

// decideFault draws the fault for one request. Caller holds e.mu. Exactly
// one draw per request keeps the sequence a function of the request order.
func (e *Emulator) decideFault(key string) faultKind {
	f := e.opts.Faults
	r5, r429 := f.Rate5xx, f.Rate429
	if p, ok := f.PerEndpoint[key]; ok {
		if r5+r429 == 0 {
			r5, r429 = p, 0
		} else {
			r5, r429 = p*r5/(r5+r429), p*r429/(r5+r429)
		}
	}
	if r5 <= 0 && r429 <= 0 {
		return faultNone
	}
	x := e.faultRnd.Float64()
	switch {
	case x < r429:
		return fault429
	case x < r429+r5:
		return fault5xx
	}
	return faultNone
}

var (
	uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	zoneRe = regexp.MustCompile(`^[a-z]{2}-[a-z]{3}-[0-9]+$`)
)

// EndpointKey is the key of Faults.PerEndpoint for a request: the method and
// the path with zones replaced by {zone} and UUIDs by {id}, e.g.
// "POST /instance/v1/zones/{zone}/servers/{id}/action".
func EndpointKey(method, path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		switch {
		case uuidRe.MatchString(p):
			parts[i] = "{id}"
		case zoneRe.MatchString(p) && i > 0 && parts[i-1] == "zones":
			parts[i] = "{zone}"
		case i > 0 && parts[i-1] == "dns-zones":
			parts[i] = "{dns_zone}"
		}
	}
	return method + " " + strings.Join(parts, "/")
}

// route advances the clock-driven states, then serves the request through
// the API's routes; the hooks its transitions collected run after it.
func (e *Emulator) route(w http.ResponseWriter, r *http.Request) {
	e.runHooks(true)
	defer e.runHooks(false)
	e.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tagLimitKey{}, e.maxTagLen())))
}

// zoneOf returns the zone, or "" when the segment is not a zone name; the
// handlers answer 404 for "".
func zoneOf(s string) string {
	if zoneRe.MatchString(s) {
		return s
	}
	return ""
}

// regionOf maps "fr-par-1" to "fr-par".
func regionOf(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}

// ---------------------------------------------------------------------------
// Helpers shared by the product handlers.

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "emulator: marshal: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func noContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

// decodeLocked decodes the body into a new Req (400 when it does not decode), then runs fn
// with it under e.mu.
func decodeLocked[Req any](e *Emulator, w http.ResponseWriter, r *http.Request, fn func(req *Req)) {
	var req Req
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(&req)
}

// decode reads a JSON body into v; it answers 400 and returns false on error.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	_, ok := decodeBody(w, r, v)
	return ok
}

// decodeBody is decode, also returning the body it read.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		invalidArg(w, "body", "could not read the request body: "+err.Error())
		return nil, false
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		invalidArg(w, "body", "invalid JSON body: "+err.Error())
		return nil, false
	}
	return b, tagsFit(w, r, b)
}

// MaxTagLen is the longest tag the emulator accepts on any resource by default (register row
// tag-length, reading 70: IAM documents 1–70 characters, other products are silent).
const MaxTagLen = 70

// tagLimitKey carries the request's longest accepted tag (Emulator.maxTagLen) to tagsFit.
type tagLimitKey struct{}

// maxTagLen is the longest tag accepted under register row tag-length: 70, longer (128), or
// shorter (50: under the 70 the bot is designed for, and under its longest tag).
func (e *Emulator) maxTagLen() int {
	switch e.opts.Readings.Of(assume.TagLength) {
	case "longer":
		return 128
	case "shorter":
		return 50
	}
	return MaxTagLen
}

// tagsFit refuses a body whose "tags" hold a tag longer than the request's limit (400
// invalid_arguments, naming the tag); any other body passes.
func tagsFit(w http.ResponseWriter, r *http.Request, body []byte) bool {
	limit, ok := r.Context().Value(tagLimitKey{}).(int)
	if !ok {
		limit = MaxTagLen
	}
	var t struct {
		Tags []string `json:"tags"`
	}
	if json.Unmarshal(body, &t) != nil {
		return true
	}
	for i, tag := range t.Tags {
		if len(tag) > limit {
			invalidArg(w, fmt.Sprintf("tags.%d", i), fmt.Sprintf("tag %q is %d characters long, longer than %d", tag, len(tag), limit))
			return false
		}
	}
	return true
}

// newID returns a UUID v4 drawn from the seeded generator. Caller holds e.mu.
func (e *Emulator) newID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := e.idRnd.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newLoopback hands out the next 127.x.y.z address, never 127.0.0.1 and
// never a .0 or .255 last octet. Caller holds e.mu.
func (e *Emulator) newLoopback() net.IP {
	for {
		e.nextIP++
		if e.nextIP >= 0x7fffffff {
			e.nextIP = 0x7f000101
		}
		last := byte(e.nextIP)
		if last == 0 || last == 255 || e.nextIP == 0x7f000001 {
			continue
		}
		return net.IPv4(127, byte(e.nextIP>>16), byte(e.nextIP>>8), last).To4()
	}
}

// quota checks a per-type quota against current; it answers 403 and returns
// false when exceeded.
func (e *Emulator) quota(w http.ResponseWriter, name string, current int) bool {
	return quotaLeft(w, e.opts.Quotas, name, current)
}

// quotas checks one more resource of m against the emulator's quota (Options.Quotas) name, then
// against the organization's quota org, which counts the resources of m that alike accepts (nil:
// all of them). It answers 403 and returns false when one is exceeded. Caller holds e.mu.
func quotas[T any](e *Emulator, w http.ResponseWriter, m map[string]T, name, org string, alike func(T) bool) bool {
	if !e.quota(w, name, len(m)) {
		return false
	}
	n := 0
	for _, v := range m {
		if alike == nil || alike(v) {
			n++
		}
	}
	return e.orgQuota(w, org, n)
}

// quotaLeft checks quota name of quotas against current: a quota quotas does not set is
// unlimited. It answers 403 quotas_exceeded, naming the quota, and returns false when one
// more would exceed it.
func quotaLeft(w http.ResponseWriter, quotas map[string]int, name string, current int) bool {
	q, ok := quotas[name]
	if !ok || current < q {
		return true
	}
	writeJSON(w, http.StatusForbidden, map[string]any{
		"type":    "quotas_exceeded",
		"message": "quota(s) exceeded for this resource",
		"details": []map[string]any{{"resource": name, "quota": q, "current": current}},
	})
	return false
}

// tagFilter parses tags query values (comma-joined by the Instance SDK,
// repeated by the others) into a list that must all be present, exactly.
func tagFilter(r *http.Request) []string {
	var out []string
	for _, v := range r.URL.Query()["tags"] {
		for _, t := range strings.Split(v, ",") {
			if t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func hasAllTags(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// nameMatch is the real API's name filter: a substring match.
func nameMatch(name, filter string) bool {
	return filter == "" || strings.Contains(name, filter)
}

// page applies page / per_page (or page_size) to n items and returns the
// bounds. Defaults: page 1, 50 per page, at most 100.
func page(r *http.Request, n int, perPageParam string) (lo, hi int, err error) {
	q := r.URL.Query()
	p, per := 1, 50
	if s := q.Get("page"); s != "" {
		if p, err = strconv.Atoi(s); err != nil || p < 1 {
			return 0, 0, fmt.Errorf("page must be a positive integer, got %q", s)
		}
	}
	if s := q.Get(perPageParam); s != "" {
		if per, err = strconv.Atoi(s); err != nil || per < 1 || per > 100 {
			return 0, 0, fmt.Errorf("%s must be between 1 and 100, got %q", perPageParam, s)
		}
	}
	lo = min((p-1)*per, n)
	hi = min(lo+per, n)
	return lo, hi, nil
}

// pageOf returns the page of list that the page and page_size arguments ask for (the Block,
// Elastic Metal, IAM and Domain APIs); it answers 400 itself, and returns false, when they are bad.
func pageOf[T any](w http.ResponseWriter, r *http.Request, list []T) ([]T, bool) {
	lo, hi, err := page(r, len(list), "page_size")
	if err != nil {
		invalidArg(w, "page", err.Error())
		return nil, false
	}
	return list[lo:hi], true
}

// instancePageOf is pageOf for the Instance API: per_page, and the X-Total-Count and Link headers.
func instancePageOf[T any](w http.ResponseWriter, r *http.Request, list []T) ([]T, bool) {
	lo, hi, ok := instancePage(w, r, len(list))
	if !ok {
		return nil, false
	}
	return list[lo:hi], true
}

// instancePage paginates an Instance list: X-Total-Count and Link headers,
// like the real API. It returns false after answering 400.
func instancePage(w http.ResponseWriter, r *http.Request, n int) (lo, hi int, ok bool) {
	lo, hi, err := page(r, n, "per_page")
	if err != nil {
		invalidArg(w, "page", err.Error())
		return 0, 0, false
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(n))
	per := 50
	if s := r.URL.Query().Get("per_page"); s != "" {
		per, _ = strconv.Atoi(s)
	}
	last := max(1, (n+per-1)/per)
	cur := lo/per + 1
	// The recorded links are relative to the zone: "</products/servers?page=2&per_page=50&>".
	path := r.URL.Path
	if _, rest, ok := strings.Cut(path, "/zones/"); ok {
		if i := strings.Index(rest, "/"); i >= 0 {
			path = rest[i:]
		}
	}
	var links []string
	link := func(p int, rel string) {
		links = append(links, fmt.Sprintf("<%s?page=%d&per_page=%d&>; rel=%q", path, p, per, rel))
	}
	if cur > 1 {
		link(1, "first")
		link(cur-1, "previous")
	}
	if cur < last {
		link(cur+1, "next")
	}
	link(last, "last")
	w.Header().Set("Link", strings.Join(links, ","))
	return lo, hi, true
}
