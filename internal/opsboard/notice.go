package opsboard

import (
	"context"
	"fmt"
	"strings"
)

const (
	noticeStart = "<!-- pocbot:notice -->"
	noticeEnd   = "<!-- pocbot:notice-end -->"
)

// WithNotice returns body with notice as its first block ("" removes the block); the rest of the
// body is kept byte for byte. The scheduled run's Update rewrites the whole body, so a notice
// lasts until the schedule runs again.
func WithNotice(body, notice string) string {
	if i := strings.Index(body, noticeStart); i >= 0 {
		if j := strings.Index(body[i:], noticeEnd); j >= 0 {
			body = body[:i] + strings.TrimLeft(body[i+j+len(noticeEnd):], "\n")
		}
	}
	if notice == "" {
		return body
	}
	return noticeStart + "\n" + strings.TrimSpace(notice) + "\n" + noticeEnd + "\n\n" + body
}

// SetNotice puts notice at the top of the board issue, when the issue exists (a repository whose
// schedule never ran has none) and does not already say it. It reports whether it wrote.
func SetNotice(ctx context.Context, gh Issues, mem Memory, notice string) (bool, error) {
	n, body, err := find(ctx, gh, mem, false)
	if err != nil || n == 0 {
		if err != nil {
			err = fmt.Errorf("operator board: %w", err)
		}
		return false, err
	}
	next := WithNotice(body, notice)
	if next == body {
		return false, nil
	}
	if err := gh.EditIssueBody(ctx, n, next); err != nil {
		return false, fmt.Errorf("operator board: %w", err)
	}
	return true, nil
}
