package commands

import (
	"fmt"
	"strings"
	"time"
)

// PausedView is the result of `/poc pause`: what was kept, what it costs now, how to come back.
type PausedView struct {
	Cluster string
	// Kept lists what the pause kept (reserved IPs, security group, DNS records, …).
	Kept []string
	// Snapshot describes the etcd snapshot in the bucket ("2.1 MiB, verified").
	Snapshot string
	// DailyCost is what the paused cluster costs per day; RunningDailyCost what it cost running.
	DailyCost, RunningDailyCost string
	// Parked is set when the worker was parked rather than deleted (a resume adopts it).
	Parked bool
	// ReleasedIPs: the reserved IPs went too (`--release-ips`).
	ReleasedIPs bool
	// Expires is when the paused cluster is destroyed, snapshot included (zero: never).
	Expires time.Time
	// NextPause is when a schedule pauses it again (zero: no schedule) — on a resume reply.
	NextPause time.Time
}

func renderPaused(v PausedView, now time.Time) string {
	var b strings.Builder
	b.WriteString("⏸️ **Paused.** The machines are gone; the cluster's etcd is in the state bucket")
	if v.Snapshot != "" {
		b.WriteString(" (" + EscapeText(v.Snapshot) + ")")
	}
	b.WriteString(".\n\n")
	if len(v.Kept) > 0 {
		b.WriteString("Kept, so that it comes back as the same cluster: " + EscapeText(strings.Join(v.Kept, ", ")) + ".\n\n")
	}
	if v.DailyCost != "" {
		fmt.Fprintf(&b, "It costs **%s per day** while paused", EscapeText(v.DailyCost))
		if v.RunningDailyCost != "" {
			fmt.Fprintf(&b, " (%s running)", EscapeText(v.RunningDailyCost))
		}
		b.WriteString(".\n\n")
	}
	if v.Parked {
		b.WriteString("The worker is parked: a resume adopts it without ordering a new one.\n\n")
	}
	if v.ReleasedIPs {
		b.WriteString("The reserved IPs were released too (`--release-ips`): `/poc resume` (or `/poc up`) brings it back on new IPs, with new certificates from the same CA and a new kubeconfig link; everything that was in the cluster is there again.")
	} else {
		b.WriteString("Comment `/poc resume` (or `/poc up`) to bring it back on the same IPs: the kubeconfig you have keeps working, and everything that was in the cluster is there again.")
	}
	if !v.Expires.IsZero() {
		fmt.Fprintf(&b, " A paused cluster still expires: it is destroyed, snapshot included, at %s", v.Expires.UTC().Format("2006-01-02 15:04 UTC"))
		if !now.IsZero() && v.Expires.After(now) {
			fmt.Fprintf(&b, " (in %s)", FormatDuration(v.Expires.Sub(now).Round(time.Minute)))
		}
		b.WriteString(".")
	}
	b.WriteString("\n")
	return b.String()
}
