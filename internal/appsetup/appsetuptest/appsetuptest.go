// Package appsetuptest is the user's browser in package appsetup's manifest flow, for tests.
package appsetuptest

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
)

var (
	actionRE   = regexp.MustCompile(`action="([^"]+)"`)
	manifestRE = regexp.MustCompile(`name="manifest" value="([^"]+)"`)
)

// Browse does what the user's browser does with appsetup's local page: load it, submit its form to
// GitHub, follow GitHub's redirect back to the callback. tamper, when not nil, may change the form
// before it is posted and returns where to post it. It returns the status and body the browser
// ends on.
func Browse(pageURL string, tamper func(action string, form url.Values) string) (int, string, error) {
	resp, err := http.Get(pageURL)
	if err != nil {
		return 0, "", fmt.Errorf("load the page: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a, m := actionRE.FindSubmatch(body), manifestRE.FindSubmatch(body)
	if a == nil || m == nil {
		return 0, "", fmt.Errorf("the page has no form with a manifest:\n%s", body)
	}
	action := html.UnescapeString(string(a[1]))
	form := url.Values{"manifest": {html.UnescapeString(string(m[1]))}}
	if tamper != nil {
		action = tamper(action, form)
	}
	resp, err = http.PostForm(action, form)
	if err != nil {
		return 0, "", fmt.Errorf("post the form: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
