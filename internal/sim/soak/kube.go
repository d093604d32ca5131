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

// The data invariant: a resumed cluster holds every object written before its pause. A KindKube
// event is a user with the kubeconfig the bot issued them — the link of a bot comment, fetched and
// opened with the user's SSH key as the reply says (`curl … | age -d`) — writing a ConfigMap or a
// Secret through the stand-in's Kubernetes REST API. A write counts when the cluster's state read
// ready before and after it (a pause saves `pausing` before it takes its snapshot, so a counted
// write is in the snapshot). After every step, every counted object of a ready cluster is read
// back, with the writer's kubeconfig or, when that one no longer reaches the cluster (a pause that
// released its IPs), the newest one issued on the issue: a NotFound or other data is a violation.
// The objects go with their cluster's incarnation: a teardown (a phase of down, or a state made
// again) forgets them. An answer that is no answer at all (the API unreachable, a 503 while etcd
// is down, a refused certificate) proves nothing either way and is not counted.

// kubeObject is one object a history wrote.
type kubeObject struct {
	plural, name, value string
	kubeconfig          []byte // the writer's
	paused              bool   // a pause of its cluster was seen since it was written
}

// incarnationObjects are the objects written to one incarnation of a cluster.
type incarnationObjects struct {
	created      time.Time
	repo         string
	number       int
	objs         []*kubeObject
	readsResumed int
}

// kubeNamespace is where the histories write.
const kubeNamespace = "default"

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
	obj := &kubeObject{plural: e.Action, name: fmt.Sprintf("soak-%d", i), value: fmt.Sprintf("%d/%d", h.seed, i), kubeconfig: kc}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := k.Create(wctx, obj.plural, kubeNamespace, obj.name, map[string]string{"v": obj.value}); err != nil {
		h.logf("    create %s %s: %v", obj.plural, obj.name, err)
		return
	}
	after, ok := h.checker.readyHeader(ctx, cl)
	if !ok || !after.Created.Equal(before.Created) {
		h.logf("    %s changed during the write: %s %s not counted", cl, obj.plural, obj.name)
		return
	}
	h.checker.noteWritten(cl, after, obj)
	h.logf("    wrote %s %s to %s", obj.plural, obj.name, cl)
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
		case lifecycle.PhasePausing, lifecycle.PhasePaused, lifecycle.PhaseResuming:
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
			switch {
			case errors.As(err, &answer) && answer.Code == http.StatusNotFound:
			case err != nil:
				continue // no answer either way
			case got == o.value:
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
			if err != nil {
				detail += " is not found"
			} else {
				detail += fmt.Sprintf(" holds %q, written %q", got, o.value)
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
