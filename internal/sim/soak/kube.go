package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	talossim "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The data invariant: a resumed cluster holds every object written before its pause, as last
// written. A KindKube event is a user with the kubeconfig the bot issued them — the link of a bot
// comment, fetched and opened with the user's SSH key as the reply says (`curl … | age -d`) —
// changing objects through the stand-in's Kubernetes REST API: Action "configmaps" or "secrets"
// creates kubeBatch objects (most of that kind, one of the other), "update" gives the oldest
// object of the cluster a new value, "delete" deletes the second oldest. A change counts when the
// cluster's state read ready, and the same incarnation, before and after it (a pause saves
// `pausing` before it takes its snapshot, so a counted change is in the snapshot); an update or
// a deletion that does not count, or gets no answer, leaves its object unknown, and the object is
// no longer checked. After every step, every counted object of a ready cluster is read back, with
// the writer's kubeconfig or, when that one no longer reaches the cluster (a pause that released
// its IPs), the newest one issued on the issue: an object not found, holding another value than
// its last write, or found after its deletion is a violation. The objects go with their
// cluster's incarnation: a teardown (a phase of down, or a state made again) forgets them. An
// answer that is no answer at all (the API unreachable, a 503 while etcd is down, a refused
// certificate) proves nothing either way and is not counted.

// kubeObject is one object a history wrote.
type kubeObject struct {
	plural, name, value string
	deleted             bool   // its deletion was counted: a read must find nothing
	kubeconfig          []byte // the writer's
	paused              bool   // a pause of its cluster was seen since it was last written
}

// incarnationObjects are the objects written to one incarnation of a cluster.
type incarnationObjects struct {
	created      time.Time
	repo         string
	number       int
	objs         []*kubeObject
	readsResumed int
	pausing      bool // the last check saw it in a pause's phase
}

// kubeNamespace is where the histories write.
const kubeNamespace = "default"

// kubeBatch is how many objects a KindKube creation writes.
const kubeBatch = 3

// The KindKube actions besides a creation's plural.
const (
	kubeUpdate = "update"
	kubeDelete = "delete"
)

// kubeLinkRE finds the kubeconfig link in a bot reply.
var kubeLinkRE = regexp.MustCompile(`curl -fsS '([^']+)' \| age -d`)

// kubeWrite plays a KindKube event.
func (h *history) kubeWrite(ctx context.Context, i int, e Event) {
	owner, repo, _ := strings.Cut(e.Repo, "/")
	cl := commands.ClusterName(owner, repo, e.Number)
	before, ok := h.checker.readyHeader(ctx, cl)
	if !ok {
		h.logf("    %s is not ready: nothing written", cl)
		return
	}
	kc := h.issuedKubeconfig(ctx, e.Repo, e.Number, h.ids[e.User])
	if kc == nil {
		h.logf("    no kubeconfig issued to %s on %s#%d: nothing written", e.User, e.Repo, e.Number)
		return
	}
	k, err := talossim.NewKubeClient(kc)
	if err != nil {
		h.logf("    the issued kubeconfig: %v", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// stable tells whether the cluster stayed ready, the same incarnation, during the change.
	stable := func() (statestore.Header, bool) {
		after, ok := h.checker.readyHeader(ctx, cl)
		return after, ok && after.Created.Equal(before.Created)
	}
	switch e.Action {
	case kubeUpdate, kubeDelete:
		o := h.checker.target(cl, before, e.Action)
		if o == nil {
			h.logf("    no object of %s to %s", cl, e.Action)
			return
		}
		value := fmt.Sprintf("%d/%d", h.seed, i)
		if e.Action == kubeUpdate {
			err = k.Update(wctx, o.plural, kubeNamespace, o.name, map[string]string{"v": value})
		} else {
			err = k.Delete(wctx, o.plural, kubeNamespace, o.name)
		}
		var answer *talossim.KubeAnswer
		if _, ok := stable(); err == nil && ok {
			if e.Action == kubeUpdate {
				o.value = value
			} else {
				o.deleted = true
			}
			o.paused = false
			h.checker.writes++
			h.logf("    %s %s %s of %s", e.Action, o.plural, o.name, cl)
			return
		} else if errors.As(err, &answer) && ok {
			h.logf("    %s %s %s: %v: unchanged", e.Action, o.plural, o.name, err)
			return
		}
		h.checker.forget(cl, o)
		h.logf("    %s %s %s: %v (or %s changed during it): no longer checked", e.Action, o.plural, o.name, err, cl)
	default:
		var objs []*kubeObject
		for b := range kubeBatch {
			plural := e.Action
			if b == kubeBatch-1 { // one of the other kind
				plural = map[string]string{"configmaps": "secrets", "secrets": "configmaps"}[plural]
			}
			obj := &kubeObject{plural: plural, name: fmt.Sprintf("soak-%d-%d", i, b), value: fmt.Sprintf("%d/%d/%d", h.seed, i, b), kubeconfig: kc}
			if err := k.Create(wctx, obj.plural, kubeNamespace, obj.name, map[string]string{"v": obj.value}); err != nil {
				h.logf("    create %s %s: %v", obj.plural, obj.name, err)
				break
			}
			objs = append(objs, obj)
		}
		after, ok := stable()
		if !ok {
			h.logf("    %s changed during the writes: %d objects not counted", cl, len(objs))
			return
		}
		for _, obj := range objs {
			h.checker.noteWritten(cl, after, obj)
			h.logf("    wrote %s %s to %s", obj.plural, obj.name, cl)
		}
	}
}

// issuedKubeconfig is the newest kubeconfig the bot issued on the issue that one of ids opens.
func (h *history) issuedKubeconfig(ctx context.Context, repo string, number int, ids ...age.Identity) []byte {
	ids = slices.DeleteFunc(ids, func(id age.Identity) bool { return id == nil })
	if len(ids) == 0 {
		return nil
	}
	comments := h.w.GitHub.Comments(repo, number)
	slices.SortStableFunc(comments, func(a, b ghsim.Comment) int { return a.Updated.Compare(b.Updated) })
	for i := len(comments) - 1; i >= 0; i-- {
		c := comments[i]
		if c.AuthorType != "Bot" {
			continue
		}
		m := kubeLinkRE.FindStringSubmatch(c.Body)
		if m == nil {
			continue
		}
		if kc, err := h.fetchKubeconfig(ctx, m[1], ids); err == nil {
			return kc
		}
	}
	return nil
}

// fetchKubeconfig does what the reply's `curl … | age -d` line does. The link names the S3
// endpoint through the wire of the process that presigned it, gone since: the request goes to the
// world's endpoint with the link's Host, which the signature covers.
func (h *history) fetchKubeconfig(ctx context.Context, link string, ids []age.Identity) ([]byte, error) {
	h.mu.Lock()
	kc, ok := h.kubeconfigs[link]
	h.mu.Unlock()
	if ok {
		return kc, nil
	}
	u, err := url.Parse(link)
	if err != nil {
		return nil, err
	}
	real, err := url.Parse(h.w.S3.Endpoint)
	if err != nil {
		return nil, err
	}
	host := u.Host
	u.Scheme, u.Host = real.Scheme, real.Host
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sealed, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("kubeconfig link: HTTP %d", resp.StatusCode)
	}
	r, err := age.Decrypt(bytes.NewReader(sealed), ids...)
	if err != nil {
		return nil, err
	}
	if kc, err = io.ReadAll(r); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.kubeconfigs[link] = kc
	h.mu.Unlock()
	return kc, nil
}

// readyHeader is the cluster's state header when its phase is ready.
func (c *checker) readyHeader(ctx context.Context, cl string) (statestore.Header, bool) {
	if err := c.reopen(ctx); err != nil {
		return statestore.Header{}, false
	}
	headers, err := c.store.List(ctx)
	if err != nil {
		return statestore.Header{}, false
	}
	for _, hd := range headers {
		if hd.Cluster == cl && hd.Phase == string(lifecycle.PhaseReady) {
			return hd, true
		}
	}
	return statestore.Header{}, false
}

// noteWritten counts an object written to the incarnation hd shows.
func (c *checker) noteWritten(cl string, hd statestore.Header, obj *kubeObject) {
	w := c.written[cl]
	if w == nil || !w.created.Equal(hd.Created) {
		w = &incarnationObjects{created: hd.Created, repo: hd.Repository, number: hd.Number}
		c.written[cl] = w
	}
	w.objs = append(w.objs, obj)
	c.writes++
}

// target is the object of the incarnation hd shows that an update changes (the oldest not
// deleted) or a deletion deletes (the second oldest, so that one is always left); nil when
// there is none.
func (c *checker) target(cl string, hd statestore.Header, action string) *kubeObject {
	w := c.written[cl]
	if w == nil || !w.created.Equal(hd.Created) {
		return nil
	}
	var live []*kubeObject
	for _, o := range w.objs {
		if !o.deleted {
			live = append(live, o)
		}
	}
	switch {
	case action == kubeUpdate && len(live) > 0:
		return live[0]
	case action == kubeDelete && len(live) > 1:
		return live[1]
	}
	return nil
}

// forget stops checking o, whose content is no longer known.
func (c *checker) forget(cl string, o *kubeObject) {
	if w := c.written[cl]; w != nil {
		w.objs = slices.DeleteFunc(w.objs, func(x *kubeObject) bool { return x == o })
	}
}

// objectsHeld checks the data invariant on the headers of one listing.
func (c *checker) objectsHeld(ctx context.Context, step int, headers []statestore.Header) []Violation {
	var out []Violation
	byName := map[string]statestore.Header{}
	for _, hd := range headers {
		byName[hd.Cluster] = hd
	}
	for cl, w := range c.written {
		hd, ok := byName[cl]
		if !ok || !hd.Created.Equal(w.created) {
			delete(c.written, cl) // torn down, or made again: its objects went with it
			continue
		}
		switch clusterops.Phase(hd.Phase) {
		case lifecycle.PhaseReady:
			w.pausing = false
		case lifecycle.PhasePausing, lifecycle.PhasePaused, lifecycle.PhaseResuming:
			if !w.pausing {
				w.pausing = true
				c.pauses++
			}
			for _, o := range w.objs {
				o.paused = true
			}
			continue
		case lifecycle.PhaseDestroying, lifecycle.PhaseDestroyed, lifecycle.PhaseCancelled:
			delete(c.written, cl)
			continue
		default:
			continue
		}
		for _, o := range w.objs {
			got, err := c.readObject(ctx, w, o)
			var answer *talossim.KubeAnswer
			notFound := errors.As(err, &answer) && answer.Code == http.StatusNotFound
			switch {
			case err != nil && !notFound:
				continue // no answer either way
			case notFound == o.deleted && (o.deleted || got == o.value):
				if o.paused {
					w.readsResumed++
					c.readsResumed++
				}
				continue
			}
			inv := "a ready cluster holds every object written to it"
			if o.paused {
				inv = "a resumed cluster holds every object written before its pause"
			}
			detail := fmt.Sprintf("%s: %s %s/%s", cl, o.plural, kubeNamespace, o.name)
			switch {
			case o.deleted:
				detail += fmt.Sprintf(" holds %q after its deletion", got)
			case notFound:
				detail += " is not found"
			default:
				detail += fmt.Sprintf(" holds %q, last written %q", got, o.value)
			}
			out = append(out, Violation{Step: step, Invariant: inv, Detail: detail})
		}
	}
	return out
}

// readObject reads o's value with its writer's kubeconfig or, when that one gets no answer from
// the cluster, the newest one issued on its issue.
func (c *checker) readObject(ctx context.Context, w *incarnationObjects, o *kubeObject) (string, error) {
	read := func(kc []byte) (string, error) {
		k, err := talossim.NewKubeClient(kc)
		if err != nil {
			return "", err
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		d, err := k.Data(rctx, o.plural, kubeNamespace, o.name)
		return d["v"], err
	}
	v, err := read(o.kubeconfig)
	var answer *talossim.KubeAnswer
	if err == nil || errors.As(err, &answer) || c.issued == nil {
		return v, err
	}
	if kc := c.issued(ctx, w.repo, w.number); kc != nil && !bytes.Equal(kc, o.kubeconfig) {
		return read(kc)
	}
	return v, err
}
