package commands

import (
	"fmt"
	"strings"
	"time"
)

// ScheduleStoppedView is what a reply and the "POC clusters" issue say when the reaper's schedule
// has stopped running (internal/schedule tells from its heartbeat).
type ScheduleStoppedView struct {
	LastRun time.Time     // the last scheduled run
	Now     time.Time     // now
	Every   time.Duration // the schedule's interval; 0 when its cron is not a plain interval
	Repo    string        // OWNER/REPO, for the command that enables the workflow again
}

// RenderScheduleStopped is the warning a stopped schedule puts in every reply of a command that
// reads the state, and atop the "POC clusters" issue.
func RenderScheduleStopped(v ScheduleStoppedView) string {
	every := "on its schedule"
	if v.Every > 0 {
		every = "every " + FormatDuration(v.Every)
	}
	return fmt.Sprintf("> [!WARNING]\n> The reaper's schedule has not run since %s (%s ago; it should run %s): expired clusters are torn down only when someone comments. "+
		"GitHub disables the scheduled workflows of a public repository after 60 days without activity. Re-enable it: Actions → poc → Enable workflow, or `gh workflow enable poc.yml --repo %s`.\n",
		fmtTime(v.LastRun), FormatDuration(v.Now.Sub(v.LastRun)), every, v.Repo)
}

// WithNotice ends a reply with notice (a block of its own); an empty notice leaves the reply as is.
// Every reply passes here on its way to GitHub: the whole stays within MaxBodyBytes (the reply
// is cut by fit to leave the notice its room).
func WithNotice(reply, notice string) string {
	if notice == "" {
		return fit(reply)
	}
	notice = "\n\n" + strings.TrimSpace(clip(notice, 4*maxCellBytes)) + "\n"
	return fitTo(strings.TrimRight(reply, "\n"), MaxBodyBytes-len(notice)) + notice
}

// RenderFailure is the reply to a command the bot could not run at all (its configuration
// unreadable, its backend unreachable): what failed, redacted and cut to its head and end, and
// the run's log.
func RenderFailure(err, runURL string) string {
	body := "😕 **Failed:** the bot could not run this command.\n\n" + fence(shown(err, maxErrorBytes))
	if runURL != "" {
		body += "\n[Run log](" + runURL + ")\n"
	}
	return fit(body)
}
