package commands

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/pocbot/pocbot/internal/lifecycle"
)

// Worst cases: every input a renderer shows without a bound of its own, at sizes no real run
// reaches (a megabyte of error, ten thousand rows), with backtick runs that would close a naive
// fence, multi-byte text, and a secret in the middle.
var (
	secret    = "ghp_AbCdEf0123456789AbCdEf0123456789AbCd"
	hugeLine  = strings.Repeat("é`|<b>", 40_000)                                         // 320 KB, one line
	hugeError = strings.Repeat("dial tcp 51.15.0.1:6443: i/o timeout ```` \n", 30_000) + // ~1.3 MB
		"token " + secret + " in the way\n" + strings.Repeat("…and the cause is here\n", 10)
)

func many[T any](n int, f func(i int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func worstSteps() []Step {
	return many(2_000, func(i int) Step {
		return Step{Name: fmt.Sprintf("step %d %s", i, hugeLine[:2000]), State: StepState(i % 5), Duration: time.Duration(i) * time.Second, Note: hugeLine[:3000]}
	})
}

func worstDown() DownView {
	return DownView{Cluster: "acme-shop-42", Duration: time.Hour, Accrued: "1.43 €", Deleted: many(2_000, func(i int) DeletedResource {
		d := DeletedResource{Kind: "instance " + hugeLine[:500], Name: hugeLine[:1000], ID: fmt.Sprintf("id-%d", i)}
		if i%3 == 0 {
			d.Err = hugeError
		}
		return d
	})}
}

func worstCost() CostView {
	c := defaultCost()
	c.Lines = many(2_000, func(int) CostLine { return CostLine{hugeLine[:900], "1 €", "24 €", "730 €", hugeLine[:900]} })
	c.Fees = many(2_000, func(int) Fee { return Fee{hugeLine[:900], "1 €", hugeLine[:900]} })
	c.Notes = many(2_000, func(int) string { return hugeLine })
	return c
}

func worstPreflight() *PreflightView {
	return &PreflightView{
		Quotas: many(2_000, func(i int) QuotaRow {
			return QuotaRow{From: hugeLine[:700], What: hugeLine[:700], Limit: "5", Used: i, Need: 1, Headroom: "0"}
		}),
		Offers: many(2_000, func(int) OfferRow {
			return OfferRow{Offer: hugeLine[:700], Stock: "none", PerDay: "4 €", Outcome: hugeLine[:700]}
		}),
		ETA: time.Hour, ETAFrom: hugeLine, Path: hugeLine,
	}
}

func worstPlan() PlanView {
	return PlanView{
		Cluster: "acme-shop-42",
		Groups: many(6, func(g int) PlanGroup {
			return PlanGroup{Name: hugeLine[:500], Items: many(2_000, func(int) PlanItem {
				return PlanItem{Kind: hugeLine[:600], Name: hugeLine[:600], Detail: hugeLine[:600]}
			})}
		}),
		Changes: many(2_000, func(int) Change {
			return Change{Field: hugeLine[:500], From: hugeLine[:500], To: hugeLine[:500], Reason: hugeLine[:500]}
		}),
		TTL: time.Hour, Talos: "v1.11.2", AdminCIDRs: many(2_000, func(i int) string { return fmt.Sprintf("10.%d.%d.0/24", i/256, i%256) }),
		Cost: worstCost(), Preflight: worstPreflight(),
	}
}

func worstUp() *UpView {
	u := upView(KubeconfigAccess{Login: "alice", NoKeys: true, Unusable: many(2_000, func(int) string { return hugeLine[:300] }),
		OperatorCmd: "bot kubeconfig --cluster acme-shop-42"}, many(2_000, func(int) string { return "203.0.113.0/24" }))
	u.APIEndpoints = many(2_000, func(int) string { return hugeLine[:400] })
	u.Changes = many(2_000, func(int) Change { return Change{Field: hugeLine[:500], From: "a", To: "b", Reason: hugeLine} })
	u.WorkerOffer = hugeLine
	return &u
}

// TestRenderersWorstCase: every renderer, at its worst case, stays within MaxBodyBytes and stays
// well-formed Markdown (no code fence or <details> left open, so that the end of the body reads
// as text), and keeps what it must say: its heading or first words, and its last.
func TestRenderersWorstCase(t *testing.T) {
	sticky := StickyView{Cluster: "acme-shop-42", Serial: 1, StateSerial: 3, Verb: VerbUp, Requester: "alice", Phase: lifecycle.PhaseFailed,
		Now: now, Started: t0, RunURL: "https://github.com/acme/shop/actions/runs/1", Steps: worstSteps(), Error: hugeError,
		Log: strings.Repeat(hugeError, 4), Note: strings.Repeat("a trusted note. ", 1_000), ETA: "about 12 min"}
	final := sticky
	final.Phase, final.Error, final.Up, final.Down = lifecycle.PhaseReady, "", worstUp(), nil
	downSticky := sticky
	downSticky.Verb, downSticky.Down, downSticky.Error = VerbDown, func() *DownView { d := worstDown(); return &d }(), ""
	cases := []struct {
		name        string
		body        string
		first, last string // present in the body: what the reader must still see
	}{
		{"sticky, failed, everything huge", RenderSticky(sticky), "### ", "the cause is here"},
		{"sticky, up done, huge result", RenderSticky(final), "### ", "Kubernetes API"},
		{"sticky, down done, huge report", RenderSticky(downSticky), "### ", "could not be deleted"},
		{"notify", RenderNotify(NotifyView{Requester: "alice", Verb: VerbUp, Cluster: "acme-shop-42", Summary: hugeError, StickyURL: "https://x/1"}), "@alice", "details"},
		{"kubeconfig", RenderKubeconfig("acme-shop-42", KubeconfigAccess{Login: "alice", DeadLink: &DeadLink{Answer: hugeError, Fix: hugeError},
			OperatorCmd: "bot kubeconfig --cluster acme-shop-42"}, now), "**Kubeconfig:**", "not posted"},
		{"kubeconfig, unusable keys", RenderKubeconfig("acme-shop-42", worstUp().Kubeconfig, now), "**Kubeconfig:**", "can encrypt it"},
		{"down", RenderDown(worstDown()), "### ❌", "could not be deleted"},
		{"reaped", RenderReaped(ReapedView{Down: worstDown(), Reason: ReapExpired, ExpiredAt: t0}), "### 🧹", "could not be deleted"},
		{"cost", RenderCost(worstCost()), "### 💶", "Total per day"},
		{"status", RenderStatus(StatusView{Cluster: "acme-shop-42", Exists: true, Phase: lifecycle.PhaseReady, Now: now,
			Health:     many(2_000, func(int) HealthCheck { return HealthCheck{Name: hugeLine[:500], Detail: hugeLine} }),
			HealthNote: hugeError, Resources: many(2_000, func(int) ResourceLine {
				return ResourceLine{Kind: hugeLine[:300], Name: hugeLine[:300], ID: "x", State: hugeLine[:300]}
			}),
			APIEndpoints: many(2_000, func(int) string { return hugeLine[:200] }), Lock: &StatusLock{RunID: hugeLine, Command: hugeLine, Actor: hugeLine}}), "### ", "Kubernetes API"},
		{"expiry warning", RenderExpiryWarning(ExpiryWarningView{Cluster: "acme-shop-42", Requester: hugeLine, At: now, Now: t0, Accrued: hugeLine}), "⏰", "tearing down"},
		{"budget refusal", RenderBudgetRefusal(BudgetRefusalView{Limit: LimitMaxClusters, Current: hugeLine, Max: "3",
			Running: many(2_000, func(i int) string { return fmt.Sprintf("acme-shop-%d", i) }), Detail: hugeError}), "😕 **Not created:**", "Nothing was created"},
		{"plan", RenderPlan(worstPlan()), "### 📋", "Plan for cluster"},
		{"quota refusal", RenderQuotaRefusal("acme-shop-42", hugeError, *worstPreflight()), "😕 **Not created:**", "does not fit"},
		{"refused, changes", RenderRefused(RefusedView{Kind: lifecycle.RefuseChanges, Detail: hugeError, Plan: worstPlan()}), "😕 **Not changed:**", "Plan for cluster"},
		{"refused, other", RenderRefused(RefusedView{Kind: lifecycle.RefuseLocked, Cluster: "acme-shop-42", Lock: LockView{Command: hugeLine, Actor: hugeLine}}), "⏳", "is busy"},
		{"error reply", ErrorReply(errors.New(hugeError), VerbUp, ParseConfig{}), "😕 **Not run:**", "Usage"},
		{"failure", RenderFailure(hugeError, "https://github.com/acme/shop/actions/runs/1"), "😕 **Failed:**", "the cause is here"},
		{"permission refusal", RefusalReply(hugeLine, VerbUp, "read"), "😕", "needs at least"},
		{"a reply with the schedule notice", WithNotice(RenderDown(worstDown()), RenderScheduleStopped(ScheduleStoppedView{LastRun: t0, Now: now, Repo: "acme/shop"})),
			"### ❌", "Enable workflow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.body
			if len(b) > MaxBodyBytes {
				t.Fatalf("%d bytes, over MaxBodyBytes (%d)", len(b), MaxBodyBytes)
			}
			if !strings.Contains(b, tc.first) || !strings.Contains(b, tc.last) {
				t.Errorf("lost what it must say (%q … %q):\n%s", tc.first, tc.last, head(b))
			}
			if strings.Contains(b, secret) {
				t.Error("a secret survived the cut")
			}
			wellFormed(t, b)
		})
	}
}

// wellFormed checks, on CommonMark's reading of body (goldmark), that every <details> is closed
// and that no code block runs to the end of the body unclosed (an open fence swallows all that
// follows it: the body's last block is then a code block although its last line is no fence).
func wellFormed(t *testing.T, body string) {
	t.Helper()
	src := []byte(body)
	doc := goldmark.DefaultParser().Parse(text.NewReader(src))
	var html bytes.Buffer
	if err := goldmark.DefaultRenderer().Render(&html, src, doc); err != nil {
		t.Fatal(err)
	}
	if o, c := strings.Count(html.String(), "<details>"), strings.Count(html.String(), "</details>"); o != c {
		t.Errorf("%d <details> opened, %d closed", o, c)
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if k := doc.LastChild(); k != nil && k.Kind() == ast.KindFencedCodeBlock && !strings.HasPrefix(last, "```") {
		t.Errorf("a code fence is left open: the last line %q is inside it", last)
	}
}

func head(s string) string { return s[:min(len(s), 1500)] }

// TestFitClosesWhatItCuts: a body cut by fit closes the fence and the <details> it cut through,
// whatever the fence's length, and ends with the note.
func TestFitClosesWhatItCuts(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"inside a long fence", "intro\n\n<details><summary>Log</summary>\n\n``````text\n" + strings.Repeat("a ```` line\n", 20_000) + "``````\n</details>\n"},
		{"inside nested details", strings.Repeat("<details><summary>x</summary>\n\n", 3) + strings.Repeat("plain text line\n", 20_000)},
		{"one huge line", strings.Repeat("é", 100_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := fit(tc.body)
			if len(out) > MaxBodyBytes || !strings.HasSuffix(out, cutNote) {
				t.Fatalf("%d bytes, ends %q", len(out), out[max(len(out)-100, 0):])
			}
			wellFormed(t, out)
		})
	}
}
